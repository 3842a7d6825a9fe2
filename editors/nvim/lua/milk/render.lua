--- Writing a chat buffer: the lines and highlights of each kind of item (messages,
--- headers, streamed text, usage, escalations, changes, questions, the end of a turn).
--- Tool blocks are milk.tool_block's, the buffer plumbing milk.buffer's.
---
--- The buffer is markdown, so whatever comes from a tool or a file is written where markdown
--- leaves it alone: tool input and output as an indented code block, names and commands on
--- other lines as code spans. Nothing of theirs is concealed, emphasized or flagged as a
--- markdown error.
local M = {}

local api = vim.api
local B = require('milk.buffer')
local text = require('milk.text')
local tool_block = require('milk.tool_block')

local label, one_line, code, split_lines = text.label, text.one_line, text.code, text.split_lines
local with_modifiable, follow, hl_line, rewrite, mark_row = B.with_modifiable, B.follow, B.hl_line, B.rewrite, B.mark_row
local append, separate, item, meta, flush_pending = B.append, B.separate, B.item, B.meta, B.flush_pending
local ns_hl, ns_mark = B.ns_hl, B.ns_mark

M.ns_hl, M.ns_mark = ns_hl, ns_mark
M.AGENT_LABEL = text.AGENT_LABEL
M.label, M.one_line, M.code, M.short_count = label, one_line, code, text.short_count
M.input_summary, M.input_text_lines = text.input_summary, text.input_text_lines
M.TOOL_PREFIX, M.BODY, M.TOOL_STATUS_WORD = tool_block.TOOL_PREFIX, tool_block.BODY, tool_block.TOOL_STATUS_WORD
M.tool_call, M.tool_result, M.tool_status = tool_block.tool_call, tool_block.tool_result, tool_block.tool_status
M.find_tool, M.close_open_tools = tool_block.find_tool, tool_block.close_open_tools
M.with_modifiable, M.mark_row, M.meta, M.notice = with_modifiable, mark_row, meta, B.notice
M.SEVERITY_GROUP, M.SEVERITY_ICON = B.SEVERITY_GROUP, B.SEVERITY_ICON

--- First characters of the line that lists the files a turn changed.
M.CHANGES_PREFIX = '✎ '

--- Empty the buffer, its marks and the blocks and changes it showed.
function M.clear(S)
  B.clear(S)
  S.tools, S.changes, S.changes_order = {}, {}, {}
end

--- What an empty session shows until its first message (replaced by it).
function M.hint(S)
  if not S.empty then
    return
  end
  local lines = {
    'This session is empty. Type :Milk <question> to ask (or press i here).',
    ':MilkLocal <question> asks the local model, :Milk! <question> asks Claude.',
    'A selection goes along with :\'<,\'>Milk. More in :help milk.',
  }
  with_modifiable(S.buf, function()
    api.nvim_buf_set_lines(S.buf, 0, -1, false, lines)
  end)
  for i = 0, #lines - 1 do
    hl_line(S.buf, i, 'MilkMeta')
  end
end

-- Items -----------------------------------------------------------------------------

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
    table.insert(lines, ('> context: %s%s'):format(code(name), range_label(c.range)))
  end
  item(S, 'header', lines)
  hl_line(S.buf, api.nvim_buf_line_count(S.buf) - #lines, 'MilkUser')
  S.last = 'user'
end

--- The words of a user escalation (`:MilkEscalate`), live and reloaded alike.
function M.escalation_request(reason)
  return '(escalate to Claude' .. ((reason and reason ~= '') and (': ' .. one_line(reason, 300)) or '') .. ')'
end

--- The user asked for Claude (`:MilkEscalate`).
function M.user_escalation(S, reason)
  item(S, 'header', { '## You', M.escalation_request(reason) })
  hl_line(S.buf, api.nvim_buf_line_count(S.buf) - 2, 'MilkUser')
  S.last = 'user'
end

--- A turn's header naming the agent that speaks.
function M.header(S, turn, agent)
  item(S, 'header', { '## ' .. label(agent) }, agent == 'claude' and 'MilkAgentClaude' or 'MilkAgentLocal')
  turn.agent = agent
end

--- A new header when another agent starts speaking in the turn.
function M.ensure_header(S, turn, agent)
  if agent and turn.agent ~= agent then
    M.header(S, turn, agent)
  end
end

--- Streamed text or thinking: appended to the last line while the stream goes on.
function M.stream(S, kind, delta)
  if delta == nil or delta == '' then
    return
  end
  local prefix = kind == 'thinking' and '> ' or ''
  local buf = S.buf
  if S.last ~= kind or S.pending_error then
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

-- Usage, the end of a turn --------------------------------------------------------

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

--- Add one `usage` update to a turn's total (the server sums them the same way).
function M.add_usage(total, p)
  total = total or { inputTokens = 0, outputTokens = 0 }
  total.inputTokens = total.inputTokens + (tonumber(p.inputTokens) or 0)
  total.outputTokens = total.outputTokens + (tonumber(p.outputTokens) or 0)
  for _, k in ipairs({ 'cacheReadTokens', 'cacheCreationTokens', 'costUsd' }) do
    if type(p[k]) == 'number' then
      total[k] = (total[k] or 0) + p[k]
    end
  end
  return total
end

--- The usage line of a turn: its whole use, after everything it belongs to.
function M.usage(S, total)
  if type(total) ~= 'table' then
    return
  end
  if (total.inputTokens or 0) == 0 and (total.outputTokens or 0) == 0 and type(total.costUsd) ~= 'number' then
    return
  end
  meta(S, 'Σ usage: ' .. M.fmt_usage(total), 'MilkUsage')
end

--- The plain words of how a turn ended.
function M.end_text(agent, stop, message)
  local words
  if stop == 'end_turn' or stop == nil then
    words = 'done'
  elseif stop == 'cancelled' then
    words = 'cancelled'
  elseif stop == 'max_turns' then
    words = 'stopped: too many tool rounds'
  elseif stop == 'error' then
    words = 'failed' .. ((message and message ~= '') and (': ' .. message) or '')
  else
    words = tostring(stop)
  end
  return ('— %s · %s'):format(label(agent), words)
end

--- The error message a failed turn ends with (its waiting error notice, taken).
function M.take_error(S, turn_id, stop)
  local pending = S.pending_error
  if stop == 'error' and pending and pending.turn == turn_id then
    S.pending_error = nil
    return pending.message
  end
end

--- The last line of a turn.
function M.turn_end(S, agent, stop, message)
  flush_pending(S)
  local group = (stop == 'end_turn' or stop == nil) and 'MilkMeta' or (stop == 'error' and 'MilkNoticeError' or 'MilkNoticeWarn')
  local lines = split_lines(M.end_text(agent, stop, message))
  separate(S, 'meta')
  local row = append(S, lines)
  for i = 0, #lines - 1 do
    hl_line(S.buf, row + i, group)
  end
  S.last = 'meta'
end

--- The escalation line: how Claude is reached and why, in plain words.
--- @param p {by: string, reason: string?, mode: string?, contextChars: integer?}
function M.escalation_text(p)
  local chars = type(p.contextChars) == 'number' and p.contextChars or nil
  local summary = chars and (M.short_count(chars) .. '-char') or nil
  local what
  if p.mode == 'resume' then
    what = "back to Claude's conversation" .. ((chars and chars > 0) and (' (' .. M.short_count(chars) .. ' chars of context)') or '')
  elseif p.mode == 'returning' then
    what = "back to Claude's conversation" .. (chars and (' with a ' .. summary .. ' update') or '')
  elseif p.mode == 'fresh' then
    what = 'sent to Claude in a new conversation' .. (chars and (' with a ' .. summary .. ' summary') or '')
  else
    what = 'sent to Claude' .. (chars and (' with a ' .. summary .. ' summary') or '')
  end
  local reason = p.reason and p.reason ~= vim.NIL and one_line(p.reason, 300) or ''
  local why
  if p.by == 'fallback' then
    why = 'the local model failed' .. (reason ~= '' and (': ' .. reason) or '')
  elseif p.by == 'agent' then
    why = 'the local model asked' .. (reason ~= '' and (': ' .. reason) or '')
  elseif reason == '' or reason == 'user asked' then
    why = 'you asked'
  elseif reason == 'continuing with Claude' then
    why = 'you escalated this session'
  elseif reason == "answering Claude's question" then
    why = reason
  else
    why = 'you asked: ' .. reason
  end
  return '↑ ' .. what .. ' · ' .. why
end

--- The escalation line.
function M.escalated(S, p)
  meta(S, M.escalation_text(p), 'MilkEscalated')
end

-- Changes of a turn ----------------------------------------------------------------

--- "2 files changed (+5 −1) · <CR> review · u undo" (or "· undone").
function M.changes_text(changes, undone)
  local added, removed = 0, 0
  for _, c in ipairs(changes) do
    added = added + (tonumber(c.added) or 0)
    removed = removed + (tonumber(c.removed) or 0)
  end
  local n = #changes
  local text = ('%s%d file%s changed'):format(M.CHANGES_PREFIX, n, n == 1 and '' or 's')
  if added + removed > 0 then
    text = text .. (' (+%d −%d)'):format(added, removed)
  end
  local keys = require('milk.config').options.ui.keymaps or {}
  local actions = {}
  if keys.review then
    table.insert(actions, keys.review .. ' review')
  end
  if undone then
    table.insert(actions, 'undone')
  elseif keys.undo then
    table.insert(actions, keys.undo .. ' undo')
  end
  if #actions > 0 then
    text = text .. ' · ' .. table.concat(actions, ' · ')
  end
  return text
end

--- The line under a turn that changed files; `S.changes[turn_id]` remembers it.
function M.changes(S, turn_id, changes, undone)
  if type(changes) ~= 'table' or #changes == 0 then
    return
  end
  local entry = S.changes[turn_id]
  if entry then -- already shown (the update, then the TurnResult)
    entry.changes = changes
    return
  end
  local row = meta(S, M.changes_text(changes, undone), undone and 'MilkMeta' or 'MilkChanges')
  entry = { turn = turn_id, changes = changes, undone = undone or false }
  entry.mark = api.nvim_buf_set_extmark(S.buf, ns_mark, row, 0, {})
  S.changes[turn_id] = entry
  table.insert(S.changes_order, turn_id)
end

--- A turn's changes were undone: its line says so.
function M.changes_undone(S, turn_id)
  local entry = S.changes[turn_id]
  if not entry then
    return
  end
  entry.undone = true
  local row = mark_row(S, entry.mark)
  if row then
    rewrite(S, row, M.changes_text(entry.changes, true), entry.mark, 'MilkMeta')
  end
end

--- The changes entry whose line is at `row` (0-based).
function M.changes_at(S, row)
  for _, entry in pairs(S.changes) do
    if mark_row(S, entry.mark) == row then
      return entry
    end
  end
end

-- Permission questions -------------------------------------------------------------

--- What a permission question asks, in one line: "Claude wants to run `cmd`", …
function M.question_text(p)
  local who = label(p.agent)
  local tool = tostring(p.tool)
  local input = type(p.input) == 'table' and p.input or {}
  if tool == 'hand_off_to_claude' then
    return ('%s could not finish: hand this turn to Claude?'):format(who)
  end
  if type(input.command) == 'string' then
    return ('%s wants to run %s'):format(who, code(M.input_summary(input, 160)))
  end
  local summary = M.input_summary(input, 160)
  if summary == '' then
    return ('%s wants to use %s'):format(who, code(tool))
  end
  return ('%s wants to use %s on %s'):format(who, code(tool), code(summary))
end

--- A permission question; returns a handle for `permission_answer`.
function M.permission_line(S, p)
  local text = '? ' .. M.question_text(p)
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
  local row = mark_row(S, handle.mark)
  if row then
    rewrite(S, row, handle.text .. ' → ' .. answer, nil,
      answer:lower():match('^den') and 'MilkNoticeWarn' or 'MilkMeta')
  end
end

--- Define the highlight groups (linked, so colorschemes can override them).
function M.highlights()
  local links = {
    MilkUser = 'Title',
    MilkAgentLocal = 'String', -- not Function: the default colorscheme gives it Special's colour
    MilkAgentClaude = 'Special',
    MilkTool = 'Comment',
    MilkToolPending = 'DiagnosticWarn',
    MilkToolRunning = 'DiagnosticInfo',
    MilkToolDone = 'Comment',
    MilkMeta = 'Comment',
    MilkUsage = 'Comment',
    MilkNeed = 'DiagnosticHint',
    MilkEscalated = 'DiagnosticWarn',
    MilkChanges = 'DiagnosticHint',
    MilkNextClaude = 'DiagnosticWarn',
    MilkNoticeInfo = 'DiagnosticInfo',
    MilkNoticeWarn = 'DiagnosticWarn',
    MilkNoticeError = 'DiagnosticError',
    MilkSource = 'Underlined', -- a source line: gf opens it
    MilkSourceProposed = 'DiagnosticUnnecessary', -- a file the answer proposes: not there
  }
  for group, target in pairs(links) do
    api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

return M
