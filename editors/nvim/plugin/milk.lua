-- milk.nvim: chat with milk-lsp (a local model paired with Claude Code).
-- Commands are defined here so they work before (or without) require('milk').setup();
-- the modules load on first use.
if vim.g.loaded_milk then
  return
end
vim.g.loaded_milk = true

if vim.fn.has('nvim-0.10') ~= 1 then
  vim.api.nvim_echo({ { 'milk.nvim needs Neovim 0.10 or newer', 'WarningMsg' } }, true, {})
  return
end

require('milk').define_commands()
