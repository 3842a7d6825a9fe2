-- doc/milk.txt passes :helptags, :help milk works, every command and option is documented;
-- the README has a lazy.nvim spec and a minimal init.lua; methods.lua mirrors the server's method names (milk_lsp/wire/base.py).
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  local docdir = H.tmp .. '/doc'
  vim.fn.mkdir(docdir, 'p')
  vim.fn.writefile(vim.fn.readfile(H.plugin .. '/doc/milk.txt'), docdir .. '/milk.txt')
  local ok, err = pcall(vim.cmd, 'helptags ' .. vim.fn.fnameescape(docdir))
  H.check(':helptags doc/ without errors', ok, err)
  local tags = vim.fn.readfile(docdir .. '/tags')
  H.check('tags file written', #tags > 10, #tags)

  -- :help milk from the runtimepath (with the generated tags).
  vim.opt.runtimepath:prepend(H.tmp)
  vim.opt.runtimepath:prepend(H.plugin)
  vim.cmd('runtime! plugin/milk.lua')
  ok, err = pcall(vim.cmd, 'help milk')
  H.check(':help milk opens milk.txt', ok and vim.fn.expand('%:t') == 'milk.txt', err)
  pcall(vim.cmd, 'helpclose')

  local text = table.concat(vim.fn.readfile(H.plugin .. '/doc/milk.txt'), '\n')
  for _, cmd in ipairs({ 'Milk', 'MilkLocal', 'MilkEscalate', 'MilkCancel', 'MilkUndo', 'MilkNew', 'MilkSessions', 'MilkContext', 'MilkStatus', 'MilkSources', 'MilkInstall' }) do
    H.check(':' .. cmd .. ' defined and documented', vim.fn.exists(':' .. cmd) == 2 and text:find('*:' .. cmd .. '*', 1, true) ~= nil)
  end
  local defaults = require('milk.config').defaults
  for key in pairs(defaults) do
    H.check('option ' .. key .. ' documented', text:find(key .. ' =', 1, true) ~= nil)
  end
  for key in pairs(defaults.ui.keymaps) do
    H.check('keymap option ' .. key .. ' documented', text:find(key .. ' =', 1, true) ~= nil)
  end
  for _, key in ipairs({ 'local.baseUrl', 'local.model', 'local.apiKey', 'local.maxToolRounds', 'claude.path',
    'claude.allowedTools', 'claude.addDirs', 'claude.model', 'claude.skipPermissions', 'contextBudgetChars', 'route', 'storageDir' }) do
    H.check('setting ' .. key .. ' documented', text:find('`' .. key .. '`', 1, true) ~= nil)
  end
  H.check('help mentions the protocol', text:find('*milk-protocol*', 1, true) ~= nil)
  for _, tag in ipairs({ '*:Milk!*', '*milk-review*', '*milk-undo*', '*milk-sources*', '*milk-route*', '*milk.statusline()*' }) do
    H.check('help has ' .. tag, text:find(tag, 1, true) ~= nil)
  end
  H.check('help lists the review keys', text:find('`a`              allow once', 1, true) ~= nil
    and text:find('`A`              allow for the rest of the session', 1, true) ~= nil
    and text:find('`d` `<Esc>` `q`  deny', 1, true) ~= nil)
  H.check('help covers setup', text:find('*milk-setup*', 1, true) ~= nil)
  -- Lines of at most 78 display columns (the modeline's textwidth).
  local long = {}
  for i, l in ipairs(vim.fn.readfile(H.plugin .. '/doc/milk.txt')) do
    if vim.fn.strdisplaywidth(l) > 78 then
      table.insert(long, i)
    end
  end
  H.check('help lines fit in 78 columns', #long == 0, long)

  local readme = table.concat(vim.fn.readfile(H.plugin .. '/README.md'), '\n')
  for _, cmd in ipairs({ ':MilkLocal', ':Milk!', ':MilkUndo', ':MilkInstall' }) do
    H.check('README names ' .. cmd, readme:find(cmd, 1, true) ~= nil)
  end
  -- Installing as the main README says (issue 20 item 14: `pipx install milk-lsp` fails,
  -- the package is on no index): from the clone, in the README, :help and :checkhealth.
  local main = table.concat(vim.fn.readfile(H.repo .. '/README.md'), '\n')
  local health = table.concat(vim.fn.readfile(H.plugin .. '/lua/milk/health.lua'), '\n')
  local by_hand = 'python3 -m venv ~/.venvs/milk && ~/.venvs/milk/bin/pip install /path/to/milk-lsp'
  H.check('the main README installs from a clone', main:find(by_hand, 1, true) ~= nil and main:find('pipx install /path/to/milk-lsp', 1, true) ~= nil)
  for what, body in pairs({ README = readme, help = text, health = health }) do
    H.check(what .. ' never says to install milk-lsp from an index', body:find('pipx install milk-lsp', 1, true) == nil
      and body:find('pip install milk-lsp', 1, true) == nil)
  end
  H.check('README and help install as the main README does', readme:find(by_hand, 1, true) ~= nil
    and text:find('python3 -m venv ~/.venvs/milk\n    ~/.venvs/milk/bin/pip install /path/to/milk-lsp', 1, true) ~= nil
    and readme:find('pipx install /path/to/milk-lsp', 1, true) ~= nil and text:find('pipx install /path/to/milk-lsp', 1, true) ~= nil)
  H.check('help: requirements name :MilkInstall', text:match('%*milk%-requirements%*(.-)=====') ~= nil
    and text:match('%*milk%-requirements%*(.-)====='):find('|:MilkInstall|', 1, true) ~= nil)
  H.check('README has a lazy.nvim spec', readme:find('lazy.nvim', 1, true) ~= nil and readme:find('opts = {', 1, true) ~= nil)
  H.check('README has a minimal init.lua', readme:find('init.lua', 1, true) ~= nil and readme:find("require('milk').setup", 1, true) ~= nil)

  -- The minimal init.lua of the README runs as it is (with the plugin path swapped in).
  local init = readme:match('<!%-%- minimal%-init %-%->%s*```lua\n(.-)```')
  H.check('README minimal init.lua found', init ~= nil)
  if init then
    init = init:gsub('~/%.local/share/nvim/site/pack/milk/start/milk%.nvim', H.plugin)
    local path = H.tmp .. '/init.lua'
    vim.fn.writefile(vim.split(init, '\n'), path)
    local nvim = vim.v.progpath
    local res = vim.system({ nvim, '--headless', '-i', 'NONE', '-u', path, '+lua io.stdout:write(vim.fn.exists(":Milk") .. " " .. type(require("milk").status()))', '+qa!' },
      { text = true, env = { XDG_CONFIG_HOME = H.tmp .. '/config', XDG_DATA_HOME = H.tmp .. '/data', XDG_STATE_HOME = H.tmp .. '/state' } }):wait(30000)
    H.check('README init.lua loads the plugin', res.code == 0 and vim.trim(res.stdout or '') == '2 string', res)
  end

  -- methods.lua spells every method of the server's contract, milk_lsp/wire/base.py (a text
  -- scan, like the server's test); the file must be there (a move would otherwise skip this)
  local wire = H.repo .. '/milk_lsp/wire/base.py'
  H.check('the server names its methods in milk_lsp/wire/base.py', vim.fn.filereadable(wire) == 1, wire)
  if vim.fn.filereadable(wire) == 1 then
    local lua = table.concat(vim.fn.readfile(H.plugin .. '/lua/milk/methods.lua'), '\n')
    local missing, found = {}, 0
    for _, line in ipairs(vim.fn.readfile(wire)) do
      local name, value = line:match('^([A-Z_]+) = "(milk/[^"]+)"')
      if name then
        found = found + 1
        if not lua:find("M." .. name .. " = '" .. value .. "'", 1, true) then
          table.insert(missing, name .. ' = ' .. value)
        end
      end
    end
    H.check('methods.lua mirrors the server\'s method names', found > 10 and #missing == 0, { found = found, missing = missing })
  end
end)
