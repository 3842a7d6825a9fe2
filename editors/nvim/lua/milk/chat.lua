--- The chat of each session: its buffer and turn bookkeeping, and the handling of the
--- `milk/update` notifications that write it (seq gaps included). A reloaded session
--- (`milk/session/get` with its `turnInfo`) is written by the same functions, so it reads
--- as the live chat did.
local M = {}

local api = vim.api
local methods = require('milk.methods')
local status = require('milk.status')
local render = require('milk.render')
local window = require('milk.window')
local K = methods.kind

M.ns_hl = render.ns_hl
M.label = render.label
M.one_line = render.one_line
M.input_summary = render.input_summary
M.highlights = render.highlights
M.close = window.close

--- @class milk.Turn
--- @field id string
--- @field last_seq integer
--- @field gap boolean an update of this turn went missing
--- @field agent string? the agent of the last header written for this turn
--- @field ended boolean
--- @field permissions table[] open permission prompts of this turn
--- @field usage table? the sum of the turn's `usage` updates

--- @class milk.ChatState
--- @field id string session id
--- @field buf integer
--- @field client_id integer?
--- @field title string?
--- @field workspace string? the session's workspace folder (a path), from its SessionInfo
--- @field citations {turn: string, citations: table[]}? the last `citations` update
--- @field next_route {agent: string, reason: string}? where the next `auto` turn goes
--- @field turns table<string, milk.Turn>
--- @field tools table<string, table> tool blocks by turn and call id
--- @field changes table<string, table> the "files changed" line of each turn by turn id
--- @field changes_order string[] turn ids with changes, oldest first
--- @field last string? kind of the last item written ('user', 'header', 'text', 'thinking', 'tool', 'meta')
--- @field empty boolean nothing written yet
--- @field loaded boolean history fetched (or the session is new)

--- @type table<string, milk.ChatState>
M.sessions = {}

local function valid(S)
  return S and S.buf and api.nvim_buf_is_valid(S.buf)
end

--- Show the chat buffer of a session in the chat split.
--- @return integer? win
function M.show(session_id, opts)
  local S = M.sessions[session_id]
  if not valid(S) then
    return nil
  end
  return window.show(S.buf, opts)
end

local function set_keymaps(buf)
  -- A source line of an answer opens its file; other lines keep the keys' own meaning.
  -- Set first: a `ui.keymaps` key of the same name wins.
  for _, key in ipairs({ 'gf', 'gF' }) do
    vim.keymap.set('n', key, function()
      require('milk.sources').follow(key)
    end, { buffer = buf, desc = 'milk: open the source under the cursor' })
  end
  local keys = require('milk.config').options.ui.keymaps or {}
  local function map(name, rhs, desc)
    local lhs = keys[name]
    if lhs then
      vim.keymap.set('n', lhs, rhs, { buffer = buf, desc = desc, nowait = true })
    end
  end
  map('ask', function()
    require('milk.commands').ask({ prompt = true })
  end, 'milk: ask')
  map('cancel', function()
    require('milk.commands').cancel()
  end, 'milk: cancel the running turn')
  map('escalate', function()
    require('milk.commands').confirm_escalate()
  end, 'milk: hand the session to Claude (asks first)')
  map('close', M.close, 'milk: close the chat window')
  map('sessions', function()
    require('milk.commands').sessions()
  end, 'milk: sessions')
  map('review', function()
    require('milk.commands').review_at_cursor()
  end, 'milk: review the changes of the turn under the cursor')
  map('undo', function()
    require('milk.commands').undo_at_cursor()
  end, 'milk: undo the changes of the turn under the cursor')
end

-- Buffer names -----------------------------------------------------------------------

local NAME_PREFIX = 'milk://chat/'

--- The title shown for a session ("new session" until its first message names it).
function M.title(S)
  return (S and S.title and S.title ~= '') and S.title or 'new session'
end

local function buffer_named(name)
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_get_name(b) == name then
      return b
    end
  end
end

--- `milk://chat/<title>`, with a number when another buffer has that name.
local function free_name(S)
  local base = NAME_PREFIX .. M.title(S)
  local name, n = base, 1
  while true do
    local b = buffer_named(name)
    if b == nil or b == S.buf then
      return name
    end
    n = n + 1
    name = ('%s (%d)'):format(base, n)
  end
end

--- Name the buffer after the session's title. Renaming leaves Neovim an unloaded
--- buffer under the old name (the alternate file); it is wiped.
local function name_buffer(S)
  local old = api.nvim_buf_get_name(S.buf)
  local name = free_name(S)
  if old == name then
    return
  end
  api.nvim_buf_set_name(S.buf, name)
  if old ~= '' then
    local stray = buffer_named(old)
    if stray and stray ~= S.buf and not api.nvim_buf_is_loaded(stray) then
      pcall(api.nvim_buf_delete, stray, { force = true })
    end
  end
end

local function redraw_bars()
  pcall(vim.cmd, 'redrawstatus!')
end

--- The session's title changed (a SessionInfo, or its first message named it).
function M.set_title(S, title)
  if type(title) ~= 'string' or title == (S.title or '') then
    return
  end
  S.title = title
  name_buffer(S)
  redraw_bars()
end

--- Where the session's next `auto` turn goes (SessionInfo / TurnResult `nextRoute`).
function M.set_next_route(S, next_route)
  if type(next_route) ~= 'table' or not next_route.agent then
    return
  end
  S.next_route = { agent = next_route.agent, reason = next_route.reason }
  status.next_route(S.id, S.next_route)
  redraw_bars()
end

--- Take what a SessionInfo says about the session.
function M.set_info(S, info)
  if type(info) ~= 'table' then
    return
  end
  M.set_title(S, info.title)
  M.set_next_route(S, info.nextRoute)
  local folder = require('milk.sources').folder_path(info.workspaceFolder)
  if folder and folder ~= S.workspace then
    S.workspace = folder
    require('milk.sources').set_path(S)
  end
end

--- The chat buffer of a session that lost its state (found by its buffer variable).
local function existing_buffer(session_id)
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_valid(b) and vim.b[b].milk_chat and vim.b[b].milk_session == session_id then
      return b
    end
  end
end

--- The chat state of a session, created with its buffer when `create` is set.
--- @param session_id string
--- @param create {client_id: integer?, title: string?}|nil
--- @return milk.ChatState?
function M.get(session_id, create)
  local S = M.sessions[session_id]
  if S and not valid(S) then
    S = nil
  end
  if S or not create then
    if S and create and create.client_id then
      S.client_id = create.client_id
    end
    return S
  end
  local buf = existing_buffer(session_id) or api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].modifiable = false
  vim.b[buf].milk_chat = true
  vim.b[buf].milk_session = session_id
  S = {
    id = session_id,
    buf = buf,
    client_id = create.client_id,
    title = create.title,
    turns = {},
    tools = {},
    changes = {},
    changes_order = {},
    last = nil,
    empty = true,
    loaded = false,
  }
  name_buffer(S)
  render.clear(S)
  M.sessions[session_id] = S
  api.nvim_create_autocmd('BufWinEnter', {
    buffer = buf,
    callback = function()
      window.set_options(api.nvim_get_current_win())
    end,
  })
  api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      if M.sessions[session_id] and M.sessions[session_id].buf == buf then
        M.sessions[session_id] = nil
      end
    end,
  })
  set_keymaps(buf)
  return S
end

--- Forget a session (deleted on the server): wipe its buffer.
function M.drop(session_id)
  local S = M.sessions[session_id]
  M.sessions[session_id] = nil
  if valid(S) then
    pcall(api.nvim_buf_delete, S.buf, { force = true })
  end
end

--- Sessions of a client that exited: their running turns are over.
function M.client_exited(client_id)
  local ids = {}
  for sid, S in pairs(M.sessions) do
    if S.client_id == client_id then
      table.insert(ids, sid)
      for _, turn in pairs(S.turns) do
        if not turn.ended then
          turn.ended = true
          if valid(S) then
            render.meta(S, '— the milk server stopped', 'MilkNoticeError')
          end
        end
      end
    end
  end
  status.forget(ids)
end

--- What an empty session shows (until its first message).
function M.hint(S)
  render.hint(S)
end

--- The user's message, as sent.
function M.user(S, text, context)
  render.user(S, text, context)
end

--- The user asked for Claude (`:MilkEscalate`).
function M.user_escalation(S, reason)
  render.user_escalation(S, reason)
end

--- A permission prompt, written into the chat; the call's block says `pending` while it
--- is open. Returns a handle for `permission_answered`.
function M.permission_asked(p)
  local S = M.get(p.sessionId, {})
  local handle = render.permission_line(S, p)
  handle.turn_id, handle.call_id = p.turnId, p.toolCallId
  render.tool_status(S, p.turnId, p.toolCallId, 'pending')
  local turn = S.turns[p.turnId]
  if turn then
    table.insert(turn.permissions, handle)
  end
  return handle
end

--- Rewrite a permission line with the answer; the call's block runs or is denied.
--- @param option_id string? the answer given (nil: withdrawn)
function M.permission_answered(handle, answer, option_id)
  local first = not handle.answered
  render.permission_answer(handle, answer)
  local S = handle.S
  if not (first and option_id and valid(S)) then
    return
  end
  local turn = S.turns[handle.turn_id]
  if turn and turn.ended then
    return
  end
  local tool = render.find_tool(S, handle.turn_id, handle.call_id)
  if tool and tool.status == 'pending' then
    render.tool_status(S, handle.turn_id, handle.call_id, option_id == methods.permission.DENY and 'denied' or 'running')
  end
end

-- The update dispatcher -------------------------------------------------------------

local function new_turn(id)
  return { id = id, last_seq = 0, gap = false, agent = nil, ended = false, permissions = {} }
end
M.new_turn = new_turn

local handlers = {}

--- Where a turn another door runs was asked (`door` of an `elsewhere` turn_started).
local DOORS = { terminal = 'the terminal (milk-lsp chat)', vscode = 'VS Code', nvim = 'another Neovim', lsp = 'another editor', acp = 'an ACP client' }

handlers[K.TURN_STARTED] = function(S, turn, p)
  if p.elsewhere then
    -- another door's turn on this session: its message, then it streams here as it runs
    render.user(S, type(p.userText) == 'string' and p.userText or '')
    render.meta(S, ('↳ asked in %s; :MilkCancel stops it'):format(DOORS[p.door] or 'another door'), 'MilkMeta')
  end
  render.header(S, turn, p.agent)
  status.turn_started(S.id, p.agent)
end

handlers[K.TEXT] = function(S, turn, p)
  render.ensure_header(S, turn, p.agent)
  status.agent(S.id, p.agent)
  render.stream(S, 'text', p.delta)
end

handlers[K.THINKING] = function(S, turn, p)
  render.ensure_header(S, turn, p.agent)
  render.stream(S, 'thinking', p.delta)
end

handlers[K.TOOL_CALL] = function(S, turn, p)
  render.ensure_header(S, turn, p.agent)
  render.tool_call(S, p)
end

handlers[K.TOOL_RESULT] = function(S, _, p)
  render.tool_result(S, p)
end

handlers[K.ESCALATED] = function(S, turn, p)
  render.escalated(S, p)
  status.agent(S.id, 'claude')
  render.ensure_header(S, turn, 'claude')
end

handlers[K.NEED] = function(S, _, p)
  render.meta(S, '◎ need: ' .. render.one_line(p.currentNeed, 300), 'MilkNeed')
end

handlers[K.USAGE] = function(_, turn, p)
  turn.usage = render.add_usage(turn.usage, p)
end

handlers[K.NOTICE] = function(S, turn, p)
  render.notice(S, p.severity, p.message, not turn.ended and turn.id or nil)
end

handlers[K.CHANGES] = function(S, turn, p)
  render.changes(S, turn.id, p.changes)
end

handlers[K.PLAN] = function(S, turn, p)
  require('milk.plan_block').show(S, turn, p.steps)
end

handlers[K.CITATIONS] = function(S, turn, p)
  require('milk.sources').cited(S, turn.id, p)
end

handlers[K.TURN_ENDED] = function(S, turn, p)
  turn.ended = true
  for _, handle in ipairs(turn.permissions) do
    local open = not handle.answered
    M.permission_answered(handle, 'withdrawn (turn ended)')
    if open and handle.withdraw then
      handle.withdraw() -- the review closes
    end
  end
  if p.stopReason == 'cancelled' then
    render.close_open_tools(S, turn.id)
  end
  local message = render.take_error(S, turn.id, p.stopReason)
  render.usage(S, turn.usage)
  render.turn_end(S, p.agent or turn.agent, p.stopReason, message)
  require('milk.sources').mark(S) -- a sources block whose update went missing too
  status.turn_ended(S.id)
end

--- Handle one `milk/update` notification.
--- @param p table the params
--- @param client_id integer?
function M.on_update(p, client_id)
  if type(p) ~= 'table' or type(p.sessionId) ~= 'string' then
    return
  end
  -- a turn another door runs is shown in a chat of its session that is open here
  local S = M.get(p.sessionId, not p.elsewhere and { client_id = client_id } or nil)
  if not S then
    return
  end
  local turn_id = p.turnId or '?'
  local turn = S.turns[turn_id]
  if not turn then
    turn = new_turn(turn_id)
    S.turns[turn_id] = turn
  end
  local seq = tonumber(p.seq)
  if seq then
    if seq <= turn.last_seq then
      return -- a duplicate or a late update already covered
    end
    if seq > turn.last_seq + 1 then
      local missed = seq - turn.last_seq - 1
      turn.gap = true
      render.meta(S, ('… %d update%s missed; the turn is reloaded when it ends'):format(missed, missed == 1 and '' or 's'), 'MilkMeta')
    end
    turn.last_seq = seq
  end
  local handler = handlers[p.kind]
  if handler then
    handler(S, turn, p)
  end
end

--- A turn sent from here ended (its `TurnResult`): the next route, and changes whose
--- update went missing.
function M.turn_result(S, result)
  if type(result) ~= 'table' then
    return
  end
  M.set_next_route(S, result.nextRoute)
  if result.turnId and type(result.changes) == 'table' and not S.changes[result.turnId] then
    render.changes(S, result.turnId, result.changes)
  end
end

--- Whether a turn of this session lost updates (so the history should be reloaded).
function M.had_gap(session_id, turn_id)
  local S = M.sessions[session_id]
  local turn = S and S.turns[turn_id]
  return turn ~= nil and turn.gap
end

--- Render a session's stored history (`milk/session/get`), replacing the buffer.
--- @param S milk.ChatState
--- @param turns table[] TurnRecord list, oldest first
--- @param info table[]|nil TurnInfo list (`turnInfo`)
function M.render_history(S, turns, info)
  require('milk.history').render(S, turns, info)
end

--- A line for something the plugin itself has to say (a failed request, …).
function M.notice(S, severity, message)
  render.notice(S, severity, message)
end

--- Mark a turn's changes undone (its line says so).
function M.changes_undone(S, turn_id)
  render.changes_undone(S, turn_id)
end

--- The turn whose "files changed" line is at the cursor of the chat window.
function M.changes_at_cursor()
  local buf = api.nvim_get_current_buf()
  local sid = vim.b[buf].milk_session
  local S = sid and M.sessions[sid]
  if not S then
    return nil
  end
  local row = api.nvim_win_get_cursor(0)[1] - 1
  return S, render.changes_at(S, row)
end

--- The last turn of the session with changes not undone yet.
function M.last_changes(S)
  for i = #S.changes_order, 1, -1 do
    local entry = S.changes[S.changes_order[i]]
    if entry and not entry.undone then
      return entry
    end
  end
end

return M
