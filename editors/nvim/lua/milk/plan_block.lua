--- An advisor turn's plan in the chat (issue 32): Claude's checklist, written once under its
--- plan, each step's line rewritten in place as the step starts and ends, naming who does it
--- (`☐ 1. …`, `▸ 2. … · Claude…`, `☑ 1. … · local model`, `☒ 3. … · local model`).
local M = {}

local api = vim.api
local B = require('milk.buffer')
local one_line = require('milk.text').one_line

local ICON = { pending = '☐', in_progress = '▸', completed = '☑', failed = '☒' }
local WHO = { ['local'] = 'local model', claude = 'Claude' }
local GROUP = { failed = 'MilkNoticeError', in_progress = 'MilkNeed' }

local function step_line(n, step)
  local who = WHO[step.agent]
  local tail = ''
  if who and step.status == 'in_progress' then
    tail = ' · ' .. who .. '…'
  elseif who and step.status ~= 'pending' then
    tail = ' · ' .. who
  end
  return ('  %s %d. %s%s'):format(ICON[step.status] or '•', n, one_line(step.content or '', 300), tail)
end

--- Show `steps` (a `plan` update's, or a stored turn's `turnInfo.plan`) for `turn`.
function M.show(S, turn, steps)
  if type(steps) ~= 'table' or #steps == 0 then
    return
  end
  local shown = turn.plan
  if not shown or #shown.marks ~= #steps then
    local lines = { "Claude's plan (the local model does the steps):" }
    for n, step in ipairs(steps) do
      table.insert(lines, step_line(n, step))
    end
    local row = B.item(S, 'meta', lines, 'MilkMeta')
    shown = { marks = {}, lines = {} }
    for n, step in ipairs(steps) do
      shown.marks[n] = api.nvim_buf_set_extmark(S.buf, B.ns_mark, row + n, 0, {})
      shown.lines[n] = lines[n + 1]
      B.hl_line(S.buf, row + n, GROUP[step.status] or 'MilkMeta')
    end
    turn.plan = shown
    return
  end
  for n, step in ipairs(steps) do
    local line = step_line(n, step)
    if line ~= shown.lines[n] then
      local row = B.mark_row(S, shown.marks[n])
      if row then
        B.rewrite(S, row, line, shown.marks[n], GROUP[step.status] or 'MilkMeta')
      end
      shown.lines[n] = line
    end
  end
end

return M
