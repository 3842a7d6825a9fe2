--- The LSP client: its configuration, finding or starting it, and requests to it.
local M = {}

local methods = require('milk.methods')
local config = require('milk.config')

M.NAME = 'milk'
local has_011 = vim.fn.has('nvim-0.11') == 1

--- Call a client method in the 0.11 style (`client:request`) or the 0.10 one.
local function call(client, name, ...)
  if has_011 then
    return client[name](client, ...)
  end
  return client[name](...)
end
M.call = call

-- Settings keys whose values are lists: an empty Lua table there must stay a JSON array.
local LIST_KEYS = { allowedTools = true, addDirs = true }

--- Settings as they go on the wire. An empty Lua table would be sent as a JSON array, so
--- empty objects are left out (an unset key keeps the server's value) and empty settings
--- become nil; the list-valued keys stay lists.
--- @param value any
--- @param key string?
--- @return any
function M.wire_settings(value, key)
  if type(value) ~= 'table' then
    return value
  end
  if LIST_KEYS[key] or (next(value) ~= nil and vim.islist(value)) then
    return vim.deepcopy(value)
  end
  local out, any = {}, false
  for k, v in pairs(value) do
    local w = M.wire_settings(v, k)
    if w ~= nil then
      out[k], any = w, true
    end
  end
  return any and out or nil
end

--- The client capabilities: Neovim's, plus milk's permission prompt and work-done progress.
function M.capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.experimental = caps.experimental or {}
  caps.experimental.milk = { requestPermission = true }
  caps.window = caps.window or {}
  caps.window.workDoneProgress = true
  return caps
end

--- Handlers of milk's own methods (per client, so other servers are not affected).
function M.handlers()
  return {
    [methods.UPDATE] = function(_, params, ctx)
      require('milk.chat').on_update(params, ctx and ctx.client_id)
    end,
    [methods.REQUEST_PERMISSION] = function(_, params, ctx)
      return require('milk.permission').handle(params, ctx)
    end,
    -- The server withdraws a permission prompt of a cancelled turn; the turn's
    -- `turn_ended` update marks the prompt withdrawn in the chat.
    [vim.lsp.protocol.Methods.dollar_cancelRequest] = function() end,
  }
end

--- The client configuration for `vim.lsp.start` / `vim.lsp.config` built from the options.
--- @param opts milk.Options|nil
--- @return vim.lsp.ClientConfig
function M.client_config(opts)
  opts = opts or config.options
  local settings = M.wire_settings(opts.settings or {})
  return {
    name = M.NAME,
    cmd = config.server_cmd(opts),
    cmd_env = opts.cmd_env and vim.deepcopy(opts.cmd_env) or nil,
    root_markers = vim.deepcopy(opts.root_markers),
    -- For vim.lsp.enable (0.11): the marked folder, else the cwd, never "no workspace".
    root_dir = function(bufnr, on_dir)
      on_dir(M.root_for(bufnr, opts.root_markers))
    end,
    init_options = settings,
    settings = settings and { [methods.CONFIG_SECTION] = settings } or {},
    capabilities = M.capabilities(),
    handlers = M.handlers(),
    -- Settings given only as `settings.milk` (vim.lsp.config) also go out as
    -- initializationOptions, so the server has them from its first request on instead of
    -- after its workspace/configuration pull.
    before_init = function(params, cfg)
      if params.initializationOptions == nil and type(cfg.settings) == 'table' then
        params.initializationOptions = M.wire_settings(cfg.settings[methods.CONFIG_SECTION])
      end
    end,
    on_exit = function(_, _, client_id)
      vim.schedule(function()
        require('milk.chat').client_exited(client_id)
      end)
    end,
  }
end

--- The configuration to start with: on 0.11 `vim.lsp.config.milk` (lsp/milk.lua merged with
--- the user's `vim.lsp.config('milk', …)`), otherwise the one built from `setup()`.
function M.resolved_config()
  if vim.lsp.config then
    local ok, cfg = pcall(function()
      return vim.lsp.config[M.NAME]
    end)
    if ok and type(cfg) == 'table' and cfg.cmd then
      cfg = vim.deepcopy(cfg)
      cfg.name = M.NAME
      return cfg
    end
  end
  return M.client_config()
end

local function is_stopped(client)
  return call(client, 'is_stopped')
end

local function root_of(client)
  local wf = client.workspace_folders and client.workspace_folders[1]
  if wf and wf.name then
    return wf.name
  end
  if wf and wf.uri then
    return vim.uri_to_fname(wf.uri)
  end
  return client.root_dir or (client.config and client.config.root_dir)
end
M.root_of = root_of

--- The workspace folder of a client, as a `file://` URI.
function M.workspace_uri(client)
  local wf = client.workspace_folders and client.workspace_folders[1]
  if wf and wf.uri then
    return wf.uri
  end
  local root = root_of(client) or vim.fn.getcwd()
  return vim.uri_from_fname(root)
end

--- The directory a buffer belongs to (the cwd for buffers without a file).
local function buffer_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or vim.bo[bufnr].buftype ~= '' then
    return vim.fn.getcwd()
  end
  return vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(name, ':p')))
end

--- The workspace folder of a buffer: the nearest folder with a root marker, else the cwd.
function M.root_for(bufnr, markers)
  local dir = buffer_dir(bufnr)
  local root = markers and #markers > 0 and vim.fs.root(dir, markers) or nil
  return root or vim.fn.getcwd()
end
local root_for = M.root_for

local function contains(root, path)
  if not root or not path then
    return false
  end
  root = vim.fs.normalize(root)
  path = vim.fs.normalize(path)
  return path == root or vim.startswith(path, root .. '/')
end

--- A running milk client for the buffer: the chat's own client for a chat buffer, else one
--- whose workspace holds the buffer's file (or the cwd), else the only one.
--- @param bufnr integer|nil
--- @return vim.lsp.Client?
function M.find(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local clients = vim.tbl_filter(function(c)
    return not is_stopped(c)
  end, vim.lsp.get_clients({ name = M.NAME }))
  if #clients == 0 then
    return nil
  end
  local sid = vim.b[bufnr].milk_session
  if sid then
    local S = require('milk.chat').sessions[sid]
    if S and S.client_id then
      local c = vim.lsp.get_client_by_id(S.client_id)
      if c and not is_stopped(c) then
        return c
      end
    end
  end
  local dir = buffer_dir(bufnr)
  for _, c in ipairs(clients) do
    if contains(root_of(c), dir) then
      return c
    end
  end
  return clients[1]
end

--- A loaded file buffer inside the client's workspace folder.
local function attachable(buf, client)
  if not vim.api.nvim_buf_is_loaded(buf) or vim.bo[buf].buftype ~= '' then
    return false
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return false
  end
  return contains(root_of(client), vim.fs.normalize(vim.fn.fnamemodify(name, ':p')))
end

local attach_group

--- Attach the workspace's file buffers to the client (now and when they are opened), so
--- that the server reads their unsaved text and edits them through workspace/applyEdit.
--- (With `vim.lsp.enable('milk')` Neovim attaches them already.)
function M.attach_buffers(client)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if attachable(buf, client) and not vim.lsp.buf_is_attached(buf, client.id) then
      vim.lsp.buf_attach_client(buf, client.id)
    end
  end
  if attach_group then
    return
  end
  attach_group = vim.api.nvim_create_augroup('milk.attach', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufEnter' }, {
    group = attach_group,
    callback = function(ev)
      for _, c in ipairs(vim.lsp.get_clients({ name = M.NAME })) do
        if not is_stopped(c) and c.initialized and attachable(ev.buf, c)
          and not vim.lsp.buf_is_attached(ev.buf, c.id) then
          vim.lsp.buf_attach_client(ev.buf, c.id)
        end
      end
    end,
  })
end

--- Find or start the client for the current buffer, then call `cb(client)` once it is
--- initialized, or `cb(nil, message)`.
--- @param cb fun(client: vim.lsp.Client?, err: string?)
function M.ensure(cb)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = M.find(bufnr)
  if not client then
    local cfg = M.resolved_config()
    if type(cfg.cmd) == 'table' and vim.fn.executable(cfg.cmd[1]) ~= 1 then
      return cb(nil, ('milk: the server command %q was not found; :MilkInstall installs it (see :checkhealth milk)'):format(cfg.cmd[1]))
    end
    if type(cfg.root_dir) ~= 'string' then
      cfg.root_dir = root_for(bufnr, cfg.root_markers)
    end
    local start_opts = { bufnr = bufnr, silent = true }
    if has_011 then
      start_opts.attach = false
    end
    local id = vim.lsp.start(cfg, start_opts)
    client = id and vim.lsp.get_client_by_id(id) or nil
    if not client then
      return cb(nil, 'milk: could not start the server; see :checkhealth milk and :LspLog')
    end
  end
  if client.initialized then
    M.attach_buffers(client)
    return cb(client)
  end
  -- The first command waits for the server to start (about a second): say so.
  local cmd = type(client.config.cmd) == 'table' and client.config.cmd[1] or nil
  vim.notify(('milk: starting %s…'):format(cmd and vim.fs.basename(cmd) or 'milk-lsp'), vim.log.levels.INFO, { title = 'milk' })
  local deadline = vim.uv.now() + 30000
  local timer = assert(vim.uv.new_timer())
  timer:start(20, 20, vim.schedule_wrap(function()
    if timer:is_closing() then
      return
    end
    if client.initialized then
      timer:close()
      M.attach_buffers(client)
      cb(client)
    elseif is_stopped(client) or vim.uv.now() > deadline then
      timer:close()
      cb(nil, 'milk: the server did not start; see :checkhealth milk and :LspLog')
    end
  end))
end

--- Send a request; `cb(err, result)` gets a JSON-RPC error table or the result.
--- @return integer? request id
function M.request(client, method, params, cb)
  local ok, id = call(client, 'request', method, params, function(err, result)
    cb(err, result)
  end)
  if not ok then
    cb({ code = -32099, message = 'the milk server is not running' }, nil)
    return nil
  end
  return id
end

--- A short text for a JSON-RPC error from the server.
--- A message to the user, titled milk.
function M.notify(msg, level)
  vim.notify(msg, level or vim.log.levels.INFO, { title = 'milk' })
end

--- Tell the user that `what` failed, with the server's reason.
function M.fail(what, err)
  M.notify(('milk: %s failed: %s'):format(what, M.error_text(err)), vim.log.levels.ERROR)
end

--- A `User` autocommand for users' own hooks (MilkUndo, MilkReview, …).
function M.fire(pattern, data)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false, data = data })
end

function M.error_text(err)
  if type(err) ~= 'table' then
    return tostring(err)
  end
  local reason = type(err.data) == 'table' and err.data.reason or nil
  local msg = err.message or ('error ' .. tostring(err.code))
  if reason and not msg:find(reason, 1, true) then
    msg = reason .. ': ' .. msg
  end
  return msg
end

--- Push new settings to running clients (`workspace/didChangeConfiguration`).
function M.push_settings(settings)
  local wire = M.wire_settings(settings or {})
  for _, c in ipairs(vim.lsp.get_clients({ name = M.NAME })) do
    c.settings = wire and { [methods.CONFIG_SECTION] = wire } or {}
    call(c, 'notify', vim.lsp.protocol.Methods.workspace_didChangeConfiguration, {
      settings = wire and c.settings or { [methods.CONFIG_SECTION] = vim.NIL },
    })
  end
end

return M
