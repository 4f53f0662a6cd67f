-- End-to-end steps in a real Neovim, started by tests/editors/test_neovim.py as
--   nvim --headless -i NONE -n -u tests/editors/nvim/e2e.lua
-- in a copy of the example vault. Everything comes from the environment:
--   ENGRAM_NVIM_PLUGIN  the plugin folder (editors/nvim)
--   ENGRAM_E2E_CMD      the server command, a JSON list
--   ENGRAM_E2E_VAULT    the vault copy (also the current directory)
--   ENGRAM_E2E_OUT      where the JSON results go (rewritten after every step)
--   ENGRAM_E2E_MODE     how the client starts:
--                         config  vim.lsp.config('engram_ls', { cmd = … }) + vim.lsp.enable
--                         auto    the plugin's autostart, vim.g.engram_cmd
--                         start   autostart off, require('engram').start() in a FileType autocmd
--   ENGRAM_E2E_STEPS    "all" (default) or "attach" (attach, one search, a semantic one, status)
--   ENGRAM_E2E_OUTSIDE  a folder outside every vault holding note.md (for "all")
--   ENGRAM_E2E_INIT     initializationOptions, a JSON object (optional; mode "config" only)
local env = vim.env
local vault = vim.uv.fs_realpath(env.ENGRAM_E2E_VAULT)
local out_path = env.ENGRAM_E2E_OUT
local mode = env.ENGRAM_E2E_MODE or 'config'
local cmd = vim.json.decode(env.ENGRAM_E2E_CMD)

-- 'runtimepath' is a comma-separated list: a comma in the checkout's path is escaped.
vim.opt.runtimepath:prepend((env.ENGRAM_NVIM_PLUGIN:gsub(',', '\\,')))
vim.opt.swapfile = false
vim.opt.more = false

if mode == 'config' then
  vim.g.engram = { autostart = false }
  local cfg = { cmd = cmd }
  if env.ENGRAM_E2E_INIT and env.ENGRAM_E2E_INIT ~= '' then
    cfg.init_options = vim.json.decode(env.ENGRAM_E2E_INIT)
  end
  vim.lsp.config('engram_ls', cfg)
  vim.lsp.enable('engram_ls')
elseif mode == 'auto' then
  vim.g.engram_cmd = cmd
elseif mode == 'start' then
  vim.g.engram = { autostart = false, cmd = cmd }
  vim.api.nvim_create_autocmd('FileType', {
    pattern = 'markdown',
    callback = function(ev)
      require('engram').start(ev.buf)
    end,
  })
else
  error('unknown ENGRAM_E2E_MODE ' .. mode)
end

local results = { mode = mode, nvim = tostring(vim.version()), steps = {} }
local notes = {} -- every vim.notify call: { msg, level }

vim.notify = function(msg, level)
  notes[#notes + 1] = { msg = tostring(msg), level = level or vim.log.levels.INFO }
end

local function save()
  local f = assert(io.open(out_path, 'w'))
  f:write(vim.json.encode(results))
  f:close()
end

local function now()
  return vim.uv.hrtime() / 1e6
end

local function fail(msg)
  error(msg, 0)
end

local function rel(path)
  path = vim.uv.fs_realpath(path) or path
  if vim.startswith(path, vault .. '/') then
    return path:sub(#vault + 2)
  end
  return path
end

local function client_for(buf)
  return vim.lsp.get_clients({ name = 'engram_ls', bufnr = buf })[1]
end

local function wait_attached(buf, not_id)
  local client
  local ok = vim.wait(20000, function()
    client = client_for(buf)
    return client ~= nil and client.id ~= not_id and client.initialized == true
  end, 50)
  if not ok then
    fail('no engram_ls client attached to ' .. vim.api.nvim_buf_get_name(buf))
  end
  return client
end

-- Poll engram/status until every vault is ready and no build runs.
local function wait_ready(client)
  local deadline = now() + 30000
  local last
  while now() < deadline do
    local reply = client:request_sync('engram/status', vim.empty_dict(), 5000)
    if reply and reply.result then
      last = reply.result
      local all = #last.vaults > 0
      for _, v in ipairs(last.vaults) do
        all = all and v.state == 'ready' and not v.building
      end
      if all then
        return last
      end
    end
    vim.wait(100)
  end
  fail('engram/status never said ready: ' .. vim.inspect(last))
end

-- The vault's semantic status once it is done embedding: `ready`, or (after 5 s) an idle
-- state (a server that embeds nothing in the background) or any other; nil without one.
local function wait_semantic(client)
  local t0 = now()
  local last
  while now() - t0 < 20000 do
    local reply = client:request_sync('engram/status', vim.empty_dict(), 5000)
    local vault1 = reply and reply.result and reply.result.vaults and reply.result.vaults[1]
    last = vault1 and vault1.semantic
    if type(last) ~= 'table' or not last.available or last.state == 'ready' then
      break
    end
    if last.state ~= 'embedding' and now() - t0 > 5000 then
      break
    end
    vim.wait(100)
  end
  return last or vim.NIL
end

local function notes_since(n)
  local out = {}
  for i = n + 1, #notes do
    out[#out + 1] = notes[i]
  end
  return out
end

-- Run an :Engram search command; wait for the quickfix list it makes (or a notification
-- when it makes none). Returns the vault-relative paths, sorted.
local function search(command)
  vim.fn.setqflist({}, ' ', { title = 'e2e-pending' })
  local seen = #notes
  vim.cmd(command)
  local done = vim.wait(20000, function()
    return vim.fn.getqflist({ title = 1 }).title ~= 'e2e-pending' or #notes > seen
  end, 20)
  -- A failed search notifies and leaves the list alone; a good one sets it (and may notify
  -- "no notes match"): give the list a moment after a notification.
  vim.wait(200, function()
    return vim.fn.getqflist({ title = 1 }).title ~= 'e2e-pending'
  end, 20)
  local qf = vim.fn.getqflist({ title = 1, items = 1, context = 1 })
  local paths, from_user_data, entries = {}, {}, {}
  for _, item in ipairs(qf.items) do
    paths[#paths + 1] = rel(vim.api.nvim_buf_get_name(item.bufnr))
    if type(item.user_data) == 'table' then
      from_user_data[#from_user_data + 1] = item.user_data.path
    end
    entries[#entries + 1] = {
      path = paths[#paths],
      lnum = item.lnum,
      text = item.text,
      type = item.type,
      user_data = item.user_data,
    }
  end
  table.sort(paths)
  table.sort(from_user_data)
  vim.cmd('cclose')
  return {
    command = command,
    answered = done,
    title = qf.title,
    paths = paths,
    entries = entries, -- in the list's order
    user_data_paths = from_user_data,
    first_text = qf.items[1] and qf.items[1].text or vim.NIL,
    context = type(qf.context) == 'table' and qf.context.engram or vim.NIL,
    notes = notes_since(seen),
  }
end

local function completion_labels(buf, line, character)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = line, character = character },
  }
  local replies = vim.lsp.buf_request_sync(buf, 'textDocument/completion', params, 10000)
  local labels = {}
  for _, reply in pairs(replies or {}) do
    local res = reply.result
    local items = res and (res.items or res) or {}
    for _, item in ipairs(items) do
      labels[#labels + 1] = item.label
    end
  end
  return labels
end

local steps = {}
local only_attach = env.ENGRAM_E2E_STEPS == 'attach'

steps[#steps + 1] = {
  'attach',
  function(r)
    vim.cmd.edit(vim.fn.fnameescape(vault .. '/reference/profiling.md'))
    local buf = vim.api.nvim_get_current_buf()
    local t0 = now()
    local client = wait_attached(buf)
    r.attach_ms = now() - t0
    r.root_dir = rel(client.root_dir)
    r.client_name = client.name
    r.clients = #vim.lsp.get_clients({ name = 'engram_ls' })
    local status = wait_ready(client)
    r.ready_ms = now() - t0
    r.vaults = #status.vaults
    r.notes = status.vaults[1].notes
    r.state = status.vaults[1].state
  end,
}

if not only_attach then
  steps[#steps + 1] = {
    'completion',
    function(r)
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/inbox/e2e completion.md'))
      local buf = vim.api.nvim_get_current_buf()
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, {
        '---',
        'title: Completion check',
        'tags: [s',
        '---',
        '',
        'Body.',
      })
      wait_attached(buf)
      r.flow = completion_labels(buf, 2, #'tags: [s')
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, {
        '---',
        'topics:',
        '  - memory',
        '  - pe',
        '---',
      })
      r.block = completion_labels(buf, 3, #'  - pe')
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, { '---', 'title: x', '---', 'plain s' })
      r.body = completion_labels(buf, 3, #'plain s')
      vim.cmd('bwipeout!')
      r.file_created = vim.uv.fs_stat(vault .. '/inbox/e2e completion.md') ~= nil
    end,
  }
end

if not only_attach then
  steps[#steps + 1] = {
    'outside',
    function(r)
      vim.cmd.edit(vim.fn.fnameescape(env.ENGRAM_E2E_OUTSIDE .. '/note.md'))
      local buf = vim.api.nvim_get_current_buf()
      r.filetype = vim.bo[buf].filetype
      vim.wait(500, function()
        return client_for(buf) ~= nil
      end, 20)
      r.attached = client_for(buf) ~= nil
      r.clients = #vim.lsp.get_clients({ name = 'engram_ls' })
      vim.cmd('bwipeout!')
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/reference/profiling.md'))
    end,
  }
end

steps[#steps + 1] = {
  'search_tag',
  function(r)
    r.result = search('Engram search #memory')
  end,
}

if not only_attach then
  steps[#steps + 1] = {
    'search_filters',
    function(r)
      r.excluded = search('Engram search #memory -#journal')
      r.dated = search('Engram search #sqlite after:2024-01-01 before:2024-12-31')
      r.phrase_in = search('Engram search "write-ahead log" in:reference')
    end,
  }
  steps[#steps + 1] = {
    'bad_date',
    function(r)
      r.result = search('Engram search #sqlite after:2024-13-01')
    end,
  }
  steps[#steps + 1] = {
    'search_mode',
    function(r)
      r.text = search('Engram search colou?r')
      r.regex = search('Engram search mode:regex colou?r')
      r.literal = search('Engram search mode:literal colour')
      r.literal_regex = search('Engram search mode:literal colou?r')
      require('engram').setup({ search = { mode = 'regex' } })
      r.setting = search('Engram search colou?r')
      r.override = search('Engram search mode:text colou?r')
      require('engram').setup({ search = { mode = 'text' } })
      -- What this server says to a semantic search, asked directly once its notes are
      -- embedded (if it embeds): the plugin must show the same.
      local client = wait_attached(vim.api.nvim_get_current_buf())
      r.semantic_status = wait_semantic(client)
      local reply = client:request_sync(
        'engram/search',
        { query = 'memory leak', mode = 'semantic', limit = 100 },
        10000
      )
      local paths = {}
      for _, hit in ipairs(reply and reply.result and reply.result.results or {}) do
        paths[#paths + 1] = hit.path
      end
      table.sort(paths)
      r.semantic_probe = reply
          and {
            err = reply.err or vim.NIL,
            total = reply.result and reply.result.total or vim.NIL,
            paths = paths,
          }
        or vim.NIL
      r.semantic = search('Engram search mode:semantic memory leak')
      r.completion = vim.fn.getcompletion('Engram search mode:', 'cmdline')
      local config = require('engram.config')
      r.problems = config.problems(vim.tbl_deep_extend('force', config.get(), { search = { mode = 'fuzzy' } }))
    end,
  }
  steps[#steps + 1] = {
    'lens',
    function(r)
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/reference/profiling.md'))
      local buf = vim.api.nvim_get_current_buf()
      wait_attached(buf)
      vim.lsp.codelens.refresh({ bufnr = buf })
      local lenses = {}
      vim.wait(20000, function()
        lenses = vim.lsp.codelens.get(buf)
        return #lenses > 0
      end, 50)
      r.lenses = {}
      for _, lens in ipairs(lenses) do
        r.lenses[#r.lenses + 1] = {
          line = lens.range.start.line,
          title = lens.command and lens.command.title or vim.NIL,
          command = lens.command and lens.command.command or vim.NIL,
        }
      end
      -- Run the backlinks lens as a user would: the cursor on its line, codelens.run (a
      -- second lens on the line, "related", makes it ask which: the backlinks one).
      local backlinks
      for _, lens in ipairs(lenses) do
        if lens.command and lens.command.command == 'engram.showReferences' then
          backlinks = backlinks or lens
        end
      end
      if backlinks then
        vim.api.nvim_win_set_cursor(0, { backlinks.range.start.line + 1, 0 })
        local select = vim.ui.select
        vim.ui.select = function(items, opts, on_choice)
          for i, item in ipairs(items) do
            local cmd = item.lens and item.lens.command or item.command or item
            if type(cmd) == 'table' and cmd.command == 'engram.showReferences' then
              return on_choice(item, i)
            end
          end
          return on_choice(items[1], 1)
        end
        vim.fn.setqflist({}, 'r', { title = '', items = {} })
        vim.lsp.codelens.run()
        vim.wait(10000, function()
          return vim.fn.getqflist({ title = 1 }).title ~= ''
        end, 20)
        vim.ui.select = select
        local qf = vim.fn.getqflist({ title = 1, items = 1 })
        r.quickfix = { title = qf.title, files = {} }
        for _, item in ipairs(qf.items) do
          r.quickfix.files[#r.quickfix.files + 1] = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(item.bufnr), ':t')
        end
        table.sort(r.quickfix.files)
      end
      vim.cmd('cclose')
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/reference/profiling.md'))
    end,
  }
  steps[#steps + 1] = {
    'related',
    function(r)
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/reference/profiling.md'))
      local buf = vim.api.nvim_get_current_buf()
      -- Does this server answer engram/related at all? (MethodNotFound is -32601.)
      local reply = wait_attached(buf):request_sync('engram/related', { uri = vim.uri_from_bufnr(buf) }, 10000)
      r.probe = reply and { code = reply.err and reply.err.code or vim.NIL, has_result = reply.result ~= nil }
        or vim.NIL
      r.result = search('Engram related')
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/reference/profiling.md'))
    end,
  }
  steps[#steps + 1] = {
    'base',
    function(r)
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/bases/work.base'))
      local buf = vim.api.nvim_get_current_buf()
      r.filetype = vim.bo[buf].filetype
      r.attached = wait_attached(buf).name
      -- Run a view and wait for its scratch buffer (or a notification).
      local function run_view(command, name)
        local seen = #notes
        vim.cmd(command)
        local found
        vim.wait(20000, function()
          found = vim.fn.bufnr(name)
          return found ~= -1 or #notes > seen
        end, 20)
        local lines = found ~= -1 and vim.api.nvim_buf_get_lines(found, 0, -1, false) or {}
        return {
          lines = lines,
          modifiable = found ~= -1 and vim.bo[found].modifiable or vim.NIL,
          buftype = found ~= -1 and vim.bo[found].buftype or vim.NIL,
          filetype = found ~= -1 and vim.bo[found].filetype or vim.NIL,
          current = vim.api.nvim_get_current_buf() == found,
          notes = notes_since(seen),
        }
      end
      r.first = run_view('Engram base', 'engram://base/work.base · Open work')
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/bases/work.base'))
      r.grouped = run_view('Engram base By status', 'engram://base/work.base · By status')
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/bases/work.base'))
      r.missing = run_view('Engram base No such view', 'engram://base/work.base · No such view')
      r.complete = vim.fn.getcompletion('Engram b', 'cmdline')
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/reference/profiling.md'))
    end,
  }
  steps[#steps + 1] = {
    'tasks',
    function(r)
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/reference/profiling.md'))
      wait_attached(vim.api.nvim_get_current_buf())
      r.today = os.date('%Y-%m-%d')
      r.default = search('Engram tasks')
      r.editor = search('Engram tasks #editor')
      r.due = search('Engram tasks due<2025-01-01')
      r.high = search('Engram tasks priority:high sort:path')
      r.all = search('Engram tasks status:all sort:path in:meetings/2025')
      r.text = search('Engram tasks neovim')
      r.none = search('Engram tasks #no-such-tag')
      r.bad_day = search('Engram tasks due<2025-13-01')
      r.complete = {
        sub = vim.fn.getcompletion('Engram t', 'cmdline'),
        prefixes = vim.fn.getcompletion('Engram tasks s', 'cmdline'),
        status = vim.fn.getcompletion('Engram tasks #x status:', 'cmdline'),
        priority = vim.fn.getcompletion('Engram tasks priority:h', 'cmdline'),
        due = vim.fn.getcompletion('Engram tasks due<t', 'cmdline'),
        toggle = vim.fn.getcompletion('Engram toggle ', 'cmdline'),
      }
      -- :Engram! tasks: vim.ui.select, the chosen task opens at its line.
      local original = vim.ui.select
      local chosen
      vim.ui.select = function(items, opts, on_choice)
        chosen = { kind = opts.kind, prompt = opts.prompt, items = {} }
        for _, item in ipairs(items) do
          chosen.items[#chosen.items + 1] = opts.format_item(item)
        end
        on_choice(items[1])
      end
      vim.cmd('Engram! tasks #benchmark')
      r.select_answered = vim.wait(20000, function()
        return chosen ~= nil
      end, 20)
      vim.ui.select = original
      r.select = chosen or vim.NIL
      r.select_opened =
        { path = rel(vim.api.nvim_buf_get_name(0)), line = vim.api.nvim_win_get_cursor(0)[1] }
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/reference/profiling.md'))
    end,
  }
  steps[#steps + 1] = {
    'toggle',
    function(r)
      local function read(path)
        local f = assert(io.open(path, 'rb'))
        local data = f:read('*a')
        f:close()
        return data
      end
      -- Run an :Engram toggle command on `row`; wait for its notification.
      local function toggle(command, row)
        local buf = vim.api.nvim_get_current_buf()
        vim.api.nvim_win_set_cursor(0, { row, 0 })
        local seen = #notes
        vim.cmd(command)
        local answered = vim.wait(20000, function()
          return #notes > seen
        end, 20)
        return {
          answered = answered,
          notes = notes_since(seen),
          cursor = vim.api.nvim_win_get_cursor(0)[1],
          modified = vim.bo[buf].modified,
        }
      end
      r.today = os.date('%Y-%m-%d')
      local path = vault .. '/meetings/2024/2024-11-04 perf sync.md'
      local original = read(path)
      vim.cmd.edit(vim.fn.fnameescape(path))
      local buf = vim.api.nvim_get_current_buf()
      local client = wait_attached(buf)
      r.fileformat = vim.bo[buf].fileformat
      r.before = vim.api.nvim_buf_get_lines(buf, 26, 27, false)[1]
      -- The code action on the task's line (what vim.lsp.buf.code_action() offers).
      local reply = client:request_sync('textDocument/codeAction', {
        textDocument = { uri = vim.uri_from_bufnr(buf) },
        range = { start = { line = 26, character = 0 }, ['end'] = { line = 26, character = 0 } },
        context = { diagnostics = {} },
      }, 10000, buf)
      r.code_actions = {}
      for _, action in ipairs(reply and reply.result or {}) do
        r.code_actions[#r.code_actions + 1] =
          { title = action.title, kind = action.kind or vim.NIL }
      end
      r.first = toggle('Engram toggle', 27)
      r.first.line = vim.api.nvim_buf_get_lines(buf, 26, 27, false)[1]
      r.first.disk_unchanged = read(path) == original
      -- The list reads the index, which follows the saved file: still open.
      r.first.listed = search('Engram tasks #benchmark status:all')
      vim.cmd.buffer(buf)
      r.second = toggle('Engram toggle', 27)
      r.second.line = vim.api.nvim_buf_get_lines(buf, 26, 27, false)[1]
      -- Written: the bytes on disk are the original ones (CRLF kept).
      vim.cmd('silent write')
      r.second.written_same = read(path) == original
      -- Done again and written: only that line changed on disk, CRLF kept.
      r.third = toggle('Engram toggle done', 27)
      vim.cmd('silent write')
      local t0 = now()
      repeat
        r.third.listed = search('Engram tasks #benchmark status:all')
      until (r.third.listed.first_text or ''):sub(1, 3) == '[x]' or now() - t0 > 5000
      vim.cmd.buffer(buf)
      local disk = read(path)
      local old_lines = vim.split(original, '\r\n', { plain = true })
      local new_lines = vim.split(disk, '\r\n', { plain = true })
      local differ = {}
      for i = 1, math.max(#old_lines, #new_lines) do
        if old_lines[i] ~= new_lines[i] then
          differ[#differ + 1] = { line = i, disk = new_lines[i] or vim.NIL }
        end
      end
      r.third.differ = differ
      r.third.bare_lf = disk:gsub('\r\n', ''):find('\n') ~= nil
      r.fourth = toggle('Engram toggle undone', 27)
      vim.cmd('silent write')
      r.fourth.written_same = read(path) == original
      -- Not a task: the server's error.
      r.not_task = toggle('Engram toggle', 25)
      r.not_task.line = vim.api.nvim_buf_get_lines(buf, 24, 25, false)[1]
      r.bad_arg = toggle('Engram toggle maybe', 27)
      -- A recurring task: its next occurrence is inserted above, the cursor follows the task.
      local roadmap = vault .. '/meetings/2025/2025-01-20 roadmap.md'
      local roadmap_bytes = read(roadmap)
      vim.cmd.edit(vim.fn.fnameescape(roadmap))
      local rbuf = vim.api.nvim_get_current_buf()
      wait_attached(rbuf)
      r.recur = toggle('Engram toggle', 19)
      r.recur.lines = vim.api.nvim_buf_get_lines(rbuf, 18, 20, false)
      r.recur.disk_unchanged = read(roadmap) == roadmap_bytes
      vim.cmd('silent undo')
      r.recur.undone = vim.api.nvim_buf_get_lines(rbuf, 17, 21, false)
      vim.cmd('silent edit!')
      r.recur.reverted = read(roadmap) == roadmap_bytes
        and vim.api.nvim_buf_get_lines(rbuf, 18, 19, false)[1]
          == '- [ ] Weekly index health check 🔁 every week 📅 2025-02-03'
      -- Outside a vault: no client, a warning.
      vim.cmd.edit(vim.fn.fnameescape(env.ENGRAM_E2E_OUTSIDE .. '/note.md'))
      local seen = #notes
      vim.cmd('Engram toggle')
      r.outside = notes_since(seen)
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/reference/profiling.md'))
    end,
  }
  steps[#steps + 1] = {
    'select',
    function(r)
      local original = vim.ui.select
      vim.ui.select = function(items, opts, on_choice)
        r.items = {}
        for _, item in ipairs(items) do
          r.items[#r.items + 1] = opts.format_item(item)
        end
        on_choice(items[1])
      end
      vim.cmd('Engram! search #memory after:2026-01-01')
      local ok = vim.wait(20000, function()
        return r.items ~= nil
      end, 20)
      vim.ui.select = original
      r.answered = ok
      r.opened = rel(vim.api.nvim_buf_get_name(0))
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/reference/profiling.md'))
    end,
  }
  steps[#steps + 1] = {
    'save',
    function(r)
      vim.cmd.edit(vim.fn.fnameescape(vault .. '/reference/profiling.md'))
      local buf = vim.api.nvim_get_current_buf()
      r.before = search('Engram search #nvim-e2e')
      local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      local changed = false
      for i, line in ipairs(lines) do
        if line == 'tags: [performance, memory]' then
          vim.api.nvim_buf_set_lines(buf, i - 1, i, false, { 'tags: [performance, memory, nvim-e2e]' })
          changed = true
          break
        end
      end
      if not changed then
        fail('the tags line of reference/profiling.md was not found: ' .. vim.inspect(lines))
      end
      vim.cmd('silent write')
      local t0 = now()
      r.attempts = 0
      repeat
        r.attempts = r.attempts + 1
        r.after = search('Engram search #nvim-e2e')
      until #r.after.paths > 0 or now() - t0 > 10000
      r.visible_ms = now() - t0
    end,
  }
  steps[#steps + 1] = {
    'reindex',
    function(r)
      local buf = vim.api.nvim_get_current_buf()
      local old = client_for(buf)
      local seen = #notes
      vim.cmd('Engram reindex')
      local client = wait_attached(buf, old.id)
      r.new_client = client.id ~= old.id
      r.old_client_gone = vim.lsp.get_client_by_id(old.id) == nil
      r.clients = #vim.lsp.get_clients({ name = 'engram_ls' })
      wait_ready(client)
      vim.wait(5000, function()
        return #notes > seen
      end, 20)
      r.notes = notes_since(seen)
      r.after = search('Engram search #nvim-e2e')
    end,
  }
end

steps[#steps + 1] = {
  'search_semantic',
  function(r)
    r.result = search('Engram search mode:semantic memory leak')
  end,
}

steps[#steps + 1] = {
  'status',
  function(r)
    local seen = #notes
    vim.cmd('Engram status')
    r.answered = vim.wait(10000, function()
      return #notes > seen
    end, 20)
    r.notes = notes_since(seen)
  end,
}

if not only_attach then
  steps[#steps + 1] = {
    'checkhealth',
    function(r)
      vim.cmd('checkhealth engram')
      local lines
      vim.wait(15000, function()
        lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
        return table.concat(lines, '\n'):find('Vaults') ~= nil
      end, 50)
      r.lines = lines
    end,
  }
end

local function run()
  for _, step in ipairs(steps) do
    local name, fn = step[1], step[2]
    local r = {}
    results.steps[name] = r
    local t0 = now()
    local ok, err = xpcall(fn, debug.traceback, r)
    r.ms = now() - t0
    if not ok then
      r.error = err
      results.failed_step = name
      save()
      return
    end
    save()
  end
  results.done = true
  save()
end

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    vim.schedule(function()
      local ok, err = xpcall(run, debug.traceback)
      if not ok then
        results.error = err
        save()
      end
      vim.cmd('qa!')
    end)
  end,
})
