-- Turn server results into quickfix items with lua/engram/items.lua (no server, no editor state).
--   nvim --clean --headless -l tests/editors/nvim/items.lua PLUGIN_DIR INPUT.json OUTPUT.json
-- INPUT.json is a list of { kind = 'search' | 'related', hit = {…} }; OUTPUT.json the items.
local plugin, input_path, output_path = arg[1], arg[2], arg[3]
-- 'runtimepath' is a comma-separated list: a comma in the checkout's path is escaped.
vim.opt.runtimepath:prepend((plugin:gsub(',', '\\,')))
local items = require('engram.items')

local f = assert(io.open(input_path, 'r'))
local inputs = vim.json.decode(f:read('*a'))
f:close()

local out = {}
for i, entry in ipairs(inputs) do
  out[i] = items[entry.kind](entry.hit)
end

f = assert(io.open(output_path, 'w'))
f:write(vim.json.encode(out))
f:close()
