-- milk-lsp on Neovim's built-in LSP client, no plugin (Neovim 0.11+). Put this in init.lua.
-- One client per Neovim, rooted at the git repository (else the folder) Neovim started in,
-- attached to every file buffer with a filetype: your code, and milk's transcript documents
-- (they live outside the workspace, so root_dir is fixed here rather than searched from each
-- buffer's path).
-- Settings: ~/.config/milk/config.json, or `settings = { milk = { ... } }` below.
local milk_root = vim.fs.root(0, '.git') or vim.fn.getcwd()
vim.api.nvim_create_autocmd('FileType', {
  callback = function(ev)
    if vim.bo[ev.buf].buftype ~= '' then
      return
    end
    vim.lsp.start({ name = 'milk', cmd = { 'milk-lsp' }, root_dir = milk_root }, { bufnr = ev.buf })
  end,
})
