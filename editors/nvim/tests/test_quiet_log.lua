-- Issue 20 item 12: a user's two sessions, each ended with `:qa!` (after a turn, and in the
-- middle of one), leave nothing in Neovim's lsp.log but what the user should see: no
-- "client is gone", no BrokenPipe tracebacks, no routine message logged as an error (Neovim
-- logs every line the server writes to stderr as ERROR). The one setting problem the
-- children cause on purpose (an unknown key) must be there, at WARN: the log is really read.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  local state = H.tmp .. '/child-state'
  vim.fn.mkdir(state, 'p')
  local nvim = vim.v.progpath
  local child = H.here .. '/children/quit_session.lua'
  local server_logs = {}
  for _, at in ipairs({ 'done', 'mid' }) do
    local logs = H.tmp .. '/server-log-' .. at
    local env = vim.tbl_extend('force', vim.fn.environ(), { XDG_STATE_HOME = state, MILK_QUIT_AT = at, MILK_CHILD_LOG = logs })
    local res = vim.system({ nvim, '--headless', '-u', 'NONE', '-i', 'NONE', '-l', child }, { env = env, text = true, cwd = H.plugin }):wait(90000)
    H.check('child quit (' .. at .. ')', res.code == 0, { code = res.code, out = res.stdout, err = res.stderr })
    table.insert(server_logs, logs .. '/milk-lsp.log')
  end
  vim.wait(1500, function()
    return false
  end) -- the servers' last writes after their client is gone

  local path = state .. '/nvim/lsp.log'
  local lines = vim.fn.filereadable(path) == 1 and vim.fn.readfile(path) or {}
  local problems, control = {}, 0
  for _, line in ipairs(lines) do
    if line:find("unknown setting 'bogusKey' ignored", 1, true) then
      control = control + 1
      H.check('the unknown setting is a WARN, not an ERROR', line:find('^%[WARN%]') ~= nil, line)
    elseif line:find('^%[ERROR%]') or line:find('^%[WARN%]') then
      table.insert(problems, line)
    end
  end
  H.check('the log holds the deliberate warning of each session', control == 2, lines)
  H.check('nothing else at WARN or ERROR in lsp.log', #problems == 0, problems)
  local text = table.concat(lines, '\n')
  H.check('no "client is gone" and no traceback', not text:find('client is gone', 1, true) and not text:find('Traceback', 1, true) and not text:find('BrokenPipe', 1, true), text)

  for _, log in ipairs(server_logs) do
    local ok, content = pcall(vim.fn.readfile, log)
    local all = ok and table.concat(content, '\n') or ''
    H.check('server log ' .. vim.fs.basename(vim.fs.dirname(log)) .. ' has no error or traceback', ok and not all:find(' ERROR ', 1, true) and not all:find('Traceback', 1, true), all)
  end
end)
