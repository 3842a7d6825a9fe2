--- A session's stored history (`milk/session/get`) written into its chat buffer by the
--- functions that write the live chat, in the same order, so that it reads as the live
--- chat did: each turn's `turnInfo` gives its escalation, changes, usage and end.
local M = {}

local render = require('milk.render')
local chat = require('milk.chat')

--- What the server asks Claude when the user escalates without typing anything; such a
--- user record is shown as the request the user made.
local ESCALATE_PROMPT = 'Please take over and carry on with '

local function stored_status(call)
  if type(call.status) == 'string' then
    return call.status
  end
  return call.isError == true and 'failed' or 'completed'
end

local function render_call(S, turn_id, call)
  render.tool_call(S, {
    turnId = turn_id,
    toolCallId = call.toolCallId,
    name = call.name,
    input = call.input,
    status = stored_status(call),
  })
  if call.output ~= nil and call.output ~= vim.NIL then
    render.tool_result(S, {
      turnId = turn_id,
      toolCallId = call.toolCallId,
      output = call.output,
      isError = call.isError == true,
      status = stored_status(call),
    })
  end
end

--- A record with `segments`: its text and tool calls in the order the live chat showed
--- them. A call the segments do not name still goes after them, so nothing stored is lost.
local function render_segments(S, turn_id, rec)
  local calls, shown = {}, {}
  for _, call in ipairs(rec.toolCalls or {}) do
    calls[call.toolCallId] = call
  end
  for _, seg in ipairs(rec.segments) do
    if type(seg.text) == 'string' then
      render.stream(S, 'text', seg.text)
    elseif calls[seg.toolCallId] and not shown[seg.toolCallId] then
      shown[seg.toolCallId] = true
      render_call(S, turn_id, calls[seg.toolCallId])
    end
  end
  for _, call in ipairs(rec.toolCalls or {}) do
    if not shown[call.toolCallId] then
      render_call(S, turn_id, call)
    end
  end
end

local function render_part(S, turn, rec)
  render.ensure_header(S, turn, rec.agent)
  if type(rec.segments) == 'table' and #rec.segments > 0 then
    render_segments(S, turn.id, rec)
    return
  end
  -- Stored before segments: where the calls came in the text is unknown; calls first.
  for _, call in ipairs(rec.toolCalls or {}) do
    render_call(S, turn.id, call)
  end
  render.stream(S, 'text', rec.text)
end

local function opt(v)
  return v ~= vim.NIL and v or nil
end

--- How a stored turn ended: its changes, usage and end line, as the live turn showed them.
local function render_end(S, turn, turn_id, info)
  local changes = opt(info.changes)
  if type(changes) == 'table' and #changes > 0 then
    render.changes(S, turn_id, changes, info.undone == true)
  end
  render.usage(S, opt(info.usage))
  local err = opt(info.error)
  render.turn_end(S, info.agent or turn.agent, info.stopReason, type(err) == 'table' and err.message or nil)
end

--- One stored turn: the user's record, the agents' records, and how it ended.
local function render_turn(S, turn_id, user, answers, info)
  local turn = chat.new_turn(turn_id)
  turn.ended = true
  turn.last_seq = math.huge
  S.turns[turn_id] = turn
  local escalated = info and opt(info.escalated)
  if user then
    if escalated and escalated.by == 'user' and vim.startswith(user.text or '', ESCALATE_PROMPT) then
      local reason = escalated.reason
      render.user_escalation(S, (reason ~= 'user asked') and reason or nil)
    else
      render.user(S, user.text or '')
    end
  end
  if not info then -- stored before turnInfo: what the records say
    for _, rec in ipairs(answers) do
      render_part(S, turn, rec)
      if rec.status and rec.status ~= 'ok' then
        render.turn_end(S, rec.agent, rec.status == 'cancelled' and 'cancelled' or 'error')
      end
    end
    return
  end
  local plan = opt(info.plan)
  if type(plan) == 'table' and #plan > 0 then
    -- an advisor turn: Claude's plan, its checklist, then the steps in the order they ran
    render.header(S, turn, 'claude')
    local placed = false
    for _, rec in ipairs(answers) do
      render_part(S, turn, rec)
      if rec.agent == 'claude' and not placed then
        require('milk.plan_block').show(S, turn, plan)
        placed = true
      end
    end
    return render_end(S, turn, turn_id, info)
  end
  -- The turn started with the local model unless the user sent it to Claude.
  local first
  if escalated then
    first = escalated.by == 'user' and 'claude' or 'local'
  else
    first = (answers[1] and answers[1].agent) or info.agent
  end
  render.header(S, turn, first)
  for _, rec in ipairs(answers) do
    if rec.agent == 'local' then
      render_part(S, turn, rec)
    end
  end
  if escalated then
    render.escalated(S, escalated)
    render.ensure_header(S, turn, 'claude')
  end
  for _, rec in ipairs(answers) do
    if rec.agent ~= 'local' then
      render_part(S, turn, rec)
    end
  end
  render_end(S, turn, turn_id, info)
end

--- Render a session's stored history (`milk/session/get`), replacing the buffer.
--- @param S milk.ChatState
--- @param turns table[] TurnRecord list, oldest first
--- @param info table[]|nil TurnInfo list (`turnInfo`)
function M.render(S, turns, info)
  render.clear(S)
  S.turns = {}
  local info_of = {}
  for _, ti in ipairs(type(info) == 'table' and info or {}) do
    if ti.turnId then
      info_of[ti.turnId] = ti
    end
  end
  local order, grouped = {}, {}
  for _, rec in ipairs(turns or {}) do
    local id = rec.turnId or '?'
    local g = grouped[id]
    if not g then
      g = { answers = {} }
      grouped[id] = g
      table.insert(order, id)
    end
    if rec.role == 'user' then
      g.user = rec
    else
      table.insert(g.answers, rec)
    end
  end
  for _, id in ipairs(order) do
    local g = grouped[id]
    render_turn(S, id, g.user, g.answers, info_of[id])
  end
  if #order == 0 then
    render.hint(S)
  end
  require('milk.sources').mark(S)
  S.loaded = true
end

return M
