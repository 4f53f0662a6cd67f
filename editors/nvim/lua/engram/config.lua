--- Options, read when they are needed: defaults < `vim.g.engram` < `require('engram').setup()`;
--- `vim.g.engram_cmd` is a shortcut for `cmd`.
local M = {}

--- @class engram.Options
--- @field cmd string[] The server command (default `{ 'engram-ls' }`).
--- @field root_markers string[] A vault is the nearest folder holding one of these.
--- @field autostart boolean Start the server for Markdown buffers inside a vault.
--- @field init_options table? `initializationOptions`: the keys of `.engram/config.yaml`.
--- @field settings table? Answer to `workspace/configuration` (section `engram`).
--- @field results 'quickfix'|'select' Where `:Engram search` puts its results.
--- @field open_quickfix boolean Open the quickfix window after a search with results.
--- @field limit integer Most results a search asks for (the server's cap is 1000).
--- @field search { mode: string } `mode`: the search mode when a query has no `mode:` term.
M.defaults = {
  cmd = { 'engram-ls' },
  root_markers = { '.engram' },
  autostart = true,
  init_options = nil,
  settings = nil,
  results = 'quickfix',
  open_quickfix = true,
  limit = 100,
  search = { mode = 'text' },
}

M.NAME = 'engram_ls'

--- @type table
local from_setup = {}

--- @param opts table?
function M.set(opts)
  from_setup = vim.tbl_deep_extend('force', from_setup, opts or {})
end

--- The options in effect now.
--- @return engram.Options
function M.get()
  local global = vim.g.engram
  if type(global) ~= 'table' then
    global = {}
  end
  local opts = vim.tbl_deep_extend('force', {}, M.defaults, global, from_setup)
  if from_setup.cmd == nil and global.cmd == nil and vim.g.engram_cmd ~= nil then
    opts.cmd = vim.g.engram_cmd
  end
  if type(opts.cmd) == 'string' then
    opts.cmd = { opts.cmd }
  end
  return opts
end

--- Check the options; returns a list of problems (empty when fine).
--- @param opts engram.Options
--- @return string[]
function M.problems(opts)
  local out = {}
  if type(opts.cmd) ~= 'table' or type(opts.cmd[1]) ~= 'string' then
    out[#out + 1] = '`cmd` must be a list of strings, e.g. { "engram-ls" }'
  end
  if type(opts.root_markers) ~= 'table' or #opts.root_markers == 0 then
    out[#out + 1] = '`root_markers` must be a non-empty list of file or folder names'
  end
  if opts.results ~= 'quickfix' and opts.results ~= 'select' then
    out[#out + 1] = '`results` must be "quickfix" or "select"'
  end
  if type(opts.limit) ~= 'number' or opts.limit < 1 then
    out[#out + 1] = '`limit` must be a positive number'
  end
  local query = require('engram.query')
  if type(opts.search) ~= 'table' or not query.is_mode(opts.search.mode) then
    out[#out + 1] = '`search.mode` must be one of ' .. table.concat(query.MODES, ', ')
  end
  return out
end

return M
