--- The chat of each session: its buffer and turn bookkeeping, and the handling of the
--- `milk/update` notifications that write it (seq gaps included).
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

--- @class milk.ChatState
--- @field id string session id
--- @field buf integer
--- @field client_id integer?
--- @field title string?
--- @field turns table<string, milk.Turn>
--- @field tools table<string, {mark: integer, name: string, status: string}>
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
  local keys = require('milk.config').options.ui.keymaps or {}
  local function map(name, rhs, desc)
    local lhs = keys[name]
    if lhs then
      vim.keymap.set('n', lhs, rhs, { buffer = buf, desc = desc, nowait = true })
    end
  end
  map('ask', function()
    require('milk.commands').ask({})
  end, 'milk: ask')
  map('cancel', function()
    require('milk.commands').cancel()
  end, 'milk: cancel the running turn')
  map('escalate', function()
    require('milk.commands').escalate({})
  end, 'milk: escalate to Claude')
  map('close', M.close, 'milk: close the chat window')
  map('sessions', function()
    require('milk.commands').sessions()
  end, 'milk: sessions')
end

local function buffer_name(session_id)
  return 'milk://chat/' .. session_id
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
  local buf = vim.fn.bufnr(buffer_name(session_id))
  if buf == -1 then
    buf = api.nvim_create_buf(false, true)
    api.nvim_buf_set_name(buf, buffer_name(session_id))
  end
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
    last = nil,
    empty = true,
    loaded = false,
  }
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

--- The user's message, as sent.
function M.user(S, text, context)
  render.user(S, text, context)
end

--- The user asked for Claude (`:MilkEscalate`).
function M.user_escalation(S, reason)
  render.user_escalation(S, reason)
end

--- A permission prompt, written into the chat; returns a handle for `permission_answered`.
function M.permission_asked(p)
  local S = M.get(p.sessionId, {})
  local handle = render.permission_line(S, p)
  local turn = S.turns[p.turnId]
  if turn then
    table.insert(turn.permissions, handle)
  end
  return handle
end

--- Rewrite a permission line with the answer.
function M.permission_answered(handle, answer)
  render.permission_answer(handle, answer)
end

-- The update dispatcher -------------------------------------------------------------

local function new_turn(id)
  return { id = id, last_seq = 0, gap = false, agent = nil, ended = false, permissions = {} }
end

local handlers = {}

handlers[K.TURN_STARTED] = function(S, turn, p)
  render.header(S, turn, p.agent, p.reason)
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
  local text
  if p.by == 'fallback' then
    text = '↑ the local model failed; handed to Claude'
  else
    text = ('↑ escalated to Claude by %s'):format(p.by == 'agent' and 'the local model' or 'you')
  end
  if p.reason and p.reason ~= '' then
    text = text .. ': ' .. render.one_line(p.reason, 300)
  end
  local extra = {}
  if p.mode then
    table.insert(extra, 'context ' .. tostring(p.mode))
  end
  if type(p.contextChars) == 'number' then
    table.insert(extra, ('%d chars'):format(p.contextChars))
  end
  if #extra > 0 then
    text = text .. ' (' .. table.concat(extra, ', ') .. ')'
  end
  render.meta(S, text, 'MilkEscalated')
  status.agent(S.id, 'claude')
  render.ensure_header(S, turn, 'claude')
end

handlers[K.NEED] = function(S, _, p)
  render.meta(S, '◎ need: ' .. render.one_line(p.currentNeed, 300), 'MilkNeed')
end

handlers[K.USAGE] = function(S, _, p)
  render.meta(S, ('Σ %s: %s'):format(render.label(p.agent), render.fmt_usage(p)), 'MilkUsage')
end

handlers[K.NOTICE] = function(S, _, p)
  render.notice(S, p.severity, p.message)
end

handlers[K.TURN_ENDED] = function(S, turn, p)
  turn.ended = true
  for _, handle in ipairs(turn.permissions) do
    M.permission_answered(handle, 'withdrawn (turn ended)')
  end
  local reason = p.stopReason or 'end_turn'
  render.meta(S, ('— %s · %s'):format(render.label(p.agent or turn.agent), reason),
    reason == 'end_turn' and 'MilkMeta' or (reason == 'error' and 'MilkNoticeError' or 'MilkNoticeWarn'))
  status.turn_ended(S.id)
end

--- Handle one `milk/update` notification.
--- @param p table the params
--- @param client_id integer?
function M.on_update(p, client_id)
  if type(p) ~= 'table' or type(p.sessionId) ~= 'string' then
    return
  end
  local S = M.get(p.sessionId, { client_id = client_id })
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

--- Whether a turn of this session lost updates (so the history should be reloaded).
function M.had_gap(session_id, turn_id)
  local S = M.sessions[session_id]
  local turn = S and S.turns[turn_id]
  return turn ~= nil and turn.gap
end

--- Render a session's stored history (`milk/session/get`), replacing the buffer.
--- @param S milk.ChatState
--- @param turns table[] TurnRecord list, oldest first
function M.render_history(S, turns)
  render.clear(S)
  S.turns = {}
  for _, rec in ipairs(turns or {}) do
    local turn = new_turn(rec.turnId)
    turn.ended = true
    turn.last_seq = math.huge
    S.turns[rec.turnId or '?'] = turn
    if rec.role == 'user' then
      M.user(S, rec.text or '')
    else
      render.header(S, turn, rec.agent, nil)
      for _, call in ipairs(rec.toolCalls or {}) do
        render.tool_call(S, {
          turnId = rec.turnId,
          toolCallId = call.toolCallId,
          name = call.name,
          input = call.input,
          status = call.isError and 'failed' or 'completed',
        })
        if call.output ~= nil and call.output ~= vim.NIL then
          render.tool_result(S, {
            turnId = rec.turnId,
            toolCallId = call.toolCallId,
            output = call.output,
            isError = call.isError,
          })
        end
      end
      render.stream(S, 'text', rec.text)
      if rec.status and rec.status ~= 'ok' then
        render.meta(S, ('— %s · %s'):format(render.label(rec.agent), rec.status), 'MilkNoticeWarn')
      end
    end
  end
  S.loaded = true
end

--- A line for something the plugin itself has to say (a failed request, …).
function M.notice(S, severity, message)
  render.notice(S, severity, message)
end

return M
