--- Server results as quickfix items: one `engram/search` hit, one `engram/related` note or one
--- `engram/tasks` task.
--- No editor state (only `vim.uri_to_fname`), so it is tested on its own.
local M = {}

--- @param text string?
--- @return string
local function one_line(text)
  return type(text) == 'string' and vim.trim((text:gsub('%s+', ' '))) or ''
end

--- One `engram/search` hit (its `line` is 1-based).
--- @param hit table
--- @return table
function M.search(hit)
  local text = hit.title or hit.path
  if type(hit.created_at) == 'string' then
    text = text .. ' (' .. hit.created_at:sub(1, 10) .. ')'
  end
  local snippet = one_line(hit.snippet)
  if snippet ~= '' then
    text = text .. ': ' .. snippet
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

--- One `engram/related` note (its `line` is 0-based): "Title [link, backlink]: snippet".
--- `reasons`: `link` (the note links to it), `backlink` (it links to the note), `meaning`.
--- @param hit table
--- @return table
function M.related(hit)
  local text = (type(hit.title) == 'string' and hit.title ~= '') and hit.title or hit.path
  local reasons = type(hit.reasons) == 'table' and hit.reasons or {}
  if #reasons > 0 then
    text = text .. ' [' .. table.concat(reasons, ', ') .. ']'
  end
  local snippet = one_line(hit.snippet)
  if snippet ~= '' then
    text = text .. ': ' .. snippet
  end
  local line = type(hit.line) == 'number' and hit.line or 0
  return {
    filename = vim.uri_to_fname(hit.uri),
    lnum = math.max(math.floor(line), 0) + 1,
    col = 1,
    text = text,
    user_data = { path = hit.path, reasons = reasons, score = hit.score },
  }
end

--- @param value any
--- @return string?
local function str(value)
  return (type(value) == 'string' and value ~= '') and value or nil
end

--- Whether `text` holds `#tag` as a whole tag (not the start of a longer one), without case.
--- @param text string
--- @param tag string
--- @return boolean
local function shows_tag(text, tag)
  local lower, needle = text:lower(), '#' .. tag:lower()
  local from = 1
  while true do
    local s, e = lower:find(needle, from, true)
    if not s then
      return false
    end
    if not lower:sub(e + 1, e + 1):match('[%w_/%-\128-\255]') then
      return true
    end
    from = s + 1
  end
end

--- One `engram/tasks` task (its `line` is 1-based):
--- "[status] description (due DAY, priority, recurrence) #tags OVERDUE".
--- The priority is left out when `normal`; a tag is added only when the description does not
--- already show it. An overdue task is a warning (`type = 'W'`).
--- @param task table
--- @return table
function M.task(task)
  local status = str(task.status) or ' '
  local description = one_line(task.description)
  if description == '' then
    description = one_line(task.text)
  end
  local text = '[' .. status .. ']' .. (description ~= '' and ' ' .. description or '')
  local extras = {}
  local due, priority, recurrence = str(task.due), str(task.priority), str(task.recurrence)
  if due then
    extras[#extras + 1] = 'due ' .. due
  end
  if priority and priority ~= 'normal' then
    extras[#extras + 1] = priority
  end
  if recurrence then
    extras[#extras + 1] = recurrence
  end
  if #extras > 0 then
    text = text .. ' (' .. table.concat(extras, ', ') .. ')'
  end
  local tags = type(task.tags) == 'table' and task.tags or {}
  for _, tag in ipairs(tags) do
    if type(tag) == 'string' and not shows_tag(description, tag) then
      text = text .. ' #' .. tag
    end
  end
  local overdue = task.overdue == true
  if overdue then
    text = text .. ' OVERDUE'
  end
  local line = type(task.line) == 'number' and task.line or 1
  return {
    filename = vim.uri_to_fname(task.uri),
    lnum = math.max(math.floor(line), 1),
    col = 1,
    text = text,
    type = overdue and 'W' or '',
    user_data = {
      path = task.path,
      line = task.line,
      status = task.status,
      state = task.state,
      description = description,
      due = due,
      priority = priority,
      tags = tags,
      overdue = overdue,
    },
  }
end

return M
