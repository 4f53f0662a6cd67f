--- The Engram query syntax, turned into an `engram/search` request. Pure: no Neovim API, so it
--- can be tested (and read) on its own. The VS Code extension implements the same grammar.
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

return M
