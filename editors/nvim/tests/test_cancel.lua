-- :MilkCancel stops a running turn (local and Claude); on an idle session it says so.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  H.start_openai()
  H.start_anthropic()
  H.setup_milk()
  local notes = {}
  vim.notify = function(msg, level)
    table.insert(notes, { msg = msg, level = level })
  end

  -- A local turn that streams a little, then stalls for 30 s.
  H.script_openai({ { text = 'Thinking about it slowly and then more', chunk_chars = 4, stall = 30, stall_after = 3 } })
  vim.cmd('Milk take your time')
  local streaming = H.wait(30000, function()
    return H.chat_text():find('Thin', 1, true) ~= nil
  end)
  H.check('the turn is streaming', streaming, H.chat_lines())
  H.check('status local while running', require('milk').status() == 'milk: local…', require('milk').status())
  local t0 = vim.uv.hrtime()
  vim.cmd('MilkCancel')
  local done = H.wait_turn(1, 20000)
  local secs = (vim.uv.hrtime() - t0) / 1e9
  local r = done and done.result or {}
  H.check('turn ended cancelled', r.stopReason == 'cancelled', done)
  H.check('cancel was quick', secs < 10, secs)
  local lines = H.chat_lines()
  H.check('chat shows the cancel', H.find_line(lines, '^— local model · cancelled') ~= nil, lines)
  H.check('chat kept the partial text', H.find_line(lines, '^Thin') ~= nil, lines)
  H.check('status idle after cancel', require('milk').status() == 'milk: idle', require('milk').status())

  -- Idle: nothing to cancel.
  notes = {}
  vim.cmd('MilkCancel')
  H.wait(5000, function()
    return #notes > 0
  end)
  H.check('cancel on an idle session says so', notes[1] and notes[1].msg:find('nothing to cancel', 1, true) ~= nil, notes)

  -- A Claude turn that stalls: cancelled too.
  H.script_anthropic({ { text = 'Claude starts and then waits a long time', chunk_chars = 6, stall = 30 } })
  require('milk').chat('over to Claude', { route = 'claude' })
  local claude_streaming = H.wait(60000, function()
    return H.find_line(H.chat_lines(), '^Claude') ~= nil
  end)
  H.check('Claude turn is streaming', claude_streaming, H.chat_lines())
  H.check('status Claude while running', require('milk').status() == 'milk: Claude…', require('milk').status())
  t0 = vim.uv.hrtime()
  vim.cmd('MilkCancel')
  done = H.wait_turn(2, 20000)
  secs = (vim.uv.hrtime() - t0) / 1e9
  r = done and done.result or {}
  H.check('Claude turn ended cancelled', r.stopReason == 'cancelled' and r.agent == 'claude', done)
  H.check('Claude cancel was quick', secs < 10, secs)
  lines = H.chat_lines()
  H.check('chat shows the Claude cancel', H.find_line(lines, '^— Claude · cancelled') ~= nil, lines)
  H.check('status idle after the Claude cancel (its next turn would go to Claude)',
    require('milk').status() == 'milk: idle · next: Claude', require('milk').status())

  -- Cancel while a permission prompt is open: the turn ends, the prompt is withdrawn, and
  -- an answer given afterwards does no harm.
  local pending
  vim.ui.select = function(items, opts, on_choice)
    pending = { items = items, on_choice = on_choice, status = require('milk').status() }
  end
  H.script_openai({
    { tool_calls = { { name = 'run_command', arguments = { command = 'touch late-answer.txt' } } } },
    { text = 'should not be needed' },
  })
  require('milk').chat('run something', { route = 'local' })
  H.wait(30000, function()
    return pending ~= nil
  end)
  H.check('permission prompt open', pending ~= nil)
  H.check('status says permission?', pending and pending.status == 'milk: local… (permission?)', pending and pending.status)
  vim.cmd('MilkCancel')
  done = H.wait_turn(3, 20000)
  H.check('turn with an open prompt ended cancelled', done and done.result and done.result.stopReason == 'cancelled', done)
  lines = H.chat_lines()
  H.check('prompt marked withdrawn in the chat', H.find_line(lines, 'touch late-answer.txt` → withdrawn (turn ended)', true) ~= nil, lines)
  H.check('status idle with the prompt still open', require('milk').status() == 'milk: idle', require('milk').status())
  if pending then
    pending.on_choice(pending.items[1]) -- "Allow once", too late
  end
  H.wait(1000, function()
    return false
  end)
  H.check('the late answer ran nothing', vim.fn.filereadable(H.ws .. '/late-answer.txt') == 0)
  lines = H.chat_lines()
  H.check('the withdrawn line keeps its text', H.find_line(lines, 'touch late-answer.txt` → withdrawn (turn ended)', true) ~= nil, lines)

  -- The server still works after that.
  H.script_openai({ { text = 'still alive' } })
  vim.cmd('Milk ping')
  done = H.wait_turn(4, 20000)
  H.check('next turn works', done and done.result and done.result.text == 'still alive', done)
  H.check('status idle at the end', require('milk').status() == 'milk: idle', require('milk').status())
end)
