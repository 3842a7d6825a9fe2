--- The chat buffers: one markdown scratch buffer per session, written as `milk/update`
--- notifications stream in, and the split window that shows them.
local M = {}

local api = vim.api
local methods = require('milk.methods')
local status = require('milk.status')
local K = methods.kind

local ns_hl = api.nvim_create_namespace('milk.chat.hl')
local ns_mark = api.nvim_create_namespace('milk.chat.marks')
M.ns_hl, M.ns_mark = ns_hl, ns_mark

M.AGENT_LABEL = { ['local'] = 'local model', claude = 'Claude' }
local TOOL_PREFIX = '⚙ '
local BODY = '    '

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

local function label(agent)
  return M.AGENT_LABEL[agent] or tostring(agent or '?')
end
M.label = label

local function one_line(s, max)
  s = tostring(s or ''):gsub('%s*\n%s*', ' ')
  max = max or 200
  if #s > max then
    s = s:sub(1, max - 1) .. '…'
  end
  return s
end
M.one_line = one_line

-- Buffer plumbing -------------------------------------------------------------------

local function valid(S)
  return S and S.buf and api.nvim_buf_is_valid(S.buf)
end

local function with_modifiable(buf, fn)
  local was = vim.bo[buf].modifiable
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn)
  vim.bo[buf].modifiable = was
  if not ok then
    error(err, 0)
  end
end

--- Windows (any tab) showing `buf`.
local function windows_of(buf)
  local wins = {}
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == buf then
      table.insert(wins, win)
    end
  end
  return wins
end

--- Keep windows that were at the end of the buffer at the end after a write.
local function follow(buf, before_count)
  local count = api.nvim_buf_line_count(buf)
  local current = api.nvim_get_current_win()
  for _, win in ipairs(windows_of(buf)) do
    local row = api.nvim_win_get_cursor(win)[1]
    if win ~= current or row >= before_count then
      pcall(api.nvim_win_set_cursor, win, { count, 0 })
    end
  end
end

local function hl_line(buf, row, group)
  local line = api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
  api.nvim_buf_set_extmark(buf, ns_hl, row, 0, { end_row = row, end_col = #line, hl_group = group })
end

--- Append lines at the end of the chat buffer; returns the row (0-based) of the first.
local function append(S, lines, group)
  local buf = S.buf
  local before = api.nvim_buf_line_count(buf)
  local first
  with_modifiable(buf, function()
    if S.empty then
      api.nvim_buf_set_lines(buf, 0, -1, false, lines)
      first = 0
      S.empty = false
    else
      first = before
      api.nvim_buf_set_lines(buf, -1, -1, false, lines)
    end
  end)
  if group then
    for i = 0, #lines - 1 do
      hl_line(buf, first + i, group)
    end
  end
  follow(buf, before)
  return first
end

--- A blank line between items, except right under a header and between meta lines.
local function separate(S, kind)
  if S.empty or S.last == nil or S.last == 'header' then
    return
  end
  if S.last == 'meta' and kind == 'meta' then
    return
  end
  local last = api.nvim_buf_get_lines(S.buf, -2, -1, false)[1]
  if last ~= '' then
    append(S, { '' })
  end
end

local function item(S, kind, lines, group)
  separate(S, kind)
  local row = append(S, lines, group)
  S.last = kind
  return row
end

local function meta(S, text, group)
  return item(S, 'meta', { text }, group or 'MilkMeta')
end

-- Window ----------------------------------------------------------------------------

local function set_window_options(win)
  local wo = vim.wo[win][0]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = 'no'
  wo.foldmethod = 'expr'
  wo.foldexpr = "v:lua.require'milk.chat'.foldexpr()"
  wo.foldtext = "v:lua.require'milk.chat'.foldtext()"
  wo.foldlevel = 0
  wo.foldenable = true
  wo.conceallevel = 2
end

--- Fold level of a chat line: a tool block is its `⚙` line plus the indented lines under it.
function M.foldexpr(lnum)
  lnum = lnum or vim.v.lnum
  local line = vim.fn.getline(lnum)
  if vim.startswith(line, TOOL_PREFIX) then
    return '>1'
  end
  if vim.startswith(line, BODY) then
    return '='
  end
  return '0'
end

function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart)
  local n = vim.v.foldend - vim.v.foldstart
  return ('%s  [%d line%s]'):format(first, n, n == 1 and '' or 's')
end

local function chat_window()
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    local b = api.nvim_win_get_buf(win)
    if vim.b[b].milk_chat then
      return win
    end
  end
end

--- Show the chat buffer of a session in the chat split (opened if needed).
--- @param session_id string
--- @param opts {focus: boolean?}|nil
--- @return integer? win
function M.show(session_id, opts)
  opts = opts or {}
  local S = M.sessions[session_id]
  if not valid(S) then
    return nil
  end
  local ui = require('milk.config').options.ui
  local win = chat_window()
  if win then
    api.nvim_win_set_buf(win, S.buf)
  elseif ui.split == 'tab' then
    local cur = api.nvim_get_current_win()
    vim.cmd('tab split')
    win = api.nvim_get_current_win()
    api.nvim_win_set_buf(win, S.buf)
    if not opts.focus then
      pcall(api.nvim_set_current_win, cur)
    end
  else
    local vertical = ui.split == 'left' or ui.split == 'right'
    local size = ui.size
    if not size then
      size = math.floor((vertical and vim.o.columns or vim.o.lines) / 2)
    end
    win = api.nvim_open_win(S.buf, false, {
      split = ui.split,
      win = -1,
      width = vertical and size or nil,
      height = (not vertical) and size or nil,
    })
  end
  set_window_options(win)
  pcall(api.nvim_win_set_cursor, win, { api.nvim_buf_line_count(S.buf), 0 })
  if opts.focus then
    api.nvim_set_current_win(win)
  end
  return win
end

--- Close the chat window of the current tab, if one is open.
function M.close()
  local win = chat_window()
  if win and #api.nvim_tabpage_list_wins(0) > 1 then
    api.nvim_win_close(win, false)
  end
end

-- Session state ---------------------------------------------------------------------

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
  with_modifiable(buf, function()
    api.nvim_buf_set_lines(buf, 0, -1, false, {})
  end)
  api.nvim_buf_clear_namespace(buf, ns_hl, 0, -1)
  api.nvim_buf_clear_namespace(buf, ns_mark, 0, -1)
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
  M.sessions[session_id] = S
  api.nvim_create_autocmd('BufWinEnter', {
    buffer = buf,
    callback = function()
      set_window_options(api.nvim_get_current_win())
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
            meta(S, '— the milk server stopped', 'MilkNoticeError')
          end
        end
      end
    end
  end
  status.forget(ids)
end

-- Items -----------------------------------------------------------------------------

local function split_lines(text)
  return vim.split(text or '', '\n', { plain = true })
end

local function range_label(range)
  if type(range) ~= 'table' or not range.start then
    return ''
  end
  local s, e = range.start.line + 1, range['end'].line + 1
  return s == e and (' L%d'):format(s) or (' L%d-L%d'):format(s, e)
end

--- The user's message, as sent.
--- @param S milk.ChatState
--- @param text string
--- @param context table[]|nil ContextItem list
function M.user(S, text, context)
  local lines = { '## You' }
  vim.list_extend(lines, split_lines(text))
  for _, c in ipairs(context or {}) do
    local name = vim.fn.fnamemodify(vim.uri_to_fname(c.uri), ':~:.')
    table.insert(lines, ('> context: `%s`%s'):format(name, range_label(c.range)))
  end
  item(S, 'header', lines)
  hl_line(S.buf, api.nvim_buf_line_count(S.buf) - #lines, 'MilkUser')
  S.last = 'user'
end

--- The user asked for Claude (`:MilkEscalate`).
function M.user_escalation(S, reason)
  local text = '(escalate to Claude' .. ((reason and reason ~= '') and (': ' .. reason) or '') .. ')'
  item(S, 'header', { '## You', text })
  hl_line(S.buf, api.nvim_buf_line_count(S.buf) - 2, 'MilkUser')
  S.last = 'user'
end

local function header(S, turn, agent, reason)
  local text = '## ' .. label(agent)
  if reason and reason ~= '' then
    text = text .. ' · ' .. one_line(reason, 120)
  end
  item(S, 'header', { text }, agent == 'claude' and 'MilkAgentClaude' or 'MilkAgentLocal')
  turn.agent = agent
end

local function ensure_header(S, turn, agent)
  if agent and turn.agent ~= agent then
    header(S, turn, agent, nil)
  end
end

--- Streamed text or thinking: appended to the last line while the stream goes on.
local function stream(S, kind, delta)
  if delta == nil or delta == '' then
    return
  end
  local prefix = kind == 'thinking' and '> ' or ''
  local buf = S.buf
  if S.last ~= kind then
    item(S, kind, { prefix }, nil)
  end
  local parts = split_lines(delta)
  local before = api.nvim_buf_line_count(buf)
  with_modifiable(buf, function()
    local last = api.nvim_buf_get_lines(buf, -2, -1, false)[1] or ''
    local new = { last .. parts[1] }
    for i = 2, #parts do
      table.insert(new, prefix .. parts[i])
    end
    api.nvim_buf_set_lines(buf, -2, -1, false, new)
  end)
  follow(buf, before)
end

local function input_lines(input)
  if type(input) == 'table' then
    local cmd = input.command or input.cmd
    if type(cmd) == 'string' then
      local lines = {}
      for i, l in ipairs(split_lines(cmd)) do
        table.insert(lines, BODY .. (i == 1 and '$ ' or '  ') .. l)
      end
      return lines
    end
    local ok, json = pcall(vim.json.encode, input)
    return { BODY .. one_line(ok and json or vim.inspect(input), 500) }
  end
  if input == nil or input == vim.NIL then
    return {}
  end
  return { BODY .. one_line(tostring(input), 500) }
end
M.input_summary = function(input)
  if type(input) == 'table' and type(input.command) == 'string' then
    return one_line(input.command, 200)
  end
  local ok, json = pcall(vim.json.encode, input)
  return one_line(ok and json or tostring(input), 200)
end

local STATUS_GROUP = {
  pending = 'MilkToolPending',
  running = 'MilkToolRunning',
  completed = 'MilkToolDone',
  failed = 'MilkNoticeError',
  denied = 'MilkNoticeWarn',
}

local function tool_header_text(name, st)
  return ('%s%s · %s'):format(TOOL_PREFIX, name, st)
end

local function tool_row(S, tool)
  local pos = api.nvim_buf_get_extmark_by_id(S.buf, ns_mark, tool.mark, {})
  return pos[1]
end

local function set_tool_status(S, tool, st)
  tool.status = st
  local row = tool_row(S, tool)
  if not row then
    return
  end
  local text = tool_header_text(tool.name, st)
  with_modifiable(S.buf, function()
    api.nvim_buf_set_lines(S.buf, row, row + 1, false, { text })
  end)
  api.nvim_buf_set_extmark(S.buf, ns_mark, row, 0, { id = tool.mark })
  hl_line(S.buf, row, STATUS_GROUP[st] or 'MilkTool')
end

--- Claude's tool calls first arrive with an empty input that a later update fills in.
local function update_input(S, tool, input)
  if input == nil or input == vim.NIL or (type(input) == 'table' and next(input) == nil) then
    return
  end
  local key = vim.inspect(input)
  if key == tool.input then
    return
  end
  local row = tool_row(S, tool)
  if not row then
    return
  end
  local lines = input_lines(input)
  with_modifiable(S.buf, function()
    api.nvim_buf_set_lines(S.buf, row + 1, row + 1 + (tool.input_count or 0), false, lines)
  end)
  tool.input, tool.input_count = key, #lines
end

--- A tool call appeared (a folded block) or changed status (its first line is rewritten).
function M.tool_call(S, p)
  local id = p.toolCallId or ('?' .. tostring(vim.uv.hrtime()))
  local tool = S.tools[id]
  if tool then
    set_tool_status(S, tool, p.status or tool.status)
    update_input(S, tool, p.input)
    return
  end
  local st = p.status or 'pending'
  local lines = { tool_header_text(p.name or '?', st) }
  local inputs = input_lines(p.input)
  vim.list_extend(lines, inputs)
  local row = item(S, 'tool', lines)
  hl_line(S.buf, row, STATUS_GROUP[st] or 'MilkTool')
  tool = { name = p.name or '?', status = st, input_count = #inputs, input = vim.inspect(p.input) }
  tool.mark = api.nvim_buf_set_extmark(S.buf, ns_mark, row, 0, {})
  S.tools[id] = tool
end

--- A tool's output, put under its block.
function M.tool_result(S, p)
  local tool = S.tools[p.toolCallId]
  if not tool then
    M.tool_call(S, {
      toolCallId = p.toolCallId,
      name = p.name or 'tool',
      status = p.isError and 'failed' or 'completed',
    })
    tool = S.tools[p.toolCallId]
  end
  local output = p.output
  if type(output) ~= 'string' then
    local ok, json = pcall(vim.json.encode, output)
    output = ok and json or tostring(output)
  end
  local lines = { BODY .. (p.isError and '✗ error:' or '→ output:') }
  output = output:gsub('\n$', '')
  for _, l in ipairs(split_lines(output)) do
    table.insert(lines, BODY .. '│ ' .. l)
  end
  local row = tool_row(S, tool)
  if not row then
    return
  end
  local buf = S.buf
  local count = api.nvim_buf_line_count(buf)
  local after = row + 1
  while after < count do
    local l = api.nvim_buf_get_lines(buf, after, after + 1, false)[1]
    if not vim.startswith(l, BODY) then
      break
    end
    after = after + 1
  end
  local before = count
  with_modifiable(buf, function()
    api.nvim_buf_set_lines(buf, after, after, false, lines)
  end)
  if after == count then
    follow(buf, before)
  end
  if p.isError and tool.status ~= 'failed' and tool.status ~= 'denied' then
    set_tool_status(S, tool, 'failed')
  elseif not p.isError and (tool.status == 'pending' or tool.status == 'running') then
    set_tool_status(S, tool, 'completed')
  end
end

local SEVERITY_GROUP = { info = 'MilkNoticeInfo', warning = 'MilkNoticeWarn', error = 'MilkNoticeError' }
local SEVERITY_ICON = { info = 'ℹ', warning = '⚠', error = '✗' }
M.SEVERITY_GROUP = SEVERITY_GROUP

local function fmt_usage(p)
  local parts = {
    ('%s in / %s out'):format(tostring(p.inputTokens or 0), tostring(p.outputTokens or 0)),
  }
  if type(p.cacheReadTokens) == 'number' and p.cacheReadTokens > 0 then
    table.insert(parts, ('%d cache read'):format(p.cacheReadTokens))
  end
  if type(p.cacheCreationTokens) == 'number' and p.cacheCreationTokens > 0 then
    table.insert(parts, ('%d cache write'):format(p.cacheCreationTokens))
  end
  if type(p.costUsd) == 'number' then
    table.insert(parts, ('$%.4f'):format(p.costUsd))
  end
  return table.concat(parts, ' · ')
end
M.fmt_usage = fmt_usage

--- A permission prompt, written into the chat; returns a handle for `permission_answered`.
function M.permission_asked(p)
  local S = M.get(p.sessionId, {})
  local text = ('? %s asks to use %s: %s'):format(label(p.agent), tostring(p.tool), M.input_summary(p.input))
  local row = meta(S, text, 'MilkNoticeWarn')
  local handle = { S = S, mark = api.nvim_buf_set_extmark(S.buf, ns_mark, row, 0, {}), text = text }
  local turn = S.turns[p.turnId]
  if turn then
    table.insert(turn.permissions, handle)
  end
  return handle
end

--- Rewrite a permission line with the answer.
function M.permission_answered(handle, answer)
  local S = handle.S
  if not valid(S) or handle.answered then
    return
  end
  handle.answered = true
  local row = api.nvim_buf_get_extmark_by_id(S.buf, ns_mark, handle.mark, {})[1]
  if not row then
    return
  end
  with_modifiable(S.buf, function()
    api.nvim_buf_set_lines(S.buf, row, row + 1, false, { handle.text .. ' → ' .. answer })
  end)
  hl_line(S.buf, row, answer:lower():match('^den') and 'MilkNoticeWarn' or 'MilkMeta')
end

-- The update dispatcher -------------------------------------------------------------

local function new_turn(id)
  return { id = id, last_seq = 0, gap = false, agent = nil, ended = false, permissions = {} }
end

local handlers = {}

handlers[K.TURN_STARTED] = function(S, turn, p)
  header(S, turn, p.agent, p.reason)
  status.turn_started(S.id, p.agent)
end

handlers[K.TEXT] = function(S, turn, p)
  ensure_header(S, turn, p.agent)
  status.agent(S.id, p.agent)
  stream(S, 'text', p.delta)
end

handlers[K.THINKING] = function(S, turn, p)
  ensure_header(S, turn, p.agent)
  stream(S, 'thinking', p.delta)
end

handlers[K.TOOL_CALL] = function(S, turn, p)
  ensure_header(S, turn, p.agent)
  M.tool_call(S, p)
end

handlers[K.TOOL_RESULT] = function(S, _, p)
  M.tool_result(S, p)
end

handlers[K.ESCALATED] = function(S, turn, p)
  local text = ('↑ escalated to Claude by %s'):format(p.by == 'agent' and 'the local model' or 'you')
  if p.reason and p.reason ~= '' then
    text = text .. ': ' .. one_line(p.reason, 300)
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
  meta(S, text, 'MilkEscalated')
  status.agent(S.id, 'claude')
  ensure_header(S, turn, 'claude')
end

handlers[K.NEED] = function(S, _, p)
  meta(S, '◎ need: ' .. one_line(p.currentNeed, 300), 'MilkNeed')
end

handlers[K.USAGE] = function(S, _, p)
  meta(S, ('Σ %s: %s'):format(label(p.agent), fmt_usage(p)), 'MilkUsage')
end

handlers[K.NOTICE] = function(S, _, p)
  local sev = SEVERITY_GROUP[p.severity] and p.severity or 'info'
  local lines = split_lines(p.message)
  lines[1] = ('%s %s: %s'):format(SEVERITY_ICON[sev], sev, lines[1])
  separate(S, 'meta')
  local row = append(S, lines)
  for i = 0, #lines - 1 do
    hl_line(S.buf, row + i, SEVERITY_GROUP[sev])
  end
  S.last = 'meta'
end

handlers[K.TURN_ENDED] = function(S, turn, p)
  turn.ended = true
  for _, handle in ipairs(turn.permissions) do
    M.permission_answered(handle, 'withdrawn (turn ended)')
  end
  local reason = p.stopReason or 'end_turn'
  meta(S, ('— %s · %s'):format(label(p.agent or turn.agent), reason),
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
      meta(S, ('… %d update%s missed; the turn is reloaded when it ends'):format(missed, missed == 1 and '' or 's'), 'MilkMeta')
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
  with_modifiable(S.buf, function()
    api.nvim_buf_set_lines(S.buf, 0, -1, false, {})
  end)
  api.nvim_buf_clear_namespace(S.buf, ns_hl, 0, -1)
  api.nvim_buf_clear_namespace(S.buf, ns_mark, 0, -1)
  S.empty, S.last, S.tools, S.turns = true, nil, {}, {}
  for _, rec in ipairs(turns or {}) do
    local turn = new_turn(rec.turnId)
    turn.ended = true
    turn.last_seq = math.huge
    S.turns[rec.turnId or '?'] = turn
    if rec.role == 'user' then
      M.user(S, rec.text or '')
    else
      header(S, turn, rec.agent, nil)
      for _, call in ipairs(rec.toolCalls or {}) do
        M.tool_call(S, {
          toolCallId = call.toolCallId,
          name = call.name,
          input = call.input,
          status = call.isError and 'failed' or 'completed',
        })
        if call.output ~= nil and call.output ~= vim.NIL then
          M.tool_result(S, { toolCallId = call.toolCallId, output = call.output, isError = call.isError })
        end
      end
      stream(S, 'text', rec.text)
      if rec.status and rec.status ~= 'ok' then
        meta(S, ('— %s · %s'):format(label(rec.agent), rec.status), 'MilkNoticeWarn')
      end
    end
  end
  S.loaded = true
end

--- A line for something the plugin itself has to say (a failed request, …).
function M.notice(S, severity, message)
  handlers[K.NOTICE](S, nil, { severity = severity, message = message })
end

--- Define the highlight groups (linked, so colorschemes can override them).
function M.highlights()
  local links = {
    MilkUser = 'Title',
    MilkAgentLocal = 'Function',
    MilkAgentClaude = 'Special',
    MilkTool = 'Comment',
    MilkToolPending = 'Comment',
    MilkToolRunning = 'DiagnosticInfo',
    MilkToolDone = 'Comment',
    MilkMeta = 'Comment',
    MilkUsage = 'Comment',
    MilkNeed = 'DiagnosticHint',
    MilkEscalated = 'DiagnosticWarn',
    MilkNoticeInfo = 'DiagnosticInfo',
    MilkNoticeWarn = 'DiagnosticWarn',
    MilkNoticeError = 'DiagnosticError',
  }
  for group, target in pairs(links) do
    api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

return M
