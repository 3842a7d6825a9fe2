-- A session reloaded from the server (`milk/session/get` with `turnInfo`) reads as the live
-- chat did: tool calls with their statuses (a denied call stays denied) and in their place
-- in the text (text before a call stays before its block), the user's escalation as typed,
-- the escalation lines, a failed Claude turn with its error, a cancelled turn, usage and
-- end lines, and the changes line (undone stays undone).
-- Only what the server does not store is live-only: the need line, the permission
-- question lines, info/warning notices, thinking.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

--- The lines both views must share: live-only lines out, runs of blank lines collapsed.
local function comparable(lines)
  local out = {}
  for _, l in ipairs(lines) do
    local live_only = l:find('^◎ need: ') or l:find('^%? ') or l:find('^ℹ info: ') or l:find('^⚠ warning: ')
      or l:find('^> ')
    local after_header = #out > 0 and out[#out]:find('^## ') ~= nil
    if not live_only and not (l == '' and (#out == 0 or out[#out] == '' or after_header)) then
      table.insert(out, l)
    end
  end
  while out[#out] == '' do
    table.remove(out)
  end
  return out
end

H.run(function()
  H.start_openai()
  H.start_anthropic()
  H.setup_milk()
  local milk = require('milk')
  local chat = require('milk.chat')
  local diff = require('milk.diff')
  local n = 0
  local function turn(ms)
    n = n + 1
    return H.wait_turn(n, ms or 90000)
  end

  -- 1. A local turn reading a file (the block, then the answer).
  vim.fn.writefile({ 'alpha', 'if __name__ == "__main__":' }, H.ws .. '/notes.py')
  H.script_openai({ { tool_calls = { { name = 'read_file', arguments = { path = 'notes.py' } } } }, { text = 'It has a main guard.' } })
  vim.cmd('Milk what is in notes.py?')
  turn()
  -- 1b. A reply with text before its tool call: the text, the block, the rest (as live).
  H.script_openai({
    { text = 'Let me look.', tool_calls = { { name = 'read_file', arguments = { path = 'notes.py' } } } },
    { text = 'It has two lines.' },
  })
  vim.cmd('Milk how long is notes.py?')
  turn()
  -- 2. A denied command.
  H.stub_select({ H.pick('optionId', 'deny') })
  H.script_openai({ { tool_calls = { { name = 'run_command', arguments = { command = 'rm -rf build' } } } }, { text = 'I did not run it.' } })
  vim.cmd('Milk clean the build')
  turn()
  -- 3. The user escalates (no text): Claude answers.
  H.script_anthropic({ { text = 'Claude looked at it.' } })
  vim.cmd('MilkEscalate needs a stronger model')
  turn()
  -- 4. A failed Claude turn.
  H.script_anthropic({ { status = 401, ['repeat'] = 5 } })
  vim.cmd('Milk! this will fail')
  turn()
  -- 5. Back to local: an edit, allowed in the review, then undone.
  vim.fn.writefile({ 'x = 1' }, H.ws .. '/x.py')
  H.script_openai({ { tool_calls = { { name = 'edit_file', arguments = { path = 'x.py', old_text = 'x = 1', new_text = 'x = 2' } } } }, { text = 'Edited.' } })
  vim.cmd('MilkLocal set x to 2')
  H.wait(30000, function()
    return #diff.views > 0
  end)
  local view = diff.views[1]
  if view then
    vim.api.nvim_set_current_win(view.wins.after)
    vim.cmd('normal a')
  end
  turn()
  local undone = false
  vim.api.nvim_create_autocmd('User', { pattern = 'MilkUndo', callback = function() undone = true end })
  vim.cmd('MilkUndo')
  H.wait(20000, function()
    return undone
  end)
  -- 6. The local model hands the turn to Claude.
  H.script_openai({ { tool_calls = { { name = 'escalate_to_claude', arguments = { reason = 'needs the whole repo' } } } } })
  H.script_anthropic({ { text = 'Claude took over.' } })
  vim.cmd('Milk refactor everything')
  turn()
  -- 7. A cancelled local turn.
  H.script_openai({ { text = 'Working on it slowly', chunk_chars = 4, stall = 30, stall_after = 2 } })
  vim.cmd('MilkLocal take your time')
  H.wait(30000, function()
    return H.chat_text():find('Work', 1, true) ~= nil
  end)
  vim.cmd('MilkCancel')
  turn(20000)

  local sid = milk.session()
  local live = H.chat_lines(sid)
  local function has(pattern)
    return H.find_line(live, pattern) ~= nil
  end
  H.check('live: the scenario ran', has('^⚙ `run_command` · denied$') and has('^%(escalate to Claude: needs a stronger model%)$')
    and has('^— Claude · failed: ') and has('^✎ 1 file changed %(%+1 −1%) · <CR> review · undone$')
    and has('^↑ sent to Claude .*· the local model asked: needs the whole repo$') and has('^— local model · cancelled$'), live)

  -- Reload: forget the buffer, open the session again (as after a restart).
  chat.drop(sid)
  local opened = #H.events.MilkSession
  vim.cmd('Milk')
  H.wait(20000, function()
    return #H.events.MilkSession > opened
  end)
  local reloaded = H.chat_lines(sid)
  local a, b = comparable(live), comparable(reloaded)
  local diffs = {}
  for i = 1, math.max(#a, #b) do
    if a[i] ~= b[i] then
      table.insert(diffs, { line = i, live = a[i], reloaded = b[i] })
      if #diffs >= 8 then
        break
      end
    end
  end
  H.check('the reloaded chat reads as the live one', #diffs == 0, diffs)
  --- Whether lines matching the patterns follow each other, in this order, after row `from`.
  local function in_order(lines, from, patterns)
    local at = from
    for _, pattern in ipairs(patterns) do
      at = H.find_line(lines, pattern, false, at + 1)
      if not at then
        return false
      end
    end
    return true
  end
  local interleaved = { '^Let me look%.$', '^⚙ `read_file` · done$', '^It has two lines%.$' }
  local asked = H.find_line(live, '^how long is notes%.py%?$') or 0
  H.check('live: the text before the tool call comes before its block', in_order(live, asked, interleaved), live)
  local asked_again = H.find_line(reloaded, '^how long is notes%.py%?$') or 0
  H.check('reloaded: the text before the tool call comes before its block', in_order(reloaded, asked_again, interleaved), reloaded)
  H.check('reloaded: the denied call stays denied', H.find_line(reloaded, '^⚙ `run_command` · denied$') ~= nil, reloaded)
  H.check('reloaded: the escalation as the user typed it', H.find_line(reloaded, '^%(escalate to Claude: needs a stronger model%)$') ~= nil, reloaded)
  H.check('reloaded: the failed Claude turn with its error', H.find_line(reloaded, '^— Claude · failed: Claude Code is not logged in') ~= nil, reloaded)
  H.check('reloaded: usage lines', H.find_line(reloaded, '^Σ usage: ') ~= nil, reloaded)
  H.check('reloaded: the undone changes', H.find_line(reloaded, '^✎ 1 file changed %(%+1 −1%) · <CR> review · undone$') ~= nil, reloaded)
  if #diffs > 0 then
    H.log('live:\n  ' .. table.concat(a, '\n  '))
    H.log('reloaded:\n  ' .. table.concat(b, '\n  '))
  end

  -- Stored records as the server can send them (no server needed): a record from before
  -- `segments` shows its calls, then its text; segments that name an unknown call, or
  -- leave one out, lose nothing.
  local S = chat.get('sess-stored', { title = 'stored' })
  local function call(id, path)
    return { toolCallId = id, name = 'read_file', input = { path = path }, output = path .. ' read', isError = false, status = 'completed' }
  end
  local function stored(rec)
    local user = { turnId = 't1', role = 'user', agent = 'local', text = 'look', status = 'ok', createdAt = '2025-01-01T00:00:00Z' }
    rec = vim.tbl_extend('force', { turnId = 't1', role = 'assistant', agent = 'local', status = 'ok', createdAt = '2025-01-01T00:00:01Z' }, rec)
    chat.render_history(S, { user, rec }, nil)
    return vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
  end
  local old = stored({ text = 'Let me look.\n\nDone.', toolCalls = { call('c1', 'a.py') } })
  H.check('a record without segments: its calls, then its text (as before)',
    in_order(old, 0, { '^⚙ `read_file` · done$', '│ a%.py read$', '^Let me look%.$', '^Done%.$' }), old)
  local odd = stored({
    text = 'Before.\n\nAfter.',
    toolCalls = { call('c1', 'a.py'), call('c2', 'b.py') },
    segments = { { text = 'Before.' }, { toolCallId = 'gone' }, { toolCallId = 'c1' }, { text = '\n\nAfter.' } },
  })
  H.check('segments: an unknown call is skipped, a call they leave out comes after them',
    in_order(odd, 0, { '^Before%.$', '│ a%.py read$', '^After%.$', '│ b%.py read$' })
      and #vim.tbl_filter(function(l) return l:find('^⚙ ') ~= nil end, odd) == 2, odd)
end)
