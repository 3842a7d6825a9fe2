-- :MilkNew makes sessions; :MilkSessions switches between them (loading history) and
-- deletes them, through a stubbed vim.ui.select.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  H.start_openai()
  H.setup_milk()
  local milk = require('milk')
  local chat = require('milk.chat')

  vim.cmd('MilkNew first topic')
  H.wait(20000, function()
    return #H.events.MilkSession >= 1
  end)
  local a = milk.session()
  H.check(':MilkNew made a session', a ~= nil)
  H.check(':MilkNew shows a hint in the empty session', (H.chat_lines(a)[1] or ''):find('Type :Milk <question>', 1, true) ~= nil, H.chat_lines(a))
  H.script_openai({ { text = 'Answer in the first session.' } })
  vim.cmd('Milk hello first')
  H.wait_turn(1)

  vim.cmd('MilkNew second topic')
  H.wait(20000, function()
    return #H.events.MilkSession >= 2
  end)
  local b = milk.session()
  H.check(':MilkNew made another session', b ~= nil and b ~= a, { a, b })
  -- Buffers are named by title, not by id; no buffer is left under an id.
  H.check('chat buffers are named by session title', vim.api.nvim_buf_get_name(chat.sessions[a].buf) == 'milk://chat/first topic'
    and vim.api.nvim_buf_get_name(chat.sessions[b].buf) == 'milk://chat/second topic',
    { vim.api.nvim_buf_get_name(chat.sessions[a].buf), vim.api.nvim_buf_get_name(chat.sessions[b].buf) })
  local by_id = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if name:find(a, 1, true) or name:find(b, 1, true) then
      table.insert(by_id, name)
    end
  end
  H.check('no buffer is named by a session id', #by_id == 0, by_id)
  H.script_openai({ { text = 'Answer in the second session.' } })
  vim.cmd('Milk hello second')
  local done = H.wait_turn(2)
  H.check('the second turn went to the new session', done and done.result and done.result.sessionId == b, done)
  local win = vim.fn.bufwinid(chat.sessions[b].buf)
  H.check('the chat window shows the new session', win ~= -1)
  H.check('the new session buffer has only its own turn', H.find_line(H.chat_lines(b), 'hello first', true) == nil
    and H.find_line(H.chat_lines(b), 'Answer in the second session.', true) ~= nil, H.chat_lines(b))

  -- Forget the first session's buffer, as after a restart of the editor.
  chat.drop(a)

  -- :MilkSessions → pick the first session → switch.
  H.stub_select({ H.pick('sessionId', a), H.pick('x', 'switch') })
  local n = #H.events.MilkSession
  vim.cmd('MilkSessions')
  H.wait(20000, function()
    return #H.events.MilkSession > n
  end)
  local list = H.selects[1]
  H.check('the picker lists both sessions and "new"', list and #list.items == 3 and list.kind == 'milk.sessions', list)
  local labels = {}
  for _, it in ipairs(list and list.items or {}) do
    table.insert(labels, it.new and '+ new session' or require('milk.commands')._session_label(it))
  end
  H.check('the picker shows titles, not ids', labels[1] and labels[1]:find('^%*? ?second topic · 1 turn · ')
    and labels[2]:find('^%*? ?first topic · 1 turn · ') and not table.concat(labels, '\n'):find(a, 1, true), labels)
  H.check('most recently used first', list and list.items[1].sessionId == b and list.items[2].sessionId == a, list)
  H.check('the action picker offers switch and delete', H.selects[2] and vim.deep_equal(H.selects[2].items, { 'switch', 'delete' }), H.selects[2])
  H.check('switched: current session is the first', milk.session() == a, milk.session())
  local S = chat.sessions[a]
  H.check('switched: the chat window shows it', S and vim.api.nvim_win_get_buf(win) == S.buf)
  local lines = H.chat_lines(a)
  H.check('history loaded from milk/session/get', H.find_line(lines, 'hello first', true) ~= nil
    and H.find_line(lines, 'Answer in the first session.', true) ~= nil
    and H.find_line(lines, '^## local model') ~= nil, lines)

  -- The next message goes to the session switched to.
  H.script_openai({ { text = 'Back in the first.' } })
  vim.cmd('Milk and again')
  done = H.wait_turn(3)
  H.check('next turn in the switched-to session', done and done.result and done.result.sessionId == a, done)
  H.check('its text lands in that buffer', H.find_line(H.chat_lines(a), 'Back in the first.', true) ~= nil)

  -- :MilkSessions → pick the second → delete.
  H.selects = {}
  H.stub_select({ H.pick('sessionId', b), H.pick('x', 'delete') })
  n = #H.events.MilkSession
  vim.cmd('MilkSessions')
  H.wait(20000, function()
    return #H.events.MilkSession > n
  end)
  local left = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.b[buf].milk_session == b then
      table.insert(left, buf)
    end
  end
  H.check('deleted session buffer is gone', chat.sessions[b] == nil and #left == 0, left)
  local client = H.milk_client()
  local res = client:request_sync(require('milk.methods').SESSION_LIST, vim.empty_dict(), 10000)
  local ids = {}
  for _, s in ipairs(res and res.result and res.result.sessions or {}) do
    table.insert(ids, s.sessionId)
  end
  H.check('server no longer lists the deleted session', #ids == 1 and ids[1] == a, { ids = ids, res = res })
  H.check('current session unchanged', milk.session() == a)

  -- "+ new session" from the picker.
  H.selects = {}
  H.stub_select({ function(items)
    return items[#items]
  end })
  n = #H.events.MilkSession
  vim.cmd('MilkSessions')
  H.wait(20000, function()
    return #H.events.MilkSession > n
  end)
  H.check('"new session" from the picker', milk.session() ~= a and milk.session() ~= nil, milk.session())
end)
