--- Tool blocks of the chat: a call's first line (`⚙ name · status`, rewritten in place as
--- the status changes), then, after a blank line, its input and output indented as a
--- markdown code block, so nothing of theirs is concealed or emphasized. Blocks are keyed
--- by turn and call id.
local M = {}

local api = vim.api
local B = require('milk.buffer')
local text = require('milk.text')
local code, split_lines = text.code, text.split_lines
local with_modifiable, follow, hl_line, rewrite, mark_row, item = B.with_modifiable, B.follow, B.hl_line, B.rewrite, B.mark_row, B.item
local ns_mark = B.ns_mark

--- First characters of a tool block's first line; its other lines are indented by BODY.
M.TOOL_PREFIX = '⚙ '
M.BODY = '    '
local TOOL_PREFIX, BODY = M.TOOL_PREFIX, M.BODY

local function input_lines(input)
  local lines = {}
  for _, l in ipairs(text.input_text_lines(input)) do
    table.insert(lines, BODY .. l)
  end
  return lines
end

--- The word a tool block shows for each status.
M.TOOL_STATUS_WORD = {
  pending = 'pending',
  running = 'running',
  completed = 'done',
  failed = 'failed',
  denied = 'denied',
  cancelled = 'cancelled',
}

local STATUS_GROUP = {
  pending = 'MilkToolPending',
  running = 'MilkToolRunning',
  completed = 'MilkToolDone',
  failed = 'MilkNoticeError',
  denied = 'MilkNoticeWarn',
  cancelled = 'MilkNoticeWarn',
}

--- Calls milk made itself before the model's request (its read-first and its look; ids
--- `milk-read-…`, `milk-look-…`): the model may read the same file again, and the two rows
--- must not look like one call shown twice.
local function by_milk(call_id)
  return type(call_id) == 'string' and (vim.startswith(call_id, 'milk-read-') or vim.startswith(call_id, 'milk-look-'))
end

local function tool_header_text(name, st, milk)
  local line = ('%s%s · %s'):format(TOOL_PREFIX, code(name), M.TOOL_STATUS_WORD[st] or tostring(st))
  return milk and (line .. ' · by milk, for the model') or line
end

local function tool_row(S, tool)
  return mark_row(S, tool.mark)
end

local function set_tool_status(S, tool, st)
  tool.status = st
  local row = tool_row(S, tool)
  if row then
    rewrite(S, row, tool_header_text(tool.name, st, tool.by_milk), tool.mark, STATUS_GROUP[st] or 'MilkTool')
  end
end

--- The rows of a tool block's body: from the line after the blank one under its first
--- line to (excluding) `stop`.
local function body_end(S, row)
  local buf = S.buf
  local count = api.nvim_buf_line_count(buf)
  local after = row + 2
  while after < count do
    local l = api.nvim_buf_get_lines(buf, after, after + 1, false)[1]
    if not vim.startswith(l, BODY) then
      break
    end
    after = after + 1
  end
  return math.min(after, count)
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
    api.nvim_buf_set_lines(S.buf, row + 2, row + 2 + (tool.input_count or 0), false, lines)
  end)
  tool.input, tool.input_count = key, #lines
end

--- Tool blocks are keyed by turn and call: the server keeps a call id unique only within
--- its turn, and a restarted model server reuses ids such as `call_2_0`.
local function tool_key(turn_id, call_id)
  return tostring(turn_id or '') .. '\0' .. tostring(call_id)
end

--- The tool block of a turn's call, if it has one.
function M.find_tool(S, turn_id, call_id)
  return call_id and S.tools[tool_key(turn_id, call_id)] or nil
end

--- Close the fold of a new block at `row` in every window showing the chat. Folds made by
--- 'foldexpr' after the user opened one come open (Neovim keeps the opened state for the
--- folds that follow), so each new block is closed here: it starts folded, as the first did.
local function fold_new_block(buf, row)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    api.nvim_win_call(win, function()
      if vim.wo.foldmethod == 'expr' and vim.fn.foldlevel(row + 1) > 0 and vim.fn.foldclosed(row + 1) == -1 then
        vim.cmd(('silent! %dfoldclose'):format(row + 1))
      end
    end)
  end
end

--- A tool call appeared (a folded block) or changed status (its first line is rewritten).
function M.tool_call(S, p)
  local id = p.toolCallId and tool_key(p.turnId, p.toolCallId) or ('?' .. tostring(vim.uv.hrtime()))
  local tool = S.tools[id]
  if tool then
    if p.status and p.status ~= tool.status then
      set_tool_status(S, tool, p.status)
    end
    update_input(S, tool, p.input)
    return
  end
  local st = p.status or 'pending'
  local milk = by_milk(p.toolCallId)
  local lines = { tool_header_text(p.name or '?', st, milk), '' }
  local inputs = input_lines(p.input)
  vim.list_extend(lines, inputs)
  local row = item(S, 'tool', lines)
  hl_line(S.buf, row, STATUS_GROUP[st] or 'MilkTool')
  tool = { name = p.name or '?', status = st, input_count = #inputs, input = vim.inspect(p.input), turn = p.turnId, by_milk = milk }
  tool.mark = api.nvim_buf_set_extmark(S.buf, ns_mark, row, 0, {})
  S.tools[id] = tool
  fold_new_block(S.buf, row)
end

--- Set the status of a turn's tool block (a permission question opened or was answered).
function M.tool_status(S, turn_id, call_id, st)
  local tool = M.find_tool(S, turn_id, call_id)
  if tool and tool.status ~= st then
    set_tool_status(S, tool, st)
  end
end

--- Blocks of a turn still pending or running when it ended: cancelled, as the server
--- stores them.
function M.close_open_tools(S, turn_id)
  for _, tool in pairs(S.tools) do
    if tool.turn == turn_id and (tool.status == 'pending' or tool.status == 'running') then
      set_tool_status(S, tool, 'cancelled')
    end
  end
end

--- A tool's output, put under its block.
function M.tool_result(S, p)
  local tool = M.find_tool(S, p.turnId, p.toolCallId)
  if not tool then
    M.tool_call(S, {
      turnId = p.turnId,
      toolCallId = p.toolCallId,
      name = p.name or 'tool',
      status = p.isError and 'failed' or 'completed',
    })
    tool = M.find_tool(S, p.turnId, p.toolCallId)
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
  local row = tool and tool_row(S, tool)
  if not row then
    return
  end
  local buf = S.buf
  local count = api.nvim_buf_line_count(buf)
  local after = body_end(S, row)
  with_modifiable(buf, function()
    api.nvim_buf_set_lines(buf, after, after, false, lines)
  end)
  if after == count then
    follow(buf, count)
  end
  local final = p.status
  if final == nil then
    if p.isError then
      final = (tool.status == 'denied' or tool.status == 'cancelled') and tool.status or 'failed'
    elseif tool.status == 'pending' or tool.status == 'running' then
      final = 'completed'
    end
  end
  if final and final ~= tool.status then
    set_tool_status(S, tool, final)
  end
end

return M
