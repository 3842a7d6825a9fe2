-- A streamed local turn lands in the chat buffer in order, with the agent header, a tool
-- call as a folded block, usage lines, the statusline and work-done progress.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  H.start_openai()
  H.setup_milk()

  -- Progress as a progress plugin sees it: the LspProgress autocmd.
  local progress = {}
  vim.api.nvim_create_autocmd('LspProgress', {
    callback = function(ev)
      local c = vim.lsp.get_client_by_id(ev.data.client_id)
      if c and c.name == 'milk' then
        table.insert(progress, vim.deepcopy(ev.data.params.value))
      end
    end,
  })
  -- Status seen while the turn runs.
  local seen_status = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = 'MilkStatus',
    callback = function()
      seen_status[require('milk').status()] = true
    end,
  })

  H.check('status is empty before any server runs', require('milk').status() == '', require('milk').status())

  local answer = 'Hello from the local model.\nSecond line, streamed in pieces.'
  H.script_openai({ { text = answer, chunk_chars = 4, delay = 0.02 } })
  vim.cmd('Milk say hello')

  -- While streaming: the text grows in place (checked mid-turn).
  local partial
  H.wait(30000, function()
    local text = H.chat_text()
    if text:find('Hello from', 1, true) and not text:find('streamed in pieces.', 1, true) then
      partial = text
    end
    return #H.events.MilkTurnDone >= 1
  end)
  local done = H.wait_turn(1)
  H.check('turn finished', done and done.result ~= nil, done)
  H.check('a partial answer was visible mid-stream', partial ~= nil)
  local result = done and done.result or {}
  H.check('TurnResult end_turn by local', result.stopReason == 'end_turn' and result.agent == 'local', result)
  H.check('TurnResult text', result.text == answer, result.text)

  local lines = H.chat_lines()
  local you = H.find_line(lines, '## You', true)
  local header = H.find_line(lines, '^## local model')
  local l1 = H.find_line(lines, 'Hello from the local model.', true)
  local l2 = H.find_line(lines, 'Second line, streamed in pieces.', true)
  local ended = H.find_line(lines, '^— local model · done$')
  H.check('user message echoed', you and lines[you + 1] == 'say hello', lines)
  H.check('turn header names the local model', header ~= nil and header > you, lines)
  H.check('streamed text in order under the header', l1 and l2 and header < l1 and l1 + 1 == l2, lines)
  H.check('streamed text exact', l1 and lines[l1] == 'Hello from the local model.' and lines[l2] == 'Second line, streamed in pieces.', lines)
  local usage = H.find_line(lines, '^Σ usage: %d+ in / %d+ out$')
  H.check('one usage line for the turn, before its end', usage ~= nil and ended ~= nil and usage == ended - 1, lines)
  H.check('turn ended line last', ended ~= nil and ended > l2, lines)

  local S = require('milk.chat').sessions[require('milk').session()]
  H.check('chat buffer is a markdown scratch buffer', S and vim.bo[S.buf].filetype == 'markdown'
    and vim.bo[S.buf].buftype == 'nofile' and not vim.bo[S.buf].modifiable)
  local win = vim.fn.bufwinid(S.buf)
  H.check('chat buffer is shown in a split', win ~= -1 and #vim.api.nvim_tabpage_list_wins(0) == 2)
  H.check('focus stayed in the editing window', vim.api.nvim_get_current_win() ~= win)

  -- Statusline: it said "local" during the turn and is idle now.
  H.check('status showed local while running', seen_status['milk: local…'] == true, seen_status)
  H.check('status idle after the turn', require('milk').status() == 'milk: idle', require('milk').status())

  -- Progress: begin "milk: local" ... end, visible through LspProgress.
  local begin, finish
  for _, v in ipairs(progress) do
    if v.kind == 'begin' then
      begin = v
    elseif v.kind == 'end' then
      finish = v
    end
  end
  H.check('work-done progress begin "milk: local"', begin and begin.title == 'milk: local', progress)
  H.check('work-done progress end', finish ~= nil, progress)

  -- A second turn with a tool call: a folded block with status and output.
  vim.fn.writefile({ 'alpha', 'beta' }, H.ws .. '/notes.txt')
  H.script_openai({
    { tool_calls = { { name = 'read_file', arguments = { path = 'notes.txt' } } } },
    { text = 'The file has two lines.' },
  })
  vim.cmd('Milk what is in notes.txt?')
  local done2 = H.wait_turn(2)
  H.check('tool turn finished', done2 and done2.result and done2.result.stopReason == 'end_turn', done2)
  lines = H.chat_lines()
  local second_you = H.find_line(lines, 'what is in notes.txt?', true)
  local tool = H.find_line(lines, '^⚙ `read_file` · ', false, second_you)
  H.check('tool block shows name and final status', tool and lines[tool] == '⚙ `read_file` · done', lines)
  H.check('tool input shown as key: value', tool and lines[tool + 2] == '    path: notes.txt', lines)
  local out = tool and H.find_line(lines, '│ alpha', true, tool)
  H.check('tool block holds the output', out ~= nil and lines[out + 1]:find('│ beta', 1, true) ~= nil, lines)
  H.check('text after the tool block', H.find_line(lines, 'The file has two lines.', true, tool or 1) ~= nil, lines)
  local usage2 = H.find_line(lines, '^Σ usage: ', false, tool or 1)
  H.check('the usage line comes after the tool block it paid for', usage2 ~= nil and usage2 > out, lines)
  vim.api.nvim_win_call(win, function()
    vim.cmd('normal! G')
    H.check('tool block is folded', tool and vim.fn.foldclosed(tool) == tool and vim.fn.foldclosedend(tool) >= out, {
      tool = tool, out = out, closed = tool and vim.fn.foldclosed(tool), closed_end = tool and vim.fn.foldclosedend(tool),
    })
  end)
end)
