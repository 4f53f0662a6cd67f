--- Engram for Neovim: search a vault of Markdown notes through engram-ls.
---
--- Nothing here needs `setup()`: the plugin works with its defaults, `vim.g.engram` or
--- `vim.lsp.config('engram_ls', …)`. `setup(opts)` only merges options.
local config = require('engram.config')
local lsp = require('engram.lsp')
local query = require('engram.query')

local M = {}

local levels = vim.log.levels

--- @param msg string
--- @param level integer?
local function notify(msg, level)
  vim.notify('Engram: ' .. msg, level or levels.INFO, { title = 'Engram' })
end

--- Merge options (see |engram-options|). Optional.
--- @param opts engram.Options?
function M.setup(opts)
  config.set(opts)
  for _, problem in ipairs(config.problems(config.get())) do
    notify('invalid option: ' .. problem, levels.ERROR)
  end
  if opts and opts.autostart == false and vim.fn.has('nvim-0.11') == 1 then
    vim.lsp.enable(config.NAME, false)
  elseif opts and opts.autostart == true then
    lsp.autostart()
  end
end

--- Start (or reuse) engram-ls for a buffer whose file is in a vault (for 0.10 autocommands).
--- @param bufnr integer?
--- @return integer? client_id
function M.start(bufnr)
  return lsp.start(bufnr)
end

--- @return vim.lsp.Client?
local function client_or_warn()
  local client = lsp.current()
  if not client then
    notify(
      'engram-ls is not running: open a note inside a vault (a folder with '
        .. table.concat(config.get().root_markers, ' or ')
        .. ')',
      levels.WARN
    )
  end
  return client
end

--- One result as a quickfix item.
--- @param hit table
--- @return table
local function qf_item(hit)
  local text = hit.title or hit.path
  if type(hit.created_at) == 'string' then
    text = text .. ' (' .. hit.created_at:sub(1, 10) .. ')'
  end
  if type(hit.snippet) == 'string' and hit.snippet ~= '' then
    text = text .. ': ' .. hit.snippet:gsub('%s+', ' ')
  end
  local lnum = type(hit.line) == 'number' and hit.line or 1
  return {
    filename = vim.uri_to_fname(hit.uri),
    lnum = math.max(lnum, 1),
    col = 1,
    text = text,
    user_data = { path = hit.path, topics = hit.topics },
  }
end

--- @param input string
--- @param result table
--- @param items table[]
local function to_quickfix(input, result, items)
  local title = ('Engram: %s (%d of %d)'):format(input, #items, result.total or #items)
  vim.fn.setqflist({}, ' ', {
    title = title,
    items = items,
    context = { engram = { query = input, total = result.total, index = result.index } },
  })
  if #items == 0 then
    notify('no notes match ' .. input)
  elseif config.get().open_quickfix then
    vim.cmd('botright copen')
  end
end

--- @param items table[]
local function to_select(items)
  if #items == 0 then
    notify('no notes match')
    return
  end
  vim.ui.select(items, {
    prompt = 'Engram notes',
    format_item = function(item)
      return item.user_data.path .. ': ' .. item.text
    end,
    kind = 'engram.note',
  }, function(item)
    if item then
      vim.cmd.edit(vim.fn.fnameescape(item.filename))
      vim.api.nvim_win_set_cursor(0, { item.lnum, 0 })
    end
  end)
end

--- Search the vault with the Engram query syntax (|engram-query|).
--- @param input string
--- @param opts { results?: 'quickfix'|'select' }?
function M.search(input, opts)
  opts = opts or {}
  local client = client_or_warn()
  if not client then
    return
  end
  local params = query.parse(input)
  if params.query == '' and not params.tags and not params.date_from and not params.date_to
    and not params.path
  then
    notify('give a query, e.g. :Engram search #topic after:2024-01-01 words', levels.WARN)
    return
  end
  params.limit = config.get().limit
  lsp.request(client, 'engram/search', params, function(err, result)
    if err then
      notify(lsp.error_message(err), levels.ERROR)
      return
    end
    local items = vim.tbl_map(qf_item, result.results or {})
    if (opts.results or config.get().results) == 'select' then
      to_select(items)
    else
      to_quickfix(input, result, items)
    end
  end)
end

--- One vault's `engram/status` entry as a line.
--- @param v table
--- @return string
local function status_line(v)
  local parts = {
    ('%s: %s'):format(v.root or '?', v.state or '?'),
    ('%s notes'):format(v.notes or '?'),
    ('%s problems'):format(v.problems or 0),
  }
  if v.topics then
    parts[#parts + 1] = ('%s topics'):format(v.topics)
  end
  if v.building then
    parts[#parts + 1] = 'building'
  end
  if v.updated_at and v.updated_at ~= vim.NIL then
    parts[#parts + 1] = 'updated ' .. v.updated_at
  end
  return table.concat(parts, ', ')
end

--- Show every vault's index state (|:Engram-status|).
function M.status()
  local clients = lsp.clients()
  if #clients == 0 then
    client_or_warn()
    return
  end
  local lines, pending = {}, #clients
  for _, client in ipairs(clients) do
    lsp.request(client, 'engram/status', vim.empty_dict(), function(err, result)
      if err then
        lines[#lines + 1] = (client.root_dir or '?') .. ': ' .. lsp.error_message(err)
      else
        for _, v in ipairs(result.vaults or {}) do
          lines[#lines + 1] = status_line(v)
        end
      end
      pending = pending - 1
      if pending == 0 then
        table.sort(lines)
        notify(table.concat(lines, '\n'))
      end
    end)
  end
end

--- Restart engram-ls (|:Engram-reindex|): each server reconciles its index with the files
--- when it starts.
function M.reindex()
  if #lsp.clients() == 0 then
    client_or_warn()
    return
  end
  lsp.restart(function(restarted, stopped)
    local msg = ('restarted engram-ls (%d of %d); the index is reconciled with the files'):format(
      restarted,
      stopped
    )
    if restarted < stopped then
      msg = msg .. ' (a client with no open note starts again with the next note you open)'
    end
    notify(msg)
  end)
end

return M
