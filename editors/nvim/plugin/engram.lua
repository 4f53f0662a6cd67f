-- Engram: the :Engram command and, unless `autostart` is off, engram-ls for Markdown notes in
-- vaults. Everything else is loaded on first use (lua/engram/).
if vim.g.loaded_engram or vim.fn.has('nvim-0.10') == 0 then
  return
end
vim.g.loaded_engram = true

-- Obsidian bases: YAML, served by engram-ls (diagnostics, completion, `:Engram base`).
vim.filetype.add({ extension = { base = 'yaml.base' } })

vim.api.nvim_create_user_command('Engram', function(opts)
  require('engram.commands').run(opts)
end, {
  nargs = '+',
  bang = true,
  desc = 'Engram: search {query} | related | tasks [filters] | toggle | base [view] | reindex | status',
  complete = function(arglead, cmdline)
    return require('engram.commands').complete(arglead, cmdline)
  end,
})

if require('engram.config').get().autostart then
  require('engram.lsp').autostart()
end
