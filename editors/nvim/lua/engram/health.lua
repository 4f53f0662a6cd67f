--- `:checkhealth engram`
local M = {}

function M.check()
  local health = vim.health
  local config = require('engram.config')
  local lsp = require('engram.lsp')

  health.start('Neovim')
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok('Neovim 0.11+: vim.lsp.config / vim.lsp.enable')
  elseif vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim 0.10: clients start with vim.lsp.start')
  else
    health.error('Neovim 0.10 or newer is needed')
  end

  health.start('Options')
  local opts = config.get()
  local problems = config.problems(opts)
  if #problems == 0 then
    health.ok(('root markers: %s; autostart: %s'):format(
      table.concat(opts.root_markers, ', '),
      tostring(opts.autostart)
    ))
  end
  for _, problem in ipairs(problems) do
    health.error(problem)
  end

  health.start('engram-ls')
  local cmd = opts.cmd
  if vim.fn.has('nvim-0.11') == 1 then
    local resolved = vim.lsp.config[config.NAME]
    if resolved and type(resolved.cmd) == 'table' then
      cmd = resolved.cmd
    end
  end
  local exe = type(cmd) == 'table' and cmd[1] or nil
  if type(exe) ~= 'string' then
    health.error('no server command', { 'set vim.g.engram_cmd = { "/path/to/engram-ls" }' })
  elseif vim.fn.executable(exe) == 1 then
    local path = vim.fn.exepath(exe)
    local out = vim.system({ path, '--help' }, { text = true }):wait(10000)
    if out.code == 0 then
      health.ok(('`%s` runs (%s)'):format(exe, path))
    else
      health.error(('`%s --help` failed: %s'):format(exe, vim.trim(out.stderr or '')))
    end
  else
    health.error(('`%s` is not executable or not on PATH'):format(exe), {
      'install Engram (pip install . in its checkout) so that engram-ls is on PATH',
      'or point the plugin at it: vim.g.engram_cmd = { "/path/to/engram-ls" }',
    })
  end

  health.start('Vaults')
  local root = vim.fs.root(vim.fn.getcwd() .. '/x', opts.root_markers)
  if root then
    health.ok('the current directory is in the vault ' .. root)
  else
    health.info(
      'the current directory is in no vault (no parent folder has '
        .. table.concat(opts.root_markers, ' or ')
        .. '); notes open in a vault still start the server'
    )
  end
  local clients = lsp.clients()
  if #clients == 0 then
    health.info('no engram-ls client is running')
  end
  for _, client in ipairs(clients) do
    local reply = lsp.request_sync(client, 'engram/status', vim.empty_dict(), 3000)
    if not reply then
      health.warn(('client %d (%s): engram/status did not answer in 3 s'):format(
        client.id,
        client.root_dir or '?'
      ))
    elseif reply.err then
      health.error(('client %d: %s'):format(client.id, lsp.error_message(reply.err)))
    else
      for _, v in ipairs(reply.result.vaults or {}) do
        local line = ('%s: %s, %s notes, %s problems'):format(v.root, v.state, v.notes, v.problems)
        if v.state == 'ready' or v.state == 'building' then
          health.ok(line)
        else
          health.warn(line, { 'see :Engram status; :Engram reindex restarts the server' })
        end
      end
    end
    local toggle = require('engram').TOGGLE_COMMAND
    if lsp.has_command(client, toggle) then
      health.ok(('client %d: tasks (:Engram tasks, :Engram toggle)'):format(client.id))
    else
      health.warn(
        ('client %d: this engram-ls has no %s command: :Engram toggle cannot work'):format(
          client.id,
          toggle
        ),
        { 'install a newer Engram (one with tasks), then :Engram reindex' }
      )
    end
  end
end

return M
