-- The milk-lsp client configuration for `vim.lsp.enable('milk')` (Neovim 0.11+).
-- Built from require('milk').setup() options (the defaults without it); override with
-- `vim.lsp.config('milk', { ... })`.
return require('milk.client').client_config()
