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
end)
