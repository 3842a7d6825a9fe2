-- Where the next turn goes is visible (the chat window's bar, the statusline) and can be
-- changed both ways (:Milk! to Claude, :MilkLocal back); `E` asks before a paid turn;
-- :Milk alone opens the chat with a hint; the first command says the server is starting;
-- buffers carry the session's title; a failed Claude turn says why, once.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  H.start_openai()
  H.start_anthropic()
  H.setup_milk({ ui = { split = 'below' } }) -- the whole width for the window's bar
  local milk = require('milk')
  local chat = require('milk.chat')
  local methods = require('milk.methods')

  -- Every request the plugin sends, kept.
  local sent = {}
  local orig = require('milk.client').request
  require('milk.client').request = function(client, method, params, cb)
    table.insert(sent, { method = method, params = vim.deepcopy(params) })
    return orig(client, method, params, cb)
  end
  local function last_sent(method)
    for i = #sent, 1, -1 do
      if sent[i].method == method then
        return sent[i].params
      end
    end
  end
  local function winbar()
    local S = chat.sessions[milk.session()]
    local win = S and vim.fn.bufwinid(S.buf) or -1
    if win == -1 then
      return ''
    end
    return vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true }).str
  end

  -- 1. :Milk alone, before any server runs: "starting", then the chat with a hint.
  H.check('statusline() exists and is empty while no server runs', milk.statusline() == '')
  vim.cmd('Milk')
  H.wait(20000, function()
    return #H.events.MilkSession >= 1
  end)
  local starting = false
  for _, n in ipairs(H.notes) do
    starting = starting or n.msg == 'milk: starting milk-lsp…'
  end
  H.check('the first :Milk says the server is starting', starting, H.notes)
  local sid = milk.session()
  local S = sid and chat.sessions[sid]
  H.check(':Milk alone opened the chat and moved into it', S and vim.api.nvim_get_current_buf() == S.buf)
  local lines = H.chat_lines()
  H.check('an empty session shows how to start', lines[1] and lines[1]:find('Type :Milk <question>', 1, true) ~= nil, lines)
  H.check('the hint names :MilkLocal and :Milk!', H.find_line(lines, ':MilkLocal', true) and H.find_line(lines, ':Milk!', true), lines)
  H.check('the bar shows the title and the next route (local)',
    winbar() == ' new session · next: local model' ~= nil, winbar())
  H.check('an empty session is named as such, not by id', S and vim.api.nvim_buf_get_name(S.buf) == 'milk://chat/new session',
    S and vim.api.nvim_buf_get_name(S.buf))

  -- 2. :Milk! sends this message to Claude; its next turn stays with Claude, visibly.
  H.script_anthropic({ { text = 'Claude answers.' } })
  vim.cmd('Milk! explain the parser')
  local done = H.wait_turn(1, 90000)
  H.check(':Milk! sends with route claude', last_sent(methods.CHAT) and last_sent(methods.CHAT).route == 'claude', last_sent(methods.CHAT))
  H.check('Claude answered', done and done.result and done.result.agent == 'claude', done)
  lines = H.chat_lines()
  H.check('the hint is gone once the session has a message', H.find_line(lines, 'Type :Milk', true) == nil, lines)
  H.check('the buffer is named by the session title', vim.api.nvim_buf_get_name(S.buf) == 'milk://chat/explain the parser',
    vim.api.nvim_buf_get_name(S.buf))
  H.check('the bar has the title', vim.startswith(winbar(), ' explain the parser · '), winbar())
  local next_route = done and done.result and done.result.nextRoute
  H.check('TurnResult.nextRoute says Claude', next_route and next_route.agent == 'claude', next_route)
  H.check('the bar says the next turn goes to Claude and how to go back',
    winbar():find('next: Claude', 1, true) and winbar():find(':MilkLocal', 1, true), winbar())
  H.check('the statusline says so too', milk.status() == 'milk: idle · next: Claude' and milk.statusline() == milk.status(), milk.status())
  H.check('state() carries the next route', milk.state().next and milk.state().next.agent == 'claude', milk.state())

  -- 3. :MilkLocal takes the session back to the local model.
  H.script_openai({ { text = 'Local again.' } })
  vim.cmd('MilkLocal and now locally')
  done = H.wait_turn(2)
  H.check(':MilkLocal sends with route local', last_sent(methods.CHAT).route == 'local' and last_sent(methods.CHAT).text == 'and now locally',
    last_sent(methods.CHAT))
  H.check('the local model answered', done and done.result and done.result.agent == 'local', done)
  H.check('the next route is local again', winbar():find('next: local model', 1, true) ~= nil and milk.status() == 'milk: idle',
    { winbar(), milk.status() })

  -- 4. `E` in the chat window asks first; "Cancel" sends nothing.
  vim.api.nvim_set_current_win(vim.fn.bufwinid(S.buf))
  H.stub_select({ function() return nil end })
  local before = #sent
  vim.cmd('normal E')
  H.wait(300, function()
    return false
  end)
  local asked = H.selects[#H.selects]
  H.check('E asks before escalating', asked and asked.kind == 'milk.confirm_escalate' and asked.prompt:find('Claude', 1, true), asked)
  local escalations = 0
  for i = before + 1, #sent do
    if sent[i].method == methods.ESCALATE then
      escalations = escalations + 1
    end
  end
  H.check('a dismissed question escalates nothing', escalations == 0)
  H.stub_select({ H.pick('x', 'escalate') })
  H.script_anthropic({ { text = 'Claude takes it.' } })
  vim.cmd('normal E')
  done = H.wait_turn(3, 90000)
  H.check('confirmed, E escalates', last_sent(methods.ESCALATE) ~= nil and done and done.result and done.result.agent == 'claude', done)

  -- 5. :MilkLocal without text asks for the message (and says where it goes).
  local prompted
  vim.ui.input = function(opts, on_confirm)
    prompted = opts.prompt
    on_confirm('typed for local')
  end
  H.script_openai({ { text = 'ok local' } })
  vim.cmd('MilkLocal')
  done = H.wait_turn(4)
  H.check(':MilkLocal without text prompts, naming the local model', prompted == 'milk → local model> '
    and last_sent(methods.CHAT).text == 'typed for local' and last_sent(methods.CHAT).route == 'local', { prompted, last_sent(methods.CHAT) })

  -- 6. A failed Claude turn: its error once, in the end line; the session does not stay
  --    on a failing Claude (the next turn goes to the local model).
  H.script_anthropic({ { status = 401, ['repeat'] = 5 } })
  vim.cmd('Milk! this will fail')
  done = H.wait_turn(5, 90000)
  local r = done and done.result or {}
  H.check('the Claude turn failed', r.stopReason == 'error' and r.error ~= nil, r)
  lines = H.chat_lines()
  local fail_line = H.find_line(lines, '^— Claude · failed: ')
  H.check('the end line says why', fail_line ~= nil and lines[fail_line]:find(r.error and r.error.message or '?', 1, true) ~= nil, lines)
  H.check('the error is said once', H.find_line(lines, '^✗ error:') == nil, lines)
  H.check('the login hint names the claude binary in use', fail_line ~= nil
    and lines[fail_line]:find('Run `' .. H.bundled_claude() .. '` in a terminal', 1, true) ~= nil, fail_line and lines[fail_line])
  H.check('after a failed escalation the next turn is local', r.nextRoute and r.nextRoute.agent == 'local'
    and winbar():find('next: local model', 1, true) ~= nil, { r.nextRoute, winbar() })
end)
