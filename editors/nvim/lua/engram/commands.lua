--- `:Engram {subcommand} …`: dispatch and command-line completion.
local M = {}

--- Days the server reads, offered after `due<`, `due>`, `scheduled<` and `scheduled>`.
local DAYS = { 'today', 'tomorrow', 'yesterday', '+7d', '-7d', '+1w' }

--- @param candidates string[]
--- @param arg string
--- @return string[]
local function starting_with(candidates, arg)
  return vim.tbl_filter(function(c)
    return vim.startswith(c, arg)
  end, candidates)
end

--- @type table<string, { run: fun(args: string, bang: boolean), complete?: fun(arg: string): string[] }>
M.subcommands = {
  search = {
    run = function(args, bang)
      require('engram').search(args, bang and { results = 'select' } or nil)
    end,
    complete = function(arg)
      local out = {}
      local candidates = { '#', '-#', 'after:', 'before:', 'in:', 'mode:' }
      if vim.startswith(arg, 'mode:') then
        candidates = vim.tbl_map(function(mode)
          return 'mode:' .. mode
        end, require('engram.query').MODES)
      end
      for _, prefix in ipairs(candidates) do
        if vim.startswith(prefix, arg) then
          out[#out + 1] = prefix
        end
      end
      return out
    end,
  },
  tasks = {
    run = function(args, bang)
      require('engram').tasks(args, bang and { results = 'select' } or nil)
    end,
    complete = function(arg)
      local query = require('engram.query')
      local candidates = query.TASK_PREFIXES
      local values = {
        ['status:'] = query.TASK_STATUSES,
        ['priority:'] = query.TASK_PRIORITIES,
        ['sort:'] = query.TASK_SORTS,
        ['due<'] = DAYS,
        ['due>'] = DAYS,
        ['scheduled<'] = DAYS,
        ['scheduled>'] = DAYS,
      }
      for prefix, names in pairs(values) do
        if vim.startswith(arg, prefix) then
          candidates = vim.tbl_map(function(name)
            return prefix .. name
          end, names)
          break
        end
      end
      return starting_with(candidates, arg)
    end,
  },
  toggle = {
    run = function(args)
      local done = ({ done = true, undone = false })[args]
      if args ~= '' and done == nil then
        vim.notify(
          ('Engram: toggle takes nothing, done or undone, not %q'):format(args),
          vim.log.levels.ERROR,
          { title = 'Engram' }
        )
        return
      end
      require('engram').toggle_task({ done = done })
    end,
    complete = function(arg)
      return starting_with({ 'done', 'undone' }, arg)
    end,
  },
  related = {
    run = function(_, bang)
      require('engram').related(bang and { results = 'select' } or nil)
    end,
  },
  base = {
    run = function(args)
      require('engram').base(args ~= '' and args or nil)
    end,
  },
  reindex = {
    run = function()
      require('engram').reindex()
    end,
  },
  status = {
    run = function()
      require('engram').status()
    end,
  },
}

--- @param opts { args: string, bang: boolean }
function M.run(opts)
  local name, rest = opts.args:match('^%s*(%S+)%s*(.-)%s*$')
  local sub = name and M.subcommands[name]
  if not sub then
    vim.notify(
      ('Engram: unknown subcommand %q; use one of: %s'):format(
        name or '',
        table.concat(vim.fn.sort(vim.tbl_keys(M.subcommands)), ', ')
      ),
      vim.log.levels.ERROR,
      { title = 'Engram' }
    )
    return
  end
  sub.run(rest or '', opts.bang)
end

--- @param arglead string
--- @param cmdline string
--- @return string[]
function M.complete(arglead, cmdline)
  local name, rest = cmdline:match('^%S*Engram!?%s+(%S+)%s+(.*)$')
  if name and M.subcommands[name] then
    local complete = M.subcommands[name].complete
    return complete and complete(arglead) or {}
  end
  if rest == nil and cmdline:match('^%S*Engram!?%s+%S*$') then
    return vim.tbl_filter(function(n)
      return vim.startswith(n, arglead)
    end, vim.fn.sort(vim.tbl_keys(M.subcommands)))
  end
  return {}
end

return M
