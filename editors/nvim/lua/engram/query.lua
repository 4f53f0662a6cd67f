--- The Engram query syntax, turned into an `engram/search` request, and the task filter syntax
--- (M.parse_tasks), turned into an `engram/tasks` request. Pure: no Neovim API, so it can be
--- tested (and read) on its own. The VS Code extension implements the same search grammar.
---
--- Grammar (terms are separated by whitespace):
---   "a phrase"         a term that starts with `"` runs to the next `"` (spaces included) and is
---                      kept, quotes and all, as part of `query`; with no closing `"` it runs to
---                      the end of the input, as typed
---   #topic             `topic` is added to `tags`
---   -#topic            `-topic` is added to `tags` (the server excludes that topic)
---   after:YYYY-MM-DD   `date_from` (the server validates the date; the last one wins)
---   before:YYYY-MM-DD  `date_to`
---   in:folder          `path` (a vault-relative folder, note or glob)
---   mode:NAME          `mode` (one of M.MODES; the server rejects another name; last one wins)
---   anything else      a word of `query`
--- Prefixes are lower case. A prefix with nothing after it (`#`, `-#`, `after:`, `in:`, `mode:`)
--- is an ordinary word. The words and phrases are joined with single spaces, in order, into
--- `query` (always present, possibly empty); `tags`, `date_from`, `date_to`, `path` and `mode`
--- are present only when given. A default mode (the `search.mode` option) is sent as `mode`
--- when the query has no `mode:` term and it is not `text`, the server's own default.
local M = {}

--- The modes of `engram/search`; `text` is the server's default.
M.MODES = { 'text', 'literal', 'regex', 'semantic', 'hybrid' }

--- Split `input` into terms: runs of non-whitespace, or a `"…"` phrase.
--- @param input string
--- @return string[]
function M.terms(input)
  local terms = {}
  local i, n = 1, #input
  while i <= n do
    local s = input:find('%S', i)
    if not s then
      break
    end
    local e
    if input:sub(s, s) == '"' then
      e = input:find('"', s + 1, true) or n
    else
      e = (input:find('%s', s) or n + 1) - 1
    end
    terms[#terms + 1] = input:sub(s, e)
    i = e + 1
  end
  return terms
end

local FIELDS =
  { ['after:'] = 'date_from', ['before:'] = 'date_to', ['in:'] = 'path', ['mode:'] = 'mode' }

--- Whether `name` is one of M.MODES.
--- @param name any
--- @return boolean
function M.is_mode(name)
  for _, mode in ipairs(M.MODES) do
    if name == mode then
      return true
    end
  end
  return false
end

--- Parse a query string into the params of an `engram/search` request.
--- @param input string
--- @param default_mode string? the mode when the query has none (`text` when nil)
--- @return { query: string, tags?: string[], date_from?: string, date_to?: string, path?: string, mode?: string }
function M.parse(input, default_mode)
  local words, tags = {}, {}
  local request = {}
  for _, term in ipairs(M.terms(input or '')) do
    local handled = false
    if term:sub(1, 1) ~= '"' then
      local excluded = term:match('^%-#(.+)$')
      local topic = term:match('^#(.+)$')
      if excluded then
        tags[#tags + 1] = '-' .. excluded
        handled = true
      elseif topic then
        tags[#tags + 1] = topic
        handled = true
      else
        local prefix, value = term:match('^(%l+:)(.+)$')
        local field = prefix and FIELDS[prefix]
        if field then
          request[field] = value
          handled = true
        end
      end
    end
    if not handled then
      words[#words + 1] = term
    end
  end
  request.query = table.concat(words, ' ')
  if #tags > 0 then
    request.tags = tags
  end
  if request.mode == nil and default_mode ~= nil and default_mode ~= 'text' then
    request.mode = default_mode
  end
  return request
end

--- The task filter syntax (|engram-tasks-filters|), turned into an `engram/tasks` request.
---
--- Grammar (terms are separated by whitespace, as for M.parse):
---   #tag               `tag` is added to `tags` (tasks with one of these #tags)
---   topic:NAME         `NAME` is added to `note_tags` (tasks of notes with one of these topics)
---   in:folder          `path` (a vault-relative folder, note or glob; the last one wins)
---   due<DAY  due>DAY   `due_before` / `due_after` (the server reads DAY: YYYY-MM-DD, today,
---                      tomorrow, yesterday, +7d, -2w; it validates it; the last one wins)
---   scheduled<DAY  scheduled>DAY   `scheduled_before` / `scheduled_after`
---   status:NAME        `status` (M.TASK_STATUSES or one status character; default `open`)
---   priority:NAME      added to `priority` (repeatable; `priority:high,highest` adds both)
---   sort:NAME          `sort` (M.TASK_SORTS; default `due`)
---   "a phrase"         its words, without the quotes, are words of `text`
---   anything else      a word of `text`
--- Prefixes are lower case; a prefix with nothing after it is a word. `text` (the words joined
--- with single spaces), `tags`, `note_tags`, `priority`, `path` and the days are present only
--- when given; `status` and `sort` always are.
M.TASK_STATUSES = { 'open', 'all', 'done', 'cancelled', 'todo', 'in_progress' }
M.TASK_PRIORITIES = { 'highest', 'high', 'medium', 'normal', 'low', 'lowest' }
M.TASK_SORTS = { 'due', 'priority', 'path' }

--- The prefixes of the task filter syntax, in the order completion offers them.
M.TASK_PREFIXES = {
  '#',
  'in:',
  'due<',
  'due>',
  'status:',
  'priority:',
  'sort:',
  'topic:',
  'scheduled<',
  'scheduled>',
}

local TASK_FIELDS = {
  ['in:'] = 'path',
  ['due<'] = 'due_before',
  ['due>'] = 'due_after',
  ['scheduled<'] = 'scheduled_before',
  ['scheduled>'] = 'scheduled_after',
  ['status:'] = 'status',
  ['sort:'] = 'sort',
}

--- Parse a task filter string into the params of an `engram/tasks` request.
--- @param input string
--- @return { status: string, sort: string, text?: string, tags?: string[], note_tags?: string[], priority?: string[], path?: string, due_before?: string, due_after?: string, scheduled_before?: string, scheduled_after?: string }
function M.parse_tasks(input)
  local words, tags, note_tags, priority = {}, {}, {}, {}
  local request = { status = 'open', sort = 'due' }
  for _, term in ipairs(M.terms(input or '')) do
    local handled = false
    if term:sub(1, 1) == '"' then
      local inner = term:sub(2):gsub('"$', '')
      for word in inner:gmatch('%S+') do
        words[#words + 1] = word
      end
      handled = true
    elseif term:match('^#(.+)$') then
      tags[#tags + 1] = term:sub(2)
      handled = true
    else
      local prefix, value = term:match('^(%l+[:<>])(.+)$')
      if prefix == 'topic:' then
        note_tags[#note_tags + 1] = value
        handled = true
      elseif prefix == 'priority:' then
        for name in value:gmatch('[^,]+') do
          priority[#priority + 1] = name
        end
        handled = true
      elseif prefix and TASK_FIELDS[prefix] then
        request[TASK_FIELDS[prefix]] = value
        handled = true
      end
    end
    if not handled then
      words[#words + 1] = term
    end
  end
  if #words > 0 then
    request.text = table.concat(words, ' ')
  end
  if #tags > 0 then
    request.tags = tags
  end
  if #note_tags > 0 then
    request.note_tags = note_tags
  end
  if #priority > 0 then
    request.priority = priority
  end
  return request
end

return M
