-- Parse every query of a JSON list with lua/engram/query.lua (no server, no editor state).
--   nvim --clean --headless -l tests/editors/nvim/query.lua PLUGIN_DIR INPUT.json OUTPUT.json
-- An input is a query string, [query, default_mode] for parse(query, default_mode), or
-- { tasks = filters } for parse_tasks(filters).
-- OUTPUT.json is a list of { input = …, request = parse(…) or parse_tasks(…), terms = terms(…) }.
local plugin, input_path, output_path = arg[1], arg[2], arg[3]
-- 'runtimepath' is a comma-separated list: a comma in the checkout's path is escaped.
vim.opt.runtimepath:prepend((plugin:gsub(',', '\\,')))
local query = require('engram.query')

local f = assert(io.open(input_path, 'r'))
local inputs = vim.json.decode(f:read('*a'))
f:close()

local out = {}
for i, input in ipairs(inputs) do
  if type(input) == 'table' and input.tasks ~= nil then
    local text = input.tasks
    out[i] = { input = input, request = query.parse_tasks(text), terms = query.terms(text) }
  else
    local text, default_mode = input, nil
    if type(input) == 'table' then
      text, default_mode = input[1], input[2]
    end
    out[i] = { input = input, request = query.parse(text, default_mode), terms = query.terms(text) }
  end
end

f = assert(io.open(output_path, 'w'))
f:write(vim.json.encode(out))
f:close()
