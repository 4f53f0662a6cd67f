--- Engram for Neovim: search a vault of Markdown notes through engram-ls.
---
--- Nothing here needs `setup()`: the plugin works with its defaults, `vim.g.engram` or
--- `vim.lsp.config('engram_ls', …)`. `setup(opts)` only merges options.
local config = require('engram.config')
local lsp = require('engram.lsp')
local qf = require('engram.items')
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

--- Replace the quickfix list with `items`; open it when there are some (`open_quickfix`).
--- @param title string
--- @param context table
--- @param items table[]
--- @param empty string what to say when there are no items
local function to_quickfix(title, context, items, empty)
  vim.fn.setqflist({}, ' ', { title = title, items = items, context = { engram = context } })
  if #items == 0 then
    notify(empty)
  elseif config.get().open_quickfix then
    vim.cmd('botright copen')
  end
end

--- @param items table[]
--- @param prompt string
--- @param empty string
--- @param kind string? `vim.ui.select`'s kind (default `engram.note`)
local function to_select(items, prompt, empty, kind)
  if #items == 0 then
    notify(empty)
    return
  end
  vim.ui.select(items, {
    prompt = prompt,
    format_item = function(item)
      return item.user_data.path .. ': ' .. item.text
    end,
    kind = kind or 'engram.note',
  }, function(item)
    if item then
      vim.cmd.edit(vim.fn.fnameescape(item.filename))
      vim.api.nvim_win_set_cursor(0, { item.lnum, 0 })
    end
  end)
end

--- A server error for a person: at WARN when it is a mode this installation lacks (the
--- message names what to install), at ERROR otherwise (a bad date, a broken request…).
--- @param err table
local function notify_error(err)
  local code = type(err) == 'table' and type(err.data) == 'table' and err.data.code
  local level = code == 'ENGRAM_UNSUPPORTED_MODE' and levels.WARN or levels.ERROR
  notify(lsp.error_message(err), level)
end

--- Search the vault with the Engram query syntax (|engram-query|). The mode is the query's
--- `mode:` term, else the `search.mode` option.
--- @param input string
--- @param opts { results?: 'quickfix'|'select' }?
function M.search(input, opts)
  opts = opts or {}
  local client = client_or_warn()
  if not client then
    return
  end
  local options = config.get()
  local default_mode = type(options.search) == 'table' and options.search.mode or nil
  local params = query.parse(input, default_mode)
  if params.query == '' and not params.tags and not params.date_from and not params.date_to
    and not params.path
  then
    notify('give a query, e.g. :Engram search #topic after:2024-01-01 words', levels.WARN)
    return
  end
  params.limit = options.limit
  lsp.request(client, 'engram/search', params, function(err, result)
    if err then
      notify_error(err)
      return
    end
    local items = vim.tbl_map(qf.search, result.results or {})
    if (opts.results or options.results) == 'select' then
      to_select(items, 'Engram notes', 'no notes match')
      return
    end
    local title = ('Engram: %s (%d of %d)'):format(input, #items, result.total or #items)
    if params.mode and params.mode ~= 'text' then
      title = title .. ' · ' .. params.mode .. ' mode'
    end
    local context = { query = input, mode = params.mode or 'text', total = result.total, index = result.index }
    to_quickfix(title, context, items, 'no notes match ' .. input)
  end)
end

--- The notes related to the current note (|:Engram-related|): links, backlinks and, when the
--- server has semantic search, notes close in meaning (`engram/related`).
--- @param opts { results?: 'quickfix'|'select', limit?: integer }?
function M.related(opts)
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  local client = lsp.clients(bufnr)[1]
  if not client then
    notify('open a note inside a vault to see its related notes', levels.WARN)
    return
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  local root = client.root_dir and vim.fs.normalize(client.root_dir) or nil
  local path = vim.fs.normalize(name)
  if root and vim.startswith(path, root .. '/') then
    path = path:sub(#root + 2)
  end
  local params = { uri = vim.uri_from_bufnr(bufnr) }
  if opts.limit then
    params.limit = opts.limit
  end
  local options = config.get()
  lsp.request(client, 'engram/related', params, function(err, result)
    if err then
      local msg = lsp.error_message(err)
      if type(err) == 'table' and err.code == -32601 then -- MethodNotFound: an older engram-ls
        msg = 'this engram-ls does not answer engram/related (a newer Engram has related notes): '
          .. msg
      end
      notify('related notes: ' .. msg, levels.ERROR)
      return
    end
    local items = vim.tbl_map(qf.related, (result or {}).results or {})
    if (opts.results or options.results) == 'select' then
      to_select(items, 'Notes related to ' .. path, 'no notes related to ' .. path)
      return
    end
    local title = ('Engram: related to %s (%d)'):format(path, #items)
    to_quickfix(title, { related = path }, items, 'no notes related to ' .. path)
  end)
end

--- The commands of engram-ls's code lenses, run here (they are not server commands): the
--- backlinks lens (`engram.showReferences`, arguments `{uri, position, locations}`) fills the
--- quickfix list with the links; the related lens (`engram.relatedNotes`) is |:Engram-related|.
--- Run a lens with `vim.lsp.codelens.run()` (see |engram-lenses|).
M.LENS_COMMANDS = {
  ['engram.showReferences'] = function(command, ctx)
    local client = vim.lsp.get_client_by_id(ctx.client_id)
    local args = command.arguments or {}
    local locations = args[3] or {}
    local encoding = client and client.offset_encoding or 'utf-16'
    local items = vim.lsp.util.locations_to_items(locations, encoding)
    local path = vim.uri_to_fname(args[1] or vim.uri_from_bufnr(0))
    local title = ('Engram: %s to %s'):format(command.title, vim.fn.fnamemodify(path, ':.'))
    to_quickfix(title, { backlinks = path }, items, 'no links to ' .. path)
  end,
  ['engram.relatedNotes'] = function()
    M.related()
  end,
}

--- The tasks of the vault (|:Engram-tasks|) with the task filter syntax (|engram-tasks-filters|):
--- open tasks, soonest due first, unless the filters say otherwise.
--- @param input string?
--- @param opts { results?: 'quickfix'|'select' }?
function M.tasks(input, opts)
  opts = opts or {}
  input = vim.trim(input or '')
  local client = client_or_warn()
  if not client then
    return
  end
  local options = config.get()
  local params = query.parse_tasks(input)
  params.limit = options.limit
  lsp.request(client, 'engram/tasks', params, function(err, result)
    if err then
      local msg = lsp.error_message(err)
      if type(err) == 'table' and err.code == -32601 then -- MethodNotFound: an older engram-ls
        notify(
          'this engram-ls does not answer engram/tasks (a newer Engram lists tasks): ' .. msg,
          levels.ERROR
        )
        return
      end
      notify_error(err)
      return
    end
    result = result or {}
    local items = vim.tbl_map(qf.task, result.tasks or {})
    local what = input ~= '' and input or 'open'
    local empty = input ~= '' and 'no tasks match ' .. input or 'no open tasks'
    if (opts.results or options.results) == 'select' then
      to_select(items, 'Engram tasks: ' .. what, empty, 'engram.task')
      return
    end
    local title = ('Engram tasks: %s (%d of %d)'):format(what, #items, result.total or #items)
    local context = {
      tasks = input,
      request = params,
      total = result.total,
      today = result.today,
      index = result.index,
    }
    to_quickfix(title, context, items, empty)
  end)
end

--- The command that toggles a task (`workspace/executeCommand`).
M.TOGGLE_COMMAND = 'engram.toggleTask'

--- Toggle the task on the cursor's line (|:Engram-toggle|): done when it is open, not done when
--- it is done (`opts.done` forces one). The server edits the buffer (`workspace/applyEdit`); the
--- change is not saved until you write the buffer.
--- @param opts { done?: boolean }?
function M.toggle_task(opts)
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  local client = lsp.clients(bufnr)[1]
  if not client then
    notify('open a note inside a vault to toggle its tasks', levels.WARN)
    return
  end
  if not lsp.has_command(client, M.TOGGLE_COMMAND) then
    notify(
      'this engram-ls has no ' .. M.TOGGLE_COMMAND .. ' command (a newer Engram toggles tasks)',
      levels.ERROR
    )
    return
  end
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local arg = {
    uri = vim.uri_from_bufnr(bufnr),
    line = row,
    expect = vim.api.nvim_buf_get_lines(bufnr, row - 1, row, false)[1] or '',
  }
  if opts.done ~= nil then
    arg.done = opts.done and true or false
  end
  local params = { command = M.TOGGLE_COMMAND, arguments = { arg } }
  lsp.request(client, 'workspace/executeCommand', params, function(err, result)
    if err then
      notify_error(err)
      return
    end
    if type(result) ~= 'table' then
      notify('the server gave no answer to ' .. M.TOGGLE_COMMAND, levels.ERROR)
      return
    end
    local line = type(result.line) == 'number' and result.line or row
    local msg = ('%s:%d marked %s'):format(
      result.path or '?',
      line,
      result.done and 'done' or 'not done'
    )
    if result.recurrence == 'added' then
      msg = msg .. '; its next occurrence was added above'
    elseif type(result.recurrence) == 'string' then
      msg = msg .. '; next occurrence ' .. result.recurrence
    end
    if result.applied == 'disk' then
      -- The note was not open in the server: it wrote the file; reload an unmodified buffer.
      if vim.api.nvim_buf_is_valid(bufnr) and not vim.bo[bufnr].modified then
        vim.cmd.checktime(bufnr)
      end
      notify(msg .. ' (written to the file)')
      return
    end
    if not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    local now = vim.api.nvim_buf_get_lines(bufnr, line - 1, line, false)[1]
    if now ~= result.after then
      notify(
        msg .. ', but the buffer did not take the edit (it changed meanwhile): toggle again',
        levels.WARN
      )
      return
    end
    if vim.api.nvim_get_current_buf() == bufnr and line ~= row then
      vim.api.nvim_win_set_cursor(0, { line, vim.api.nvim_win_get_cursor(0)[2] })
    end
    notify(msg)
  end, bufnr)
end

--- The scratch buffer that shows a base's view: reused, named after the base and the view.
--- @param name string
--- @param lines string[]
--- @return integer bufnr
local function show_scratch(name, lines)
  local buf = vim.fn.bufnr(name)
  if buf == -1 or not vim.api.nvim_buf_is_valid(buf) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].bufhidden = 'hide'
    vim.bo[buf].filetype = 'markdown'
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    vim.cmd('botright split')
    vim.api.nvim_win_set_buf(0, buf)
  else
    vim.api.nvim_set_current_win(win)
  end
  return buf
end

--- Run the Obsidian base of the current buffer (|:Engram-base|): a `.base` file, or the
--- ```base block at the cursor of a note; `view` by name, else the base's first. The view is
--- shown in a read-only scratch buffer (Markdown: the table `engram query` prints, each row's
--- first cell a link to its note, `gx` opens it).
--- @param view string?
function M.base(view)
  local bufnr = vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(bufnr)
  local is_base = name:match('%.base$') ~= nil
  if name == '' or not (is_base or vim.bo[bufnr].filetype == 'markdown') then
    notify('open a .base file, or a note with a ```base block, to run its view', levels.WARN)
    return
  end
  local client = lsp.clients(bufnr)[1] or client_or_warn()
  if not client then
    return
  end
  local params = { uri = vim.uri_from_bufnr(bufnr), format = 'markdown', view = view }
  if not is_base then
    params.line = vim.api.nvim_win_get_cursor(0)[1] - 1
  end
  local source = vim.fn.fnamemodify(name, ':t')
  lsp.request(client, 'engram/query', params, function(err, result)
    if err then
      local msg = lsp.error_message(err)
      if type(err) == 'table' and err.code == -32601 then -- MethodNotFound: an older engram-ls
        msg = 'this engram-ls does not answer engram/query (a newer Engram runs bases): ' .. msg
      end
      notify(source .. ': ' .. msg, levels.ERROR)
      return
    end
    local shown = result.view ~= vim.NIL and result.view or 'view'
    local lines = { ('# %s · %s'):format(result.base ~= vim.NIL and result.base or source, shown), '' }
    if #(result.views or {}) > 1 then
      lines[#lines + 1] = 'Views: ' .. table.concat(result.views, ', ') .. ' (:Engram base {view})'
      lines[#lines + 1] = ''
    end
    vim.list_extend(lines, vim.split(result.markdown or '', '\n', { trimempty = true }))
    show_scratch(('engram://base/%s · %s'):format(source, shown), lines)
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
