--- What milk is doing right now, for the statusline: idle, or which agent runs a turn.
local M = {}

--- @class milk.RunningTurn
--- @field agent string 'local'|'claude'
--- @field permission boolean waiting for the user's answer to a permission prompt
--- @field order integer when this turn (or its last change) happened

--- @type table<string, milk.RunningTurn> running turns by session id
M.running = {}
--- @type table<string, {agent: string, reason: string?}> where each session's next turn goes
M.next = {}
local order = 0
local redraw_pending = false

local function changed()
  if redraw_pending then
    return
  end
  redraw_pending = true
  vim.schedule(function()
    redraw_pending = false
    pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'MilkStatus', modeline = false })
    pcall(vim.cmd, 'redrawstatus!')
  end)
end

local function touch(session_id)
  order = order + 1
  local turn = M.running[session_id]
  if turn then
    turn.order = order
  end
  return turn
end

--- @param session_id string
--- @param agent string
function M.turn_started(session_id, agent)
  M.running[session_id] = { agent = agent or 'local', permission = false, order = 0 }
  touch(session_id)
  changed()
end

--- The agent of a running turn changed (an escalation, or Claude's first text).
function M.agent(session_id, agent)
  local turn = touch(session_id)
  if turn and agent and turn.agent ~= agent then
    turn.agent = agent
    changed()
  end
end

--- A permission prompt opened (`true`) or was answered (`false`).
function M.permission(session_id, waiting)
  local turn = touch(session_id)
  if turn then
    turn.permission = waiting
    changed()
  end
end

function M.turn_ended(session_id)
  if M.running[session_id] then
    M.running[session_id] = nil
    changed()
  end
end

--- Where a session's next `auto` turn goes (`nextRoute`).
function M.next_route(session_id, next_route)
  local old = M.next[session_id]
  M.next[session_id] = next_route
  if not old or not next_route or old.agent ~= next_route.agent then
    changed()
  end
end

--- Forget every turn of a client that went away.
--- @param session_ids string[]
function M.forget(session_ids)
  for _, sid in ipairs(session_ids) do
    M.running[sid] = nil
  end
  changed()
end

local function current_session()
  local ok, commands = pcall(require, 'milk.commands')
  return ok and commands.current or nil
end

--- @return {state: 'off'|'idle'|'local'|'claude', permission: boolean, session: string?, running: integer, next: {agent: string, reason: string?}?}
function M.get()
  local latest, latest_sid, count = nil, nil, 0
  for sid, turn in pairs(M.running) do
    count = count + 1
    if not latest or turn.order > latest.order then
      latest, latest_sid = turn, sid
    end
  end
  if latest then
    return {
      state = latest.agent == 'claude' and 'claude' or 'local',
      permission = latest.permission,
      session = latest_sid,
      running = count,
      next = M.next[latest_sid],
    }
  end
  local clients = vim.lsp.get_clients({ name = 'milk' })
  local sid = current_session()
  return {
    state = #clients > 0 and 'idle' or 'off',
    permission = false,
    running = 0,
    session = sid,
    next = sid and M.next[sid] or nil,
  }
end

local labels = { off = '', idle = 'milk: idle', ['local'] = 'milk: local…', claude = 'milk: Claude…' }

--- The statusline component: "" (no server running), "milk: idle", "milk: local…",
--- "milk: Claude…", with " (permission?)" while a permission prompt waits, and
--- " · next: Claude" when the current session's next turn goes to Claude.
--- @return string
function M.text()
  local s = M.get()
  local text = labels[s.state]
  if s.permission then
    text = text .. ' (permission?)'
  end
  if s.state == 'idle' and s.next and s.next.agent == 'claude' then
    text = text .. ' · next: Claude'
  end
  return text
end

return M
