-- Tool input and output are shown literally on screen, with Neovim's markdown syntax and
-- with treesitter's markdown (conceallevel 2, as the chat window sets it): no concealed
-- underscores, no bold, no markdownError on `read_file`. Folds the user opened stay open
-- while later turns are written. (Synthetic updates, drawn on the headless screen.)
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local CODE = 'if __name__ == "__main__":'

--- The text drawn on screen for buffer line `lnum` of window `win`.
local function screen_line(win, lnum)
  local pos = vim.fn.screenpos(win, lnum, 1)
  if pos.row == 0 then
    return nil
  end
  local chars = {}
  for col = 1, vim.o.columns do
    table.insert(chars, vim.fn.screenstring(pos.row, col))
  end
  return table.concat(chars)
end

--- Highlight groups and captures at a buffer position (syntax and treesitter).
local function groups_at(buf, row, col)
  local out = {}
  local info = vim.inspect_pos(buf, row, col, { syntax = true, treesitter = true, extmarks = false, semantic_tokens = false })
  for _, s in ipairs(info.syntax) do
    table.insert(out, s.hl_group)
  end
  for _, t in ipairs(info.treesitter) do
    table.insert(out, t.capture)
  end
  return out
end

local BAD = { markdownError = true, markdownBold = true, markdownItalic = true, markdownBoldItalic = true,
  ['markup.strong'] = true, ['markup.italic'] = true }

H.run(function()
  H.setup_milk()
  vim.cmd('syntax on')
  local chat = require('milk.chat')
  local sid = 'literal'
  local seq = 0
  local function up(turn, kind, fields)
    seq = seq + 1
    chat.on_update(vim.tbl_extend('force', { sessionId = sid, turnId = turn, seq = seq, kind = kind }, fields or {}), nil)
  end
  up('t1', 'turn_started', { agent = 'local', route = 'auto', reason = 'default' })
  up('t1', 'tool_call', { agent = 'local', toolCallId = 'c1', name = 'read_file', input = { path = '__init__.py' }, status = 'running' })
  up('t1', 'tool_result', { agent = 'local', toolCallId = 'c1', output = 'import os\n' .. CODE .. '\n    main()', isError = false })
  up('t1', 'tool_call', { agent = 'local', toolCallId = 'c2', name = 'run_command', input = { command = 'python -c \'' .. CODE .. ' pass\'' }, status = 'running' })
  up('t1', 'tool_result', { agent = 'local', toolCallId = 'c2', output = '**not bold** _not italic_', isError = false })
  up('t1', 'text', { agent = 'local', delta = 'Done.' })
  up('t1', 'turn_ended', { agent = 'local', stopReason = 'end_turn' })

  local S = chat.sessions[sid]
  vim.cmd('silent! only')
  vim.api.nvim_set_current_buf(S.buf)
  local win = vim.api.nvim_get_current_win()
  require('milk.window').set_options(win)
  H.check('the chat window conceals (as set)', vim.wo[win].conceallevel == 2)
  vim.cmd('normal! zR') -- open every fold: the bodies are drawn
  local lines = vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
  local code_row = H.find_line(lines, CODE, true)
  local cmd_row = H.find_line(lines, '$ python -c', true)
  local out_row = H.find_line(lines, '**not bold**', true)
  local head_row = H.find_line(lines, '⚙ `read_file`', true)
  local path_row = H.find_line(lines, 'path: __init__.py', true)
  H.check('the lines are there', code_row and cmd_row and out_row and head_row and path_row, lines)

  for _, engine in ipairs({ 'syntax', 'treesitter' }) do
    if engine == 'treesitter' then
      vim.treesitter.start(S.buf, 'markdown')
    end
    vim.cmd('redraw!')
    local function shows(row, text)
      local drawn = screen_line(win, row)
      return drawn ~= nil and drawn:find(text, 1, true) ~= nil, drawn
    end
    local ok, drawn = shows(code_row, CODE)
    H.check(engine .. ': tool output drawn literally', ok, drawn)
    ok, drawn = shows(cmd_row, CODE)
    H.check(engine .. ': a command drawn literally', ok, drawn)
    ok, drawn = shows(out_row, '**not bold** _not italic_')
    H.check(engine .. ': markdown in output drawn literally', ok, drawn)
    ok, drawn = shows(path_row, 'path: __init__.py')
    H.check(engine .. ': a path drawn literally', ok, drawn)
    ok, drawn = shows(head_row, 'read_file')
    H.check(engine .. ': the tool name drawn whole', ok, drawn)
    local bad = {}
    for _, pos in ipairs({ { code_row, 7 }, { out_row, 8 }, { head_row, 6 }, { path_row, 12 } }) do
      for _, g in ipairs(groups_at(S.buf, pos[1] - 1, pos[2])) do
        if BAD[g] then
          table.insert(bad, { line = lines[pos[1]], group = g })
        end
      end
    end
    H.check(engine .. ': no emphasis or markdownError on tool text', #bad == 0, bad)
  end
  vim.treesitter.stop(S.buf)

  -- Folds: the user opens the first block; a later turn adds a block; the first stays
  -- open, the new one is closed.
  vim.cmd('normal! zM')
  local first = H.find_line(lines, '⚙ `read_file`', true)
  vim.api.nvim_win_set_cursor(win, { first, 0 })
  vim.cmd('normal! zo')
  H.check('the opened fold is open', vim.fn.foldclosed(first) == -1)
  up('t2', 'turn_started', { agent = 'local', route = 'auto', reason = 'default' })
  up('t2', 'tool_call', { agent = 'local', toolCallId = 'c1', name = 'list_directory', input = { path = '.' }, status = 'running' })
  up('t2', 'tool_result', { agent = 'local', toolCallId = 'c1', output = 'a.py', isError = false })
  up('t2', 'text', { agent = 'local', delta = 'Listed.' })
  up('t2', 'turn_ended', { agent = 'local', stopReason = 'end_turn' })
  chat.show(sid) -- as every :Milk does
  local after = vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
  local new = H.find_line(after, '⚙ `list_directory`', true)
  vim.api.nvim_win_call(win, function()
    H.check('the fold the user opened stays open on a later turn', vim.fn.foldclosed(first) == -1)
    H.check('the new block is folded', new and vim.fn.foldclosed(new) == new, new)
    H.check('a second block of the first turn stays folded', vim.fn.foldclosed(cmd_row) ~= -1)
  end)

  -- issue 31: with the cursor in a block the user opened, blocks that stream in after it
  -- (the same turn, live) come folded, not open.
  vim.api.nvim_win_set_cursor(win, { new, 0 })
  vim.api.nvim_win_call(win, function()
    vim.cmd('normal! zo')
  end)
  up('t3', 'turn_started', { agent = 'local', route = 'auto', reason = 'default' })
  up('t3', 'tool_call', { agent = 'local', toolCallId = 'd1', name = 'search_text', input = { query = 'x' }, status = 'running' })
  up('t3', 'tool_result', { agent = 'local', toolCallId = 'd1', output = 'a.py:1: x', isError = false })
  up('t3', 'tool_call', { agent = 'local', toolCallId = 'd2', name = 'read_file', input = { path = 'b.py' }, status = 'running' })
  up('t3', 'tool_result', { agent = 'local', toolCallId = 'd2', output = 'b = 1\nc = 2', isError = false })
  local live = vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
  local searched = H.find_line(live, '⚙ `search_text`', true)
  local read = H.find_line(live, '⚙ `read_file`', true, (searched or 1) + 1)
  vim.api.nvim_win_call(win, function()
    H.check('the block the cursor is in stays open', vim.fn.foldclosed(new) == -1)
    H.check('a block streamed in after an opened one comes folded', searched and vim.fn.foldclosed(searched) == searched, searched)
    H.check('and the next one too', read and vim.fn.foldclosed(read) == read, read)
  end)
end)
