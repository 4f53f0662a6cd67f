--- The engram-ls client: its configuration, starting it (`vim.lsp.enable` on 0.11+,
--- `vim.lsp.start` on 0.10), finding it, talking to it, restarting it.
local config = require('engram.config')

local M = {}

local has_011 = vim.fn.has('nvim-0.11') == 1

--- The buffers engram-ls serves: notes, and Obsidian bases (`*.base`: the plugin gives them the
--- filetype `yaml.base`, YAML's highlighting and Engram's diagnostics, completion and hover).
M.FILETYPES = { 'markdown', 'yaml.base' }

--- The vault that holds `bufnr`'s file: the nearest folder with a root marker. Nil for buffers
--- that are not files (help, terminals, `scheme://` buffers, unnamed ones).
--- @param bufnr integer?
--- @return string?
function M.find_root(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return nil
  end
  return vim.fs.root(bufnr, config.get().root_markers)
end

--- The client configuration (the same table `lsp/engram_ls.lua` returns).
--- `root_dir` is a function: a buffer outside every vault gets no client.
--- @return vim.lsp.Config
function M.client_config()
  local opts = config.get()
  local cfg = {
    name = config.NAME,
    cmd = opts.cmd,
    filetypes = M.FILETYPES,
    root_dir = function(bufnr, on_dir)
      local root = M.find_root(bufnr)
      if root then
        on_dir(root)
      end
    end,
    workspace_required = true,
    -- The code lenses' commands run in Neovim (engram.showReferences, engram.relatedNotes).
    commands = require('engram').LENS_COMMANDS,
  }
  if opts.init_options ~= nil and next(opts.init_options) ~= nil then
    cfg.init_options = opts.init_options
  end
  if opts.settings ~= nil and next(opts.settings) ~= nil then
    cfg.settings = { engram = opts.settings }
  end
  return cfg
end

--- Start (or reuse) the client for `bufnr` if its file is in a vault. This is what 0.10 users
--- call from a `FileType markdown` autocommand; on 0.11+ it honours `vim.lsp.config()`.
--- @param bufnr integer?
--- @return integer? client_id
function M.start(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local root = M.find_root(bufnr)
  if not root then
    return nil
  end
  local cfg
  if has_011 then
    cfg = vim.deepcopy(vim.lsp.config[config.NAME] or M.client_config())
  else
    cfg = M.client_config()
  end
  cfg.name = config.NAME
  cfg.root_dir = root
  return vim.lsp.start(cfg, { bufnr = bufnr })
end

--- Called once by plugin/engram.lua when `autostart` is on.
function M.autostart()
  if has_011 then
    vim.lsp.enable(config.NAME)
    return
  end
  local group = vim.api.nvim_create_augroup('engram.autostart', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = M.FILETYPES,
    callback = function(ev)
      M.start(ev.buf)
    end,
  })
  -- Buffers that were opened before the plugin loaded (lazy loading).
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.tbl_contains(M.FILETYPES, vim.bo[buf].filetype) then
      M.start(buf)
    end
  end
end

--- Every running engram-ls client.
--- @param bufnr integer? only the client attached to this buffer
--- @return vim.lsp.Client[]
function M.clients(bufnr)
  return vim.lsp.get_clients({ name = config.NAME, bufnr = bufnr })
end

--- The client a command should talk to: the current buffer's, else the one whose vault holds
--- the current directory, else the first one.
--- @return vim.lsp.Client?
function M.current()
  local own = M.clients(vim.api.nvim_get_current_buf())[1]
  if own then
    return own
  end
  local all = M.clients()
  local cwd = vim.fs.normalize(vim.fn.getcwd())
  for _, client in ipairs(all) do
    local root = client.root_dir and vim.fs.normalize(client.root_dir)
    if root and (cwd == root or vim.startswith(cwd, root .. '/')) then
      return client
    end
  end
  return all[1]
end

--- Send a request; `handler(err, result)` runs on the main loop. With `bufnr`, the buffer's
--- pending changes are sent first (the server then sees the text the request is about).
--- @param client vim.lsp.Client
--- @param method string
--- @param params table
--- @param handler fun(err: table?, result: any)
--- @param bufnr integer?
function M.request(client, method, params, handler, bufnr)
  local function on_reply(err, result)
    handler(err, result)
  end
  if has_011 then
    return client:request(method, params, on_reply, bufnr)
  end
  return client.request(method, params, on_reply, bufnr)
end

--- Whether the server offers the command `name` (`workspace/executeCommand`).
--- @param client vim.lsp.Client
--- @param name string
--- @return boolean
function M.has_command(client, name)
  local provider = (client.server_capabilities or {}).executeCommandProvider
  local commands = type(provider) == 'table' and provider.commands or {}
  return vim.tbl_contains(commands, name)
end

--- A request answered synchronously (for `:checkhealth`).
--- @return table? response `{ err = …, result = … }`, nil on timeout
function M.request_sync(client, method, params, timeout_ms)
  if has_011 then
    return client:request_sync(method, params, timeout_ms)
  end
  return client.request_sync(method, params, timeout_ms)
end

--- @param client vim.lsp.Client
--- @param force boolean?
local function stop(client, force)
  if has_011 then
    client:stop(force)
  else
    client.stop(force)
  end
end

--- The text of a JSON-RPC error for a person: its message (which names the problem).
--- @param err table
--- @return string
function M.error_message(err)
  local msg = type(err) == 'table' and err.message or tostring(err)
  local code = type(err) == 'table' and type(err.data) == 'table' and err.data.code
  if type(code) == 'string' and code ~= '' then
    return ('%s (%s)'):format(msg, code)
  end
  return msg
end

--- Restart every client: stop it, wait for it to exit, start it again with the same
--- configuration and attach its buffers. The new server process reconciles its vault's index
--- with the files when it starts (engram-ls has no reindex request).
--- A client attached to no buffer is stopped and started again by the next note opened.
--- @param on_done fun(restarted: integer, stopped: integer)?
function M.restart(on_done)
  local clients = M.clients()
  if #clients == 0 then
    if on_done then
      on_done(0, 0)
    end
    return
  end
  local pending = #clients
  local restarted = 0
  for _, client in ipairs(clients) do
    local cfg = vim.deepcopy(client.config)
    local buffers = vim.tbl_keys(client.attached_buffers or {})
    local id = client.id
    stop(client)
    local waited = 0
    local function again()
      local alive = vim.lsp.get_client_by_id(id) ~= nil
      if alive and waited < 10000 then
        waited = waited + 50
        if waited == 5000 then
          stop(client, true)
        end
        vim.defer_fn(again, 50)
        return
      end
      local new_id
      for _, buf in ipairs(alive and {} or buffers) do
        if vim.api.nvim_buf_is_valid(buf) then
          new_id = vim.lsp.start(cfg, { bufnr = buf }) or new_id
        end
      end
      if new_id then
        restarted = restarted + 1
      end
      pending = pending - 1
      if pending == 0 and on_done then
        on_done(restarted, #clients)
      end
    end
    vim.defer_fn(again, 50)
  end
end

return M
