-- Shared test helpers for the headless Neovim tests of milk.nvim.
--
-- A test file does:
--   local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')
--   H.start_openai(); H.setup_milk()
--   H.check('name', cond, detail)
--   H.finish()            -- prints "N passed, N failed" and exits 0 or 1
--
-- Environment: MILK_VENV (default <repo>/.venv) holds milk-lsp and the test fakes'
-- Python. Everything the server writes goes under a throwaway directory.

local H = {}

local uv = vim.uv
H.here = vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p')))
H.plugin = vim.fs.dirname(H.here)
H.repo = vim.fs.normalize(H.plugin .. '/../..')
H.venv = os.getenv('MILK_VENV') or (H.repo .. '/.venv')
H.python = H.venv .. '/bin/python'
H.milk_lsp = os.getenv('MILK_LSP') or (H.venv .. '/bin/milk-lsp')
H.name = vim.fn.fnamemodify((_G.arg and _G.arg[0]) or 'test', ':t:r')

H.passed, H.failed = 0, 0
H.lines = {}
H.jobs = {}

H.t0 = vim.uv.hrtime()
local function log(s)
  if os.getenv('MILK_TEST_TIMES') == '1' then
    s = ('[%6.2f] '):format((vim.uv.hrtime() - H.t0) / 1e9) .. s
  end
  table.insert(H.lines, s)
  io.stdout:write(s .. '\n')
  io.stdout:flush()
end
H.log = log

function H.check(name, cond, detail)
  if cond then
    H.passed = H.passed + 1
    log('ok   ' .. name)
  else
    H.failed = H.failed + 1
    log('FAIL ' .. name .. (detail ~= nil and (': ' .. vim.inspect(detail)) or ''))
  end
  return cond
end

--- Wait until `cond()` is true (the event loop runs meanwhile).
function H.wait(ms, cond)
  return vim.wait(ms, cond, 20)
end

-- A throwaway home for everything: workspace, server data, config, logs, Claude's HOME.
H.tmp = vim.fn.tempname() .. '-milk-test'
vim.fn.mkdir(H.tmp, 'p')
for _, d in ipairs({ 'ws/.git', 'home', 'tmp', 'data', 'config', 'cache', 'state', 'log', 'storage' }) do
  vim.fn.mkdir(H.tmp .. '/' .. d, 'p')
end
H.ws = H.tmp .. '/ws'
H.storage = H.tmp .. '/storage'

--- The environment of the server process.
function H.server_env(extra)
  local env = {
    HOME = H.tmp .. '/home',
    TMPDIR = H.tmp .. '/tmp',
    XDG_DATA_HOME = H.tmp .. '/data',
    XDG_CONFIG_HOME = H.tmp .. '/config',
    XDG_CACHE_HOME = H.tmp .. '/cache',
    XDG_STATE_HOME = H.tmp .. '/state',
    MILK_LOG_DIR = H.tmp .. '/log',
  }
  return vim.tbl_extend('force', env, extra or {})
end

--- Start a fake (a `python -m tests.fakes.X --port 0` that prints `READY url`).
--- @return string url
function H.start_fake(module, args)
  local ready
  local buffer = ''
  local cmd = { H.python, '-m', module, '--port', '0' }
  vim.list_extend(cmd, args or {})
  local job = vim.system(cmd, {
    cwd = H.repo,
    env = H.server_env(),
    stdout = function(_, data)
      if data then
        buffer = buffer .. data
        local url = buffer:match('READY (%S+)')
        if url then
          ready = url
        end
      end
    end,
    stderr = function() end,
  })
  table.insert(H.jobs, job)
  H.wait(20000, function()
    return ready ~= nil
  end)
  assert(ready, module .. ' did not print READY')
  return ready
end

-- Fakes die with Neovim, however it exits.
vim.api.nvim_create_autocmd('VimLeavePre', {
  callback = function()
    for _, job in ipairs(H.jobs) do
      pcall(function()
        job:kill('sigterm')
      end)
    end
  end,
})

function H.start_openai()
  H.openai = H.start_fake('tests.fakes.openai_server')
  return H.openai
end

function H.start_anthropic()
  H.anthropic = H.start_fake('tests.fakes.anthropic_api')
  return H.anthropic
end

--- The origin (scheme://host:port) of a URL.
local function origin(url)
  return url:match('^(https?://[^/]+)')
end

local HTTP = [[
import json, sys, urllib.request
method, url = sys.argv[1], sys.argv[2]
data = sys.argv[3].encode() if len(sys.argv) > 3 else None
req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=20) as r:
    sys.stdout.write(r.read().decode())
]]

function H.http(method, url, body)
  local args = { H.python, '-c', HTTP, method, url }
  if body ~= nil then
    table.insert(args, vim.json.encode(body))
  end
  local res = vim.system(args, { text = true }):wait(30000)
  assert(res.code == 0, 'HTTP ' .. method .. ' ' .. url .. ' failed: ' .. tostring(res.stderr))
  if res.stdout and res.stdout ~= '' then
    local ok, decoded = pcall(vim.json.decode, res.stdout)
    return ok and decoded or res.stdout
  end
end

--- Replace the scripted responses of the OpenAI-compatible fake.
function H.script_openai(list)
  H.http('POST', origin(H.openai) .. '/_script', list)
end

--- Replace the scripted responses of the Messages-API stand-in.
function H.script_anthropic(list)
  H.http('POST', origin(H.anthropic) .. '/_script', list)
end

function H.openai_requests()
  return H.http('GET', origin(H.openai) .. '/_requests')
end

function H.clear_openai_requests()
  H.http('DELETE', origin(H.openai) .. '/_requests')
end

function H.anthropic_requests()
  return H.http('GET', origin(H.anthropic) .. '/_requests')
end

--- The `claude` CLI bundled in the claude-agent-sdk wheel of the venv.
function H.bundled_claude()
  local found = vim.fn.glob(H.venv .. '/lib/python*/site-packages/claude_agent_sdk/_bundled/claude', false, true)
  return found[1]
end

--- Load the plugin (as a plugin manager would) and call setup() against the fakes.
--- @param opts table|nil merged over the test defaults
function H.setup_milk(opts)
  vim.opt.runtimepath:prepend(H.plugin)
  vim.cmd('runtime! plugin/milk.lua')
  vim.fn.chdir(H.ws)
  local env_extra = {}
  local settings = { storageDir = H.storage }
  if H.openai then
    settings['local'] = { baseUrl = H.openai, model = 'fake-model' }
  end
  if H.anthropic then
    settings.claude = { path = H.bundled_claude() }
    env_extra = {
      ANTHROPIC_BASE_URL = H.anthropic,
      ANTHROPIC_API_KEY = 'sk-test',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = '1',
    }
  end
  local base = {
    cmd = { H.milk_lsp },
    cmd_env = H.server_env(env_extra),
    settings = settings,
    ui = { split = 'right' },
  }
  require('milk').setup(vim.tbl_deep_extend('force', base, opts or {}))
end

-- vim.notify calls, kept (headless Neovim would print them into the test output).
H.notes = {}
vim.notify = function(msg, level)
  table.insert(H.notes, { msg = msg, level = level })
end

-- print() (Neovim's workspace/applyEdit handler prints the edit's label), kept apart.
H.printed = {}
_G.print = function(...)
  local parts = {}
  for i = 1, select('#', ...) do
    parts[i] = tostring(select(i, ...))
  end
  table.insert(H.printed, table.concat(parts, ' '))
end

-- Events the plugin fires, counted for waiting.
H.events = { MilkTurnDone = {}, MilkSession = {}, MilkContext = {}, MilkStatusResult = {} }
for pattern, list in pairs(H.events) do
  vim.api.nvim_create_autocmd('User', {
    pattern = pattern,
    callback = function(ev)
      table.insert(list, ev.data or {})
    end,
  })
end

--- Wait for the n-th MilkTurnDone event; returns its data.
function H.wait_turn(n, ms)
  H.wait(ms or 60000, function()
    return #H.events.MilkTurnDone >= n
  end)
  return H.events.MilkTurnDone[n]
end

--- Lines of the chat buffer of a session (the current one by default).
function H.chat_lines(sid)
  sid = sid or require('milk').session()
  local S = sid and require('milk.chat').sessions[sid]
  if not S then
    return {}
  end
  return vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
end

function H.chat_text(sid)
  return table.concat(H.chat_lines(sid), '\n')
end

--- Index of the first line matching a Lua pattern (plain when `plain`), or nil.
function H.find_line(lines, pattern, plain, from)
  for i = from or 1, #lines do
    if lines[i]:find(pattern, 1, plain) then
      return i
    end
  end
end

--- Stub vim.ui.select: `answers` is a list of functions(items, opts) returning the item to
--- choose (or nil to cancel), used in order; each call is recorded in H.selects.
H.selects = {}
function H.stub_select(answers, async)
  local i = 0
  vim.ui.select = function(items, opts, on_choice)
    i = i + 1
    local pick = answers[i] or answers[#answers]
    local choice = pick and pick(items, opts) or nil
    table.insert(H.selects, { items = items, prompt = opts and opts.prompt, kind = opts and opts.kind, choice = choice })
    if async then
      vim.defer_fn(function()
        on_choice(choice)
      end, 30)
    else
      on_choice(choice)
    end
  end
end

--- Pick the item whose field `field` equals `value`.
function H.pick(field, value)
  return function(items)
    for _, it in ipairs(items) do
      if type(it) == 'table' and it[field] == value then
        return it
      elseif it == value then
        return it
      end
    end
  end
end

function H.milk_client()
  return vim.lsp.get_clients({ name = 'milk' })[1]
end

--- Stop the clients and fakes, print the summary line, exit 0 or 1.
function H.finish()
  if os.getenv('MILK_TEST_DEBUG') == '1' then
    for sid, S in pairs(require('milk.chat').sessions) do
      log('--- chat ' .. sid)
      for _, l in ipairs(vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)) do
        log('  | ' .. l)
      end
    end
  end
  for _, c in ipairs(vim.lsp.get_clients()) do
    pcall(function()
      c:stop()
    end)
  end
  H.wait(5000, function()
    return #vim.lsp.get_clients() == 0
  end)
  for _, c in ipairs(vim.lsp.get_clients()) do
    pcall(function()
      c:stop(true)
    end)
  end
  for _, job in ipairs(H.jobs) do
    pcall(function()
      job:kill('sigterm')
      job:wait(3000)
    end)
  end
  if os.getenv('MILK_TEST_KEEP') ~= '1' then
    vim.fn.delete(H.tmp, 'rf')
  end
  log(('%s: %d passed, %d failed'):format(H.name, H.passed, H.failed))
  os.exit(H.failed == 0 and 0 or 1)
end

--- Run `fn` and turn an error into a failed check (then finish).
function H.run(fn)
  local ok, err = xpcall(fn, debug.traceback)
  if not ok then
    H.check('no Lua error', false, err)
  end
  H.finish()
end

return H
