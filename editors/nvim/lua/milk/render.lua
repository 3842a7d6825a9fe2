--- Writing a chat buffer: the lines and highlights of each kind of item, streamed text
--- appended in place, tool blocks updated where they stand.
---
--- Every function takes the chat state `S` of a session (see milk.chat): `S.buf`, and the
--- bookkeeping `S.last` (kind of the last item), `S.empty` and `S.tools`.
local M = {}

local api = vim.api

M.ns_hl = api.nvim_create_namespace('milk.chat.hl')
M.ns_mark = api.nvim_create_namespace('milk.chat.marks')
local ns_hl, ns_mark = M.ns_hl, M.ns_mark

--- First characters of a tool block's first line; its other lines are indented by BODY.
M.TOOL_PREFIX = '⚙ '
M.BODY = '    '
local TOOL_PREFIX, BODY = M.TOOL_PREFIX, M.BODY

M.AGENT_LABEL = { ['local'] = 'local model', claude = 'Claude' }

--- "local model" / "Claude".
function M.label(agent)
  return M.AGENT_LABEL[agent] or tostring(agent or '?')
end
local label = M.label

--- One line of at most `max` bytes.
function M.one_line(s, max)
  s = tostring(s or ''):gsub('%s*\n%s*', ' ')
  max = max or 200
  if #s > max then
    s = s:sub(1, max - 1) .. '…'
  end
  return s
end
local one_line = M.one_line

-- Buffer plumbing -------------------------------------------------------------------

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

--- A line of its own (escalation, need, usage, end of turn, …); returns its row.
function M.meta(S, text, group)
  return meta(S, text, group)
end

--- Empty the buffer and its marks.
function M.clear(S)
  with_modifiable(S.buf, function()
    api.nvim_buf_set_lines(S.buf, 0, -1, false, {})
  end)
  api.nvim_buf_clear_namespace(S.buf, ns_hl, 0, -1)
  api.nvim_buf_clear_namespace(S.buf, ns_mark, 0, -1)
  S.empty, S.last, S.tools = true, nil, {}
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

--- A turn's header naming the agent (and why it answers).
function M.header(S, turn, agent, reason)
  local text = '## ' .. label(agent)
  if reason and reason ~= '' then
    text = text .. ' · ' .. one_line(reason, 120)
  end
  item(S, 'header', { text }, agent == 'claude' and 'MilkAgentClaude' or 'MilkAgentLocal')
  turn.agent = agent
end

--- A new header when another agent starts speaking in the turn.
function M.ensure_header(S, turn, agent)
  if agent and turn.agent ~= agent then
    M.header(S, turn, agent, nil)
  end
end

--- Streamed text or thinking: appended to the last line while the stream goes on.
function M.stream(S, kind, delta)
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
--- A one-line summary of a tool input (the command of a shell tool).
function M.input_summary(input)
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

--- Tool blocks are keyed by turn and call: the server keeps a call id unique only within
--- its turn, and a restarted model server reuses ids such as `call_2_0`.
local function tool_key(p)
  if not p.toolCallId then
    return '?' .. tostring(vim.uv.hrtime())
  end
  return tostring(p.turnId or '') .. '\0' .. tostring(p.toolCallId)
end

--- A tool call appeared (a folded block) or changed status (its first line is rewritten).
function M.tool_call(S, p)
  local id = tool_key(p)
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
  local tool = S.tools[tool_key(p)]
  if not tool then
    M.tool_call(S, {
      turnId = p.turnId,
      toolCallId = p.toolCallId,
      name = p.name or 'tool',
      status = p.isError and 'failed' or 'completed',
    })
    tool = S.tools[tool_key(p)]
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
M.SEVERITY_ICON = SEVERITY_ICON

--- "120 in / 30 out · 800 cache read · $0.0123"
function M.fmt_usage(p)
  local parts = {}
  local tokens = (p.inputTokens or 0) ~= 0 or (p.outputTokens or 0) ~= 0
  if tokens or type(p.costUsd) ~= 'number' then -- a cost-only line (Claude's total) skips 0/0
    table.insert(parts, ('%s in / %s out'):format(tostring(p.inputTokens or 0), tostring(p.outputTokens or 0)))
  end
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


--- A notice line (several lines for a multi-line message), highlighted by severity.
function M.notice(S, severity, message)
  local sev = SEVERITY_GROUP[severity] and severity or 'info'
  local lines = split_lines(message)
  lines[1] = ('%s %s: %s'):format(SEVERITY_ICON[sev], sev, lines[1])
  separate(S, 'meta')
  local row = append(S, lines)
  for i = 0, #lines - 1 do
    hl_line(S.buf, row + i, SEVERITY_GROUP[sev])
  end
  S.last = 'meta'
end

--- A permission question; returns a handle for `permission_answer`.
function M.permission_line(S, p)
  local text = ('? %s asks to use %s: %s'):format(label(p.agent), tostring(p.tool), M.input_summary(p.input))
  local row = meta(S, text, 'MilkNoticeWarn')
  return { S = S, mark = api.nvim_buf_set_extmark(S.buf, ns_mark, row, 0, {}), text = text }
end

--- Rewrite a permission line with the answer (once).
function M.permission_answer(handle, answer)
  local S = handle.S
  if handle.answered or not (S.buf and api.nvim_buf_is_valid(S.buf)) then
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
