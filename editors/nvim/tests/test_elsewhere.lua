-- A turn started in `milk-lsp chat` (another server process on the same session store) is
-- seen streaming, live, in the open chat of its session, and :MilkCancel stops it there.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  H.start_openai()
  H.setup_milk()

  -- The session, made here first: the terminal joins the folder's latest session.
  H.script_openai({ { text = 'Hello from Neovim.' } })
  vim.cmd('Milk hi')
  H.check('the first turn ended', H.wait_turn(1, 60000) ~= nil)
  local sid = require('milk').session()
  H.check('a session is open', sid ~= nil)

  -- The terminal's turn streams slowly, then stalls: it is watched while it runs.
  H.script_openai({ { text = 'Streaming from the terminal, slowly.', chunk_chars = 4, delay = 0.3, stall = 30, stall_after = 5 } })
  local out, exited = {}, false
  local terminal = vim.system({
    H.milk_lsp, 'chat', '--workspace', H.ws, '--storage-dir', H.storage, '--base-url', H.openai,
    '--model', 'fake-model', '--route', 'local', 'Was macht das Terminal?',
  }, {
    env = H.server_env({ NO_COLOR = '1' }),
    stdout = function(_, data)
      table.insert(out, data or '')
    end,
    stderr = function(_, data)
      table.insert(out, data or '')
    end,
  }, function()
    exited = true
  end)

  local shown = H.wait(60000, function()
    local text = H.chat_text(sid)
    return text:find('Was macht das Terminal?', 1, true) ~= nil and text:find('Stre', 1, true) ~= nil
  end)
  local lines = H.chat_lines(sid)
  H.check('the terminal turn streams into the open chat', shown, lines)
  H.check('its message is shown as the user\'s', H.find_line(lines, '^Was macht das Terminal%?') ~= nil, lines)
  H.check('the chat says where it was asked', H.find_line(lines, 'asked in the terminal (milk-lsp chat)', true) ~= nil, lines)
  H.check('seen while the terminal still runs it', not exited, table.concat(out, ''))
  H.check('the status line shows the running turn', require('milk').status() == 'milk: local…', require('milk').status())
  H.check('no new chat buffer for it', vim.tbl_count(require('milk.chat').sessions) == 1, vim.tbl_keys(require('milk.chat').sessions))

  -- :MilkCancel in Neovim stops the turn the terminal runs.
  local t0 = vim.uv.hrtime()
  vim.cmd('MilkCancel')
  local result = terminal:wait(20000)
  local secs = (vim.uv.hrtime() - t0) / 1e9
  local printed = table.concat(out, '')
  H.check('the terminal client ended', result.code ~= nil and result.signal == 0, { result = result, out = printed })
  H.check('the terminal says it was cancelled', printed:find('cancel', 1, true) ~= nil, printed)
  H.check('cancelled within seconds', secs < 10, secs)
  local ended = H.wait(10000, function()
    return H.find_line(H.chat_lines(sid), '^— local model · cancelled') ~= nil
  end)
  H.check('the chat shows the cancel', ended, H.chat_lines(sid))
  H.check('status idle afterwards', H.wait(5000, function()
    return require('milk').status():find('^milk: idle') ~= nil
  end), require('milk').status())
  H.check('nothing left for Neovim to say about it', not vim.tbl_contains(vim.tbl_map(function(n)
    return n.level
  end, H.notes), vim.log.levels.ERROR), H.notes)

  -- The session is free again: the next message from Neovim runs at once.
  H.script_openai({ { text = 'Back in Neovim.' } })
  vim.cmd('Milk again')
  local done = H.wait_turn(2, 60000)
  H.check('the next turn here ran', done and done.result and done.result.stopReason == 'end_turn', done)
end)
