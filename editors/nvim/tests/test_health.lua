-- :checkhealth milk reports OK with the server present and an error without it.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local function checkhealth()
  vim.cmd('silent checkhealth milk')
  local buf = vim.api.nvim_get_current_buf()
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local text = table.concat(lines, '\n')
  if #vim.api.nvim_list_tabpages() > 1 then
    vim.cmd('tabclose')
  end
  pcall(vim.api.nvim_buf_delete, buf, { force = true })
  return text, lines
end

local function count(text, word)
  local n = 0
  for _ in text:gmatch(word) do
    n = n + 1
  end
  return n
end

H.run(function()
  H.start_openai()
  -- An API key is a login to Claude Code (`claude auth status`); no request is made with it.
  local logged_in = H.server_env({ ANTHROPIC_API_KEY = 'sk-test' })
  local saved_key = vim.env.ANTHROPIC_API_KEY
  vim.env.ANTHROPIC_API_KEY = nil -- the developer's own key never counts here
  H.setup_milk({ settings = { claude = { path = H.bundled_claude() } }, cmd_env = logged_in })

  -- 1. Server present (no client running yet: the check starts one just for itself).
  local text = checkhealth()
  H.check('no ERROR with the server present', count(text, 'ERROR') == 0, text)
  H.check('OK Neovim version', text:find('OK Neovim 0%.1[01]') ~= nil, text)
  H.check('OK server found', text:find('OK server `' .. vim.pesc(H.milk_lsp) .. '` found') ~= nil, text)
  H.check('OK --version', text:find('%-%-version`: milk%-lsp %d') ~= nil, text)
  H.check('OK milk/status with protocol version 1', text:find('OK milk/status answered: milk%-lsp [%d.]+, protocol version 1') ~= nil, text)
  H.check('OK local model reachable', text:find('OK reachable: ' .. vim.pesc(H.openai), 1) ~= nil, text)
  H.check('OK Claude found', text:find('OK found: ' .. vim.pesc(H.bundled_claude())) ~= nil, text)
  H.check('OK Claude logged in (its key)', text:find(', logged in via API key', 1, true) ~= nil, text)
  H.check('OK storage', text:find('OK sessions are stored in ' .. vim.pesc(H.storage)) ~= nil, text)
  H.check('the check left no client running', #vim.lsp.get_clients({ name = 'milk' }) == 0)
  H.check('routing numbers: none yet', text:find('milk: routing numbers', 1, true) ~= nil
    and text:find('No turns in this workspace yet.', 1, true) ~= nil
    and text:find('spent on Claude today (' .. os.date('%Y-%m-%d') .. '); no daily budget set.', 1, true) ~= nil, text)

  -- 2. With a running client, its status is used.
  H.script_openai({ { text = 'hi' } })
  vim.cmd('Milk hi')
  H.wait_turn(1)
  text = checkhealth()
  H.check('running client: no ERROR', count(text, 'ERROR') == 0, text)
  H.check('running client: reported', text:find('a milk client is running', 1, true) ~= nil, text)
  H.check('running client: protocol version 1', text:find('protocol version 1', 1, true) ~= nil, text)
  H.check('running client: the turn is in the routing numbers', text:find('1 of 1 turn answered locally', 1, true) ~= nil, text)
  for _, c in ipairs(vim.lsp.get_clients({ name = 'milk' })) do
    c:stop()
  end
  H.wait(5000, function()
    return #vim.lsp.get_clients({ name = 'milk' }) == 0
  end)

  -- 3. A local model that is not there and a missing claude: warnings, not errors.
  H.setup_milk({ settings = { ['local'] = { baseUrl = 'http://127.0.0.1:9/v1' }, claude = { path = H.tmp .. '/no-claude', budgetUsd = 0 } } })
  text = checkhealth()
  H.check('a reached Claude budget is a WARNING with the setting to raise', text:find("WARNING Claude's daily budget for this folder is reached", 1, true) ~= nil
    and text:find('budgetUsd = …', 1, true) ~= nil and text:find('the daily budget of $0.0000 is reached', 1, true) ~= nil, text)
  H.check('unreachable local model is a WARNING', text:find('WARNING not reachable: http://127.0.0.1:9/v1', 1, true) ~= nil, text)
  H.check('missing claude is a WARNING', text:find('WARNING not found: ', 1, true) ~= nil, text)

  -- 3a. Claude Code found but logged out (issue 31: it said "OK found"): a WARNING with the fix.
  H.setup_milk({ settings = { claude = { path = H.bundled_claude() } }, cmd_env = H.server_env() })
  text = checkhealth()
  vim.env.ANTHROPIC_API_KEY = saved_key
  H.check('logged-out Claude is a WARNING naming the fix', text:find('but not logged in', 1, true) ~= nil
    and text:find('auth login', 1, true) ~= nil and text:find('OK found: ', 1, true) == nil, text)

  -- 3b. The embedded engine (milk runs llama.cpp itself) is named with its state.
  H.setup_milk({ settings = { ['local'] = { provider = 'embedded', modelPath = H.tmp .. '/no-model.gguf' } } })
  text = checkhealth()
  H.check('embedded engine named with its state', text:find('embedded · no-model (stopped)', 1, true) ~= nil, text)

  -- 4. Server missing: an ERROR.
  H.setup_milk({ cmd = { H.tmp .. '/no-such-milk-lsp' } })
  text = checkhealth()
  H.check('ERROR when the server is missing', text:find('ERROR server `' .. vim.pesc(H.tmp .. '/no-such-milk-lsp') .. '` not found') ~= nil, text)
  H.check('advice: :MilkInstall, or from the checkout by hand (no package index has it)', text:find('Run :MilkInstall', 1, true) ~= nil
    and text:find('pip install ' .. H.repo, 1, true) ~= nil and text:find('pipx install ' .. H.repo, 1, true) ~= nil
    and text:find('pipx install milk-lsp', 1, true) == nil, text)

  -- And the commands say so instead of failing silently.
  H.notes = {}
  vim.cmd('Milk hello')
  H.wait(5000, function()
    return #H.notes > 0
  end)
  H.check(':Milk without a server reports an error', H.notes[1] and H.notes[1].level == vim.log.levels.ERROR
    and H.notes[1].msg:find('not found', 1, true) ~= nil, H.notes)
end)
