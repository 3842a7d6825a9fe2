--- `:checkhealth milk`: Neovim version, the server command and its `--version`, what the
--- server's `milk/status` says about the local model, Claude Code and storage, and the
--- routing numbers of `milk/stats` (what was answered locally, what went to Claude, its cost).
local M = {}

local methods = require('milk.methods')

local function start_section(name)
  vim.health.start(name)
end

--- Ask a running milk client for `method` (`milk/status`, `milk/stats`).
--- A health check asks for the Claude login too (`claude auth status`, a second or two).
local STATUS_PARAMS = { checkLogin = true }

local function ask_client(client, method, timeout, params)
  local res, err = require('milk.client').call(client, 'request_sync', method, params or vim.empty_dict(), timeout)
  if not res then
    return nil, err or 'no answer'
  end
  if res.err then
    return nil, require('milk.client').error_text(res.err)
  end
  return res.result
end

--- Start the server just for this check (initialize, milk/status, milk/stats, shutdown, exit).
local function status_from_new_server(cfg, timeout)
  local settings = cfg.settings and cfg.settings[methods.CONFIG_SECTION]
  local exited = false
  local dispatchers = {
    server_request = function(method, params)
      if method == 'workspace/configuration' then
        local out = {}
        for _, it in ipairs(params and params.items or {}) do
          table.insert(out, (it.section == methods.CONFIG_SECTION and settings) or vim.NIL)
        end
        return out
      end
      if method == 'window/workDoneProgress/create' then
        return vim.NIL
      end
      return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.MethodNotFound)
    end,
    notification = function() end,
    on_exit = function()
      exited = true
    end,
    on_error = function() end,
  }
  local root = vim.fn.getcwd()
  local ok, rpc = pcall(vim.lsp.rpc.start, cfg.cmd, dispatchers, { cwd = root, env = cfg.cmd_env })
  if not ok or not rpc then
    return nil, 'could not start the server: ' .. tostring(rpc)
  end
  local function call(method, params)
    local done, err, result = false, nil, nil
    rpc.request(method, params, function(e, r)
      done, err, result = true, e, r
    end)
    vim.wait(timeout, function()
      return done or exited
    end, 20)
    if not done then
      return nil, exited and 'the server exited' or ('no answer to ' .. method .. ' in ' .. timeout .. ' ms')
    end
    if err then
      return nil, require('milk.client').error_text(err)
    end
    return result
  end
  local uri = vim.uri_from_fname(root)
  local init, err = call('initialize', {
    processId = vim.uv.os_getpid(),
    clientInfo = { name = 'Neovim :checkhealth milk' },
    rootUri = uri,
    workspaceFolders = { { uri = uri, name = root } },
    capabilities = require('milk.client').capabilities(),
    initializationOptions = settings,
  })
  local status, stats, stats_err
  if init then
    rpc.notify('initialized', vim.empty_dict())
    status, err = call(methods.STATUS, STATUS_PARAMS)
    if status then
      stats, stats_err = call(methods.STATS, vim.empty_dict())
    end
    call('shutdown', vim.NIL)
    rpc.notify('exit', vim.NIL)
    vim.wait(2000, function()
      return exited
    end, 20)
  end
  if not exited then
    rpc.terminate()
  end
  return status, err, init, stats, stats_err
end

local function opt(v)
  return v ~= nil and v ~= vim.NIL and v ~= ''
end

function M.check()
  local config = require('milk.config')
  local client_mod = require('milk.client')

  start_section('milk: Neovim')
  local v = vim.version()
  local version = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 1 then
    vim.health.ok('Neovim ' .. version)
  else
    vim.health.error('Neovim ' .. version .. ' is too old', 'milk.nvim needs Neovim 0.10 or newer')
  end
  if vim.fn.has('nvim-0.11') ~= 1 then
    vim.health.info('vim.lsp.enable("milk") needs Neovim 0.11; use require("milk").setup() instead')
  end

  start_section('milk: server')
  local cfg = client_mod.resolved_config()
  local cmd = cfg.cmd
  if type(cmd) ~= 'table' or not cmd[1] then
    vim.health.warn('the server command is a function; it is not checked here')
    return
  end
  local install = require('milk.install')
  local exe = vim.fn.exepath(cmd[1])
  if exe == '' then
    local root = install.checkout() or '/path/to/milk-lsp'
    vim.health.error(('server `%s` not found'):format(cmd[1]), {
      ('Run :MilkInstall: it installs milk-lsp from this plugin\'s checkout (%s) into a virtual environment in %s, and setup() then finds it'):format(
        root, install.venv()),
      ('Or install it yourself from the checkout (the package is not on a package index): `python3 -m venv ~/.venvs/milk && ~/.venvs/milk/bin/pip install %s`, or `pipx install %s`'):format(root, root),
      "Then put its `milk-lsp` on PATH or point the plugin at it: require('milk').setup({ cmd = { '/path/to/milk-lsp' } })",
    })
    return
  end
  local installed = install.server()
  if installed and vim.fs.normalize(exe) == vim.fs.normalize(installed) then
    vim.health.ok(('server `%s` found (installed by :MilkInstall; run it again after updating the checkout)'):format(exe))
  else
    vim.health.ok(('server `%s` found: %s'):format(cmd[1], exe))
  end
  local argv = vim.deepcopy(cmd)
  table.insert(argv, '--version')
  local ok, res = pcall(function()
    return vim.system(argv, { text = true, env = cfg.cmd_env }):wait(config.options.health_timeout_ms)
  end)
  if ok and res and res.code == 0 then
    vim.health.ok('`' .. table.concat(argv, ' ') .. '`: ' .. vim.trim(res.stdout or ''))
  else
    vim.health.error(
      '`' .. table.concat(argv, ' ') .. '` failed: ' .. vim.trim(ok and res and ((res.stderr or '') .. ' exit ' .. tostring(res.code)) or tostring(res)),
      'Reinstall milk-lsp; it may be broken or an old version'
    )
    return
  end

  local running = client_mod.find()
  local status, err, init, stats, stats_err
  local timeout = config.options.health_timeout_ms
  if running then
    status, err = ask_client(running, methods.STATUS, timeout, STATUS_PARAMS)
    stats, stats_err = ask_client(running, methods.STATS, timeout)
    init = running.initialized and { capabilities = running.server_capabilities } or nil
    vim.health.info(('a milk client is running (id %d, root %s)'):format(running.id, tostring(client_mod.root_of(running))))
  else
    status, err, init, stats, stats_err = status_from_new_server(cfg, timeout)
  end
  if not status then
    vim.health.error(methods.STATUS .. ' failed: ' .. tostring(err), 'See :LspLog, or run the server by hand: milk-lsp --help')
    return
  end
  local proto = init and init.capabilities and init.capabilities.experimental
    and init.capabilities.experimental.milk and init.capabilities.experimental.milk.protocolVersion
  if proto == nil and running then
    local caps = running.server_capabilities or {}
    proto = caps.experimental and caps.experimental.milk and caps.experimental.milk.protocolVersion
  end
  if proto == methods.PROTOCOL_VERSION then
    vim.health.ok(('%s answered: milk-lsp %s, protocol version %d'):format(methods.STATUS, tostring(status.version), proto))
  else
    vim.health.warn(
      ('%s answered: milk-lsp %s, but protocol version %s (this plugin speaks %d)'):format(
        methods.STATUS,
        tostring(status.version), tostring(proto), methods.PROTOCOL_VERSION),
      'Update the plugin and the server together'
    )
  end

  start_section('milk: local model')
  local l = status['local'] or {}
  local where = tostring(l.baseUrl) .. (opt(l.model) and (' (model ' .. l.model .. ')') or '')
  if l.provider == 'embedded' then -- milk runs llama.cpp itself
    where = 'embedded · ' .. tostring(l.model or l.modelPath) .. ' (' .. tostring(l.loadState or 'stopped') .. ')'
  end
  if l.reachable then
    vim.health.ok('reachable: ' .. where)
  else
    vim.health.warn('not reachable: ' .. where .. (opt(l.error) and (': ' .. l.error) or ''), {
      'Start your local model server (Ollama, llama-server, LM Studio, vLLM)',
      "or set settings['local'].baseUrl in require('milk').setup()",
    })
  end

  start_section('milk: Claude Code')
  local c = status.claude or {}
  if c.found then
    local found = 'found: ' .. tostring(c.path) .. (opt(c.version) and (' (' .. c.version .. ')') or '')
    if c.loggedIn == false then
      vim.health.warn(found .. ', but not logged in: escalations to Claude would fail with "Not logged in"', {
        'Run `' .. tostring(c.path) .. ' auth login` (or start `claude` once and log in), or export ANTHROPIC_API_KEY before starting Neovim',
      })
    elseif c.loggedIn == true then
      vim.health.ok(found .. ', logged in' .. (opt(c.loginDetail) and (' ' .. c.loginDetail) or ''))
    else
      vim.health.ok(found)
      if opt(c.loginDetail) then
        vim.health.info('could not check the login: ' .. c.loginDetail)
      end
    end
  else
    vim.health.warn('not found: ' .. tostring(c.path) .. (opt(c.error) and (': ' .. c.error) or ''), {
      'Install Claude Code (the `claude` CLI) or set settings.claude.path',
    })
  end

  start_section('milk: storage')
  vim.health.ok('sessions are stored in ' .. tostring(status.storage))
  vim.health.info('statusline: ' .. vim.inspect(require('milk').status()))

  start_section('milk: routing numbers')
  if type(stats) ~= 'table' then
    vim.health.warn(methods.STATS .. ' failed: ' .. tostring(stats_err or 'no answer'), 'Update milk-lsp: older servers do not count turns')
    return
  end
  for _, line in ipairs(vim.split(tostring(stats.text or ''), '\n', { trimempty = true })) do
    vim.health.info(line)
  end
  local budget = type(stats.budget) == 'table' and stats.budget or {}
  local limit, spent = budget.limitUsd, budget.spentTodayUsd
  if type(limit) == 'number' and type(spent) == 'number' and spent >= limit then
    vim.health.warn("Claude's daily budget for this folder is reached: milk asks before each Claude turn",
      'Raise settings = { claude = { budgetUsd = … } } in require(\'milk\').setup(), or wait for tomorrow')
  end
end

return M
