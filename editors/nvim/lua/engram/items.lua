--- Server results as quickfix items: one `engram/search` hit or one `engram/related` note.
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

return M
