-- The engram-ls configuration for `vim.lsp.config` / `vim.lsp.enable` (Neovim 0.11+).
-- Override any field with vim.lsp.config('engram_ls', { … }).
return require('engram.lsp').client_config()
