--- `:MilkInstall`: milk-lsp in a virtual environment of its own under `stdpath('data')`,
--- built from the repository this plugin is part of (it is `editors/nvim` of a milk-lsp
--- checkout), or, for a plugin installed on its own, from `install_source` (a wheel, an
--- sdist, a checkout or a pip URL), so nobody sets up Python by hand. Every step
--- is an argv run by `vim.system` (never a shell string), asynchronously, with its progress
--- in the command line and its whole output in a log file; `setup()` then finds the server
--- without a `cmd` (see `M.server`).
local M = {}

local is_windows = vim.fn.has('win32') == 1

--- Pythons tried in order when `:MilkInstall` is given none (the first 3.11+ one is used).
M.PYTHONS = { 'python3', 'python3.13', 'python3.12', 'python3.11', 'python' }
M.MIN_PYTHON = { 3, 11 }

--- The plugin's folder (this file is lua/milk/install.lua in it).
M.plugin_root = vim.fs.normalize(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h'))

--- Where `:MilkInstall` puts its files (read at call time, so `$XDG_DATA_HOME` counts).
function M.dir()
  return vim.fs.joinpath(vim.fn.stdpath('data'), 'milk')
end

function M.venv()
  return vim.fs.joinpath(M.dir(), 'venv')
end

local function venv_bin(name)
  return vim.fs.joinpath(M.venv(), is_windows and 'Scripts' or 'bin', name .. (is_windows and '.exe' or ''))
end

function M.log_path()
  return vim.fs.joinpath(M.dir(), 'install.log')
end

--- The server `:MilkInstall` installed, when it is there.
--- @return string?
function M.server()
  local path = venv_bin('milk-lsp')
  return vim.fn.executable(path) == 1 and path or nil
end

--- The milk-lsp checkout the plugin lives in (two levels up from where its files really
--- are: the README's layout links it into `pack/milk/start/milk.nvim`), or nil and why not.
--- @return string?, string?
function M.checkout()
  local real = vim.uv.fs_realpath(M.plugin_root) or M.plugin_root
  local root = vim.fs.normalize(real .. '/../..')
  local pyproject = vim.fs.joinpath(root, 'pyproject.toml')
  local f = io.open(pyproject, 'r')
  local text = f and f:read('*a') or ''
  if f then
    f:close()
  end
  if not text:find('name%s*=%s*"milk%-lsp"') then
    return nil, ('the plugin is not inside a milk-lsp checkout (no milk-lsp pyproject.toml at %s)'):format(pyproject)
  end
  return root
end

--- What `:MilkInstall` installs: the checkout the plugin is in, else `install_source` of
--- setup() (a wheel, an sdist, a checkout folder or a pip URL), or nil and what to do.
--- @return string?, string?
function M.source()
  local root, why = M.checkout()
  if root then
    return root
  end
  local named = require('milk.config').options.install_source
  if named and named ~= '' then
    return named
  end
  return nil, why .. "; name what to install instead: require('milk').setup({ install_source ="
    .. " '/path/to/milk_lsp-0.1.0-py3-none-any.whl' }) (a wheel, an sdist, a milk-lsp checkout"
    .. " or a pip URL), or pipx install one yourself"
end

local state = { running = false }

--- Whether an install is under way.
function M.running()
  return state.running
end

local function echo(msg)
  -- One line that fits the command line: a longer one would stop for "Press ENTER".
  local room = math.max(20, vim.v.echospace - 1)
  if vim.fn.strdisplaywidth(msg) > room then
    msg = vim.fn.strcharpart(msg, 0, room - 1) .. '…'
  end
  vim.api.nvim_echo({ { msg } }, false, {})
end

local function notify(msg, level)
  vim.notify(msg, level or vim.log.levels.INFO, { title = 'milk' })
end

--- The install's log file, appended to by each step.
local function open_log()
  vim.fn.mkdir(M.dir(), 'p')
  local f = io.open(M.log_path(), 'w')
  return f
end

--- Run `argv` asynchronously; each output line goes to the log and (stdout) to `on_line`;
--- `done(code, last_error_line)` on the main loop.
local function run(log, argv, on_line, done)
  if log then
    log:write('$ ' .. table.concat(argv, ' ') .. '\n')
  end
  local last_err
  local function lines(is_err)
    local pending = ''
    return function(_, data)
      if not data then
        return
      end
      pending = pending .. data
      while true do
        local nl = pending:find('\n', 1, true)
        if not nl then
          break
        end
        local line = pending:sub(1, nl - 1):gsub('\r$', '')
        pending = pending:sub(nl + 1)
        vim.schedule(function()
          if log then
            log:write(line .. '\n')
          end
          if line:match('%S') then
            if is_err then
              last_err = line
            elseif on_line then
              on_line(line)
            end
          end
        end)
      end
    end
  end
  local ok, err = pcall(vim.system, argv, {
    stdout = lines(false),
    stderr = lines(true),
    env = { PIP_NO_INPUT = '1', PYTHONUNBUFFERED = '1' },
  }, function(res)
    vim.schedule(function()
      done(res.code, last_err)
    end)
  end)
  if not ok then
    vim.schedule(function()
      done(-1, tostring(err))
    end)
  end
end

--- The first Python of `candidates` that is 3.11 or newer: `cb(python, version)`, or
--- `cb(nil, nil, what was found)`.
local function find_python(candidates, cb)
  local found = {}
  local function try(i)
    local name = candidates[i]
    if not name then
      if #found == 0 then
        return cb(nil, nil, 'none of ' .. table.concat(candidates, ', ') .. ' is on PATH')
      end
      return cb(nil, nil, table.concat(found, ', '))
    end
    local exe = vim.fn.exepath(name)
    if exe == '' then
      return try(i + 1)
    end
    local said
    run(nil, { exe, '-c', 'import sys; print("%d.%d" % sys.version_info[:2])' }, function(line)
      said = said or line
    end, function(code)
      local major, minor = tostring(said or ''):match('^(%d+)%.(%d+)$')
      major, minor = tonumber(major), tonumber(minor)
      if code == 0 and major and (major > M.MIN_PYTHON[1] or (major == M.MIN_PYTHON[1] and minor >= M.MIN_PYTHON[2])) then
        return cb(exe, said)
      end
      table.insert(found, ('%s is %s'):format(exe, major and ('Python ' .. said) or 'not a working Python'))
      try(i + 1)
    end)
  end
  try(1)
end

--- Install (or reinstall) milk-lsp. `opts.python`: the Python to build the environment
--- with (default: the first 3.11+ of `M.PYTHONS`). Fires `User MilkInstall` with
--- `{ ok, server?, version?, error? }` when it ends.
function M.install(opts)
  opts = opts or {}
  local function finish(ok, data)
    state.running = false
    data.ok = ok
    vim.api.nvim_exec_autocmds('User', { pattern = 'MilkInstall', modeline = false, data = data })
  end
  if state.running then
    notify('milk: an install is already running; wait for it to end', vim.log.levels.WARN)
    return
  end
  local root, why = M.source()
  if not root then
    notify('milk: :MilkInstall cannot run: ' .. why, vim.log.levels.ERROR)
    return finish(false, { error = why })
  end
  state.running = true
  local log = open_log()
  local venv = M.venv()
  local function failed(step, code, detail)
    if log then
      log:close()
    end
    local msg = ('milk: :MilkInstall failed %s (exit %s)%s. The whole output: %s'):format(
      step, tostring(code), detail and (': ' .. detail) or '', M.log_path())
    notify(msg, vim.log.levels.ERROR)
    finish(false, { error = msg })
  end

  echo('milk: install 1/4: looking for Python 3.11 or newer…')
  local candidates = opts.python and opts.python ~= '' and { opts.python } or M.PYTHONS
  find_python(candidates, function(python, version, found)
    if not python then
      if log then
        log:close()
      end
      local msg = ('milk: :MilkInstall needs Python %d.%d or newer (%s). Install one, or name it: :MilkInstall /path/to/python3.12')
        :format(M.MIN_PYTHON[1], M.MIN_PYTHON[2], found)
      notify(msg, vim.log.levels.ERROR)
      return finish(false, { error = msg })
    end
    local vpy = venv_bin('python')
    local function pip_install()
      echo(('milk: install 3/4: pip install %s (dependencies from the package index)…'):format(root))
      run(log, { vpy, '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', root },
        function(line)
          echo('milk: install 3/4: ' .. vim.trim(line))
        end, function(code, err)
          if code ~= 0 then
            return failed('installing milk-lsp', code, err)
          end
          local server = M.server()
          if not server then
            return failed('installing milk-lsp', code, 'pip ended but ' .. venv_bin('milk-lsp') .. ' is not there')
          end
          echo('milk: install 4/4: ' .. server .. ' --version')
          local version
          run(log, { server, '--version' }, function(line)
            version = version or vim.trim(line)
          end, function(vcode, verr)
            if vcode ~= 0 then
              return failed('checking the installed server', vcode, verr)
            end
            if log then
              log:close()
            end
            if vim.lsp.config then
              pcall(vim.lsp.config, 'milk', {}) -- lsp/milk.lua resolves its cmd again
            end
            notify(('milk: installed %s in %s; :Milk starts it'):format(version or 'milk-lsp', venv))
            finish(true, { server = server, version = version })
          end)
        end)
    end
    if vim.fn.executable(vpy) == 1 then
      echo('milk: install 2/4: reusing the virtual environment ' .. venv)
      return pip_install()
    end
    echo(('milk: install 2/4: creating a virtual environment with %s (Python %s) in %s…'):format(python, version, venv))
    run(log, { python, '-m', 'venv', '--clear', venv }, nil, function(code, err)
      if code ~= 0 then
        return failed('creating the virtual environment ' .. venv, code, err)
      end
      pip_install()
    end)
  end)
end

return M
