--- The plumbing of a chat buffer: appending items with the blank lines between them,
--- highlighting lines, rewriting a line in place (its marks kept), and the error notice
--- that waits to see whether it ends the turn.
---
--- Functions take the chat state `S` of a session (see milk.chat): `S.buf`, and the
--- bookkeeping `S.last` (kind of the last item written), `S.empty` and `S.pending_error`.
local M = {}

local api = vim.api
local split_lines = require('milk.text').split_lines

M.ns_hl = api.nvim_create_namespace('milk.chat.hl')
M.ns_mark = api.nvim_create_namespace('milk.chat.marks')
local ns_hl, ns_mark = M.ns_hl, M.ns_mark

local function with_modifiable(buf, fn)
  local was = vim.bo[buf].modifiable
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn)
  vim.bo[buf].modifiable = was
  if not ok then
    error(err, 0)
  end
end
M.with_modifiable = with_modifiable

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

--- Replace line `row` (0-based), keeping a mark placed on it, and highlight it.
local function rewrite(S, row, text, mark, group)
  with_modifiable(S.buf, function()
    api.nvim_buf_set_lines(S.buf, row, row + 1, false, { text })
  end)
  if mark then
    api.nvim_buf_set_extmark(S.buf, ns_mark, row, 0, { id = mark })
  end
  if group then
    hl_line(S.buf, row, group)
  end
end

local function mark_row(S, mark)
  return api.nvim_buf_get_extmark_by_id(S.buf, ns_mark, mark, {})[1]
end
M.mark_row = mark_row

--- Append lines at the end of the chat buffer; returns the row (0-based) of the first.
local function append(S, lines, group)
  local buf = S.buf
  local before = api.nvim_buf_line_count(buf)
  local first
  with_modifiable(buf, function()
    if S.empty then
      api.nvim_buf_clear_namespace(buf, ns_hl, 0, -1) -- the hint's
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

local flush_pending

local function item(S, kind, lines, group)
  flush_pending(S)
  separate(S, kind)
  local row = append(S, lines, group)
  S.last = kind
  return row
end

--- A line of its own (escalation, need, usage, …); returns its row.
local function meta(S, text, group)
  return item(S, 'meta', { text }, group or 'MilkMeta')
end

--- Empty the buffer and its marks.
function M.clear(S)
  with_modifiable(S.buf, function()
    api.nvim_buf_set_lines(S.buf, 0, -1, false, {})
  end)
  api.nvim_buf_clear_namespace(S.buf, ns_hl, 0, -1)
  api.nvim_buf_clear_namespace(S.buf, ns_mark, 0, -1)
  S.empty, S.last, S.pending_error = true, nil, nil
end

local SEVERITY_GROUP = { info = 'MilkNoticeInfo', warning = 'MilkNoticeWarn', error = 'MilkNoticeError' }
local SEVERITY_ICON = { info = 'ℹ', warning = '⚠', error = '✗' }
M.SEVERITY_GROUP = SEVERITY_GROUP
M.SEVERITY_ICON = SEVERITY_ICON

local function write_notice(S, severity, message)
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

--- An error notice waits: when the turn ends with it, it becomes the end line's
--- "failed: …" (one error, said once); anything else written first shows it as a notice.
flush_pending = function(S)
  local pending = S.pending_error
  if pending then
    S.pending_error = nil
    write_notice(S, 'error', pending.message)
  end
end

--- A notice line (several lines for a multi-line message), highlighted by severity.
--- @param turn_id string? an error of a running turn waits for how the turn ends
function M.notice(S, severity, message, turn_id)
  if severity == 'error' and turn_id then
    flush_pending(S)
    S.pending_error = { turn = turn_id, message = message }
    return
  end
  flush_pending(S)
  write_notice(S, severity, message)
end

M.follow = follow
M.hl_line = hl_line
M.rewrite = rewrite
M.append = append
M.separate = separate
M.item = item
M.meta = meta
M.write_notice = write_notice
M.flush_pending = flush_pending

return M
