-- :MilkInstall finds the checkout in the README's layout (issue 31): the plugin linked into
-- pack/milk/start/milk.nvim, loaded through the link by a fresh Neovim.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  local pack = H.tmp .. '/site/pack/milk/start'
  vim.fn.mkdir(pack, 'p')
  local link = pack .. '/milk.nvim'
  H.check('the plugin is linked as the README says', vim.uv.fs_symlink(H.plugin, link) == true)
  local probe = [[lua local i = require('milk.install'); local root, why = i.checkout();]]
    .. [[ io.stdout:write(i.plugin_root .. '\n' .. tostring(root) .. '\n' .. tostring(why) .. '\n')]]
  local res = vim.system({
    vim.v.progpath, '--headless', '-u', 'NONE', '-i', 'NONE',
    '--cmd', 'set packpath=' .. H.tmp .. '/site', '-c', 'packloadall', '-c', probe, '-c', 'qa!',
  }, { text = true }):wait(30000)
  local lines = vim.split(res.stdout or '', '\n', { trimempty = true })
  H.check('loaded through the link', lines[1] ~= nil and vim.startswith(lines[1], link), { res.stdout, res.stderr })
  H.check('the checkout is the repository the link leads to', lines[2] == vim.fs.normalize(H.repo), { lines, H.repo })

  -- issue 31: a plugin copied on its own (no checkout beside it) installs what setup()'s
  -- install_source names, and without one says how to name it.
  local alone = H.tmp .. '/alone/milk.nvim'
  vim.fn.mkdir(vim.fs.dirname(alone), 'p')
  vim.fn.system({ 'cp', '-r', H.plugin, alone })
  local function probe_source(setup)
    local code = [[lua ]] .. setup .. [[ local src, why = require('milk.install').source();]]
      .. [[ io.stdout:write(tostring(src) .. '\n' .. tostring(why) .. '\n')]]
    local out = vim.system({
      vim.v.progpath, '--headless', '-u', 'NONE', '-i', 'NONE',
      '--cmd', 'set rtp^=' .. alone, '-c', code, '-c', 'qa!',
    }, { text = true }):wait(30000)
    return vim.split(out.stdout or '', '\n', { trimempty = true }), out.stderr
  end
  local none, err1 = probe_source('')
  H.check('no checkout and no install_source: nothing to install', none[1] == 'nil', { none, err1 })
  H.check('the reason names install_source and what it takes', none[2] ~= nil
    and none[2]:find('not inside a milk-lsp checkout', 1, true) ~= nil
    and none[2]:find('install_source', 1, true) ~= nil and none[2]:find('wheel', 1, true) ~= nil, none)
  local named, err2 = probe_source("require('milk').setup({ install_source = '" .. H.repo .. "' });")
  H.check('install_source is what :MilkInstall installs', named[1] == H.repo, { named, err2 })
  vim.opt.runtimepath:prepend(H.plugin)
  local ok = pcall(require('milk.config').set, { install_source = '--index-url=http://x' })
  H.check('an install_source that pip would read as an option is refused', not ok)
end)
