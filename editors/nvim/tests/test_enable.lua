-- Neovim 0.11's route: lsp/milk.lua + vim.lsp.enable('milk') with no setup() call; the
-- client advertises the permission prompt, the server its protocol version; settings
-- reach the server and changes are pushed with didChangeConfiguration.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  H.start_openai()
  vim.opt.runtimepath:prepend(H.plugin)
  vim.cmd('runtime! plugin/milk.lua')
  H.check(':Milk exists without setup()', vim.fn.exists(':Milk') == 2 and vim.fn.exists(':MilkSessions') == 2)
  vim.fn.chdir(H.ws)

  local settings = { ['local'] = { baseUrl = H.openai, model = 'fake-model' }, storageDir = H.storage }
  vim.lsp.config('milk', { cmd = { H.milk_lsp }, cmd_env = H.server_env(), settings = { milk = settings } })
  vim.lsp.enable('milk')
  local file = H.ws .. '/main.py'
  vim.fn.writefile({ 'print("hi")' }, file)
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local started = H.wait(20000, function()
    local c = H.milk_client()
    return c and c.initialized
  end)
  H.check('vim.lsp.enable started milk on a file', started)
  local c = H.milk_client()
  if not c then
    return
  end
  H.check('root is the workspace (root marker .git)', vim.fs.normalize(c.root_dir or '') == vim.fs.normalize(H.ws), c.root_dir)
  H.check('client advertises experimental.milk.requestPermission',
    c.capabilities.experimental and c.capabilities.experimental.milk and c.capabilities.experimental.milk.requestPermission == true)
  H.check('client advertises window.workDoneProgress', c.capabilities.window.workDoneProgress == true)
  local sc = c.server_capabilities or {}
  H.check('server answers experimental.milk.protocolVersion = 1', sc.experimental and sc.experimental.milk
    and sc.experimental.milk.protocolVersion == require('milk.methods').PROTOCOL_VERSION, sc.experimental)
  H.check('milk handlers come from lsp/milk.lua', type(c.config.handlers[require('milk.methods').UPDATE]) == 'function')

  local methods = require('milk.methods')
  local st = c:request_sync(methods.STATUS, vim.empty_dict(), 20000)
  st = st and st.result or {}
  H.check('settings reached the server', st['local'] and st['local'].baseUrl == H.openai and st['local'].model == 'fake-model', st)
  H.check('storageDir reached the server', type(st.storage) == 'string' and st.storage:find(H.storage, 1, true) == 1, st.storage)

  H.script_openai({ { text = 'Answer through the enabled client.' } })
  vim.cmd('Milk hello')
  local done = H.wait_turn(1)
  H.check(':Milk uses the running client', done and done.result and done.result.stopReason == 'end_turn'
    and #vim.lsp.get_clients({ name = 'milk' }) == 1, done)
  H.check('answer in the chat', H.find_line(H.chat_lines(), 'Answer through the enabled client.', true) ~= nil, H.chat_lines())

  -- setup() later: new settings go out with workspace/didChangeConfiguration.
  require('milk').setup({
    cmd = { H.milk_lsp },
    cmd_env = H.server_env(),
    settings = { ['local'] = { baseUrl = H.openai, model = 'another-model' }, storageDir = H.storage },
  })
  local changed = H.wait(10000, function()
    local r = c:request_sync(methods.STATUS, vim.empty_dict(), 5000)
    return r and r.result and r.result['local'].model == 'another-model'
  end)
  H.check('didChangeConfiguration applied the new model', changed)
  H.check('statusline idle', require('milk').status() == 'milk: idle', require('milk').status())

  -- Outside any marked folder the workspace is the cwd (never "no workspace").
  local loose = H.tmp .. '/loose'
  vim.fn.mkdir(loose, 'p')
  vim.fn.writefile({ 'x' }, loose .. '/note.txt')
  vim.fn.chdir(loose)
  vim.cmd('edit ' .. vim.fn.fnameescape(loose .. '/note.txt'))
  local root
  vim.lsp.config.milk.root_dir(vim.api.nvim_get_current_buf(), function(dir)
    root = dir
  end)
  H.check('root_dir without a marker is the cwd', root and vim.fs.normalize(root) == vim.fs.normalize(vim.fn.getcwd()), root)
end)
