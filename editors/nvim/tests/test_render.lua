-- Rendering of every milk/update kind (synthetic updates, no server), seq gap tolerance,
-- and the reload of a turn that lost updates (real server).
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local function extmark_groups(buf, row)
  local groups = {}
  local marks = vim.api.nvim_buf_get_extmarks(buf, require('milk.chat').ns_hl, { row, 0 }, { row, -1 }, { details = true })
  for _, m in ipairs(marks) do
    groups[m[4].hl_group] = true
  end
  return groups
end

H.run(function()
  H.setup_milk()
  -- issue 31: the local model's and Claude's headers differ in the default colorscheme
  local function fg(group)
    return vim.api.nvim_get_hl(0, { name = group, link = false }).fg
  end
  H.check('local and Claude headers have their own colours', fg('MilkAgentLocal') ~= nil
    and fg('MilkAgentClaude') ~= nil and fg('MilkAgentLocal') ~= fg('MilkAgentClaude'),
    { ['local'] = fg('MilkAgentLocal'), claude = fg('MilkAgentClaude') })
  local chat = require('milk.chat')
  local sid, tid = 'sess-synthetic', 'turn-1'
  local seq = 0
  local function up(kind, fields)
    seq = seq + 1
    local p = vim.tbl_extend('force', { sessionId = sid, turnId = tid, seq = seq, kind = kind }, fields or {})
    chat.on_update(p, nil)
  end

  up('turn_started', { agent = 'local', route = 'auto', reason = 'default' })
  H.check('status local after turn_started', require('milk.status').get().state == 'local')
  up('thinking', { agent = 'local', delta = 'Let me\nthink' })
  up('text', { agent = 'local', delta = 'First ' })
  up('text', { agent = 'local', delta = 'part.\nNext' })
  up('text', { agent = 'local', delta = ' line.' })
  up('need', { currentNeed = 'Fix the flaky parser test' })
  up('tool_call', { agent = 'local', toolCallId = 't1', name = 'search', input = { query = 'parse(' }, status = 'running' })
  up('tool_call', { agent = 'local', toolCallId = 't2', name = 'read_file', input = { path = 'a.py' }, status = 'pending' })
  up('tool_result', { agent = 'local', toolCallId = 't1', output = 'a.py:3: parse(x)\nb.py:9: parse(y)', isError = false })
  up('tool_call', { agent = 'local', toolCallId = 't2', name = 'read_file', input = { path = 'a.py' }, status = 'failed' })
  up('tool_result', { agent = 'local', toolCallId = 't2', output = 'no such file', isError = true })
  up('usage', { agent = 'local', inputTokens = 120, outputTokens = 30 })
  up('escalated', { by = 'agent', reason = 'needs repo-wide refactor', mode = 'first', contextChars = 2345 })
  H.check('status Claude after escalated', require('milk.status').get().state == 'claude')
  up('text', { agent = 'claude', delta = 'Claude takes over.' })
  up('notice', { severity = 'info', message = 'an info' })
  up('notice', { severity = 'warning', message = 'a warning' })
  up('notice', { severity = 'error', message = 'an error' })
  -- A duplicate (same seq again) is ignored.
  chat.on_update({ sessionId = sid, turnId = tid, seq = seq, kind = 'text', agent = 'claude', delta = 'DUPLICATE' }, nil)
  -- A gap: seq jumps by 3.
  seq = seq + 2
  up('text', { agent = 'claude', delta = ' After the gap.' })
  up('usage', { agent = 'claude', inputTokens = 1000, outputTokens = 200, cacheReadTokens = 800, costUsd = 0.0123 })
  up('turn_ended', { agent = 'claude', stopReason = 'end_turn' })
  H.check('status idle after turn_ended', require('milk.status').get().state ~= 'local' and require('milk.status').get().state ~= 'claude')

  local S = chat.sessions[sid]
  local lines = vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
  -- Plain words: no route reason in the header, `done` and no `end_turn`, the summary's
  -- size instead of `mode: first`; one usage line for the turn, at its end (after the
  -- tool blocks it paid for); tool input and output in an indented code block.
  local expected = {
    '## local model',
    '> Let me',
    '> think',
    '',
    'First part.',
    'Next line.',
    '',
    '◎ need: Fix the flaky parser test',
    '',
    '⚙ `search` · done',
    '',
    '    query: parse(',
    '    → output:',
    '    │ a.py:3: parse(x)',
    '    │ b.py:9: parse(y)',
    '',
    '⚙ `read_file` · failed',
    '',
    '    path: a.py',
    '    ✗ error:',
    '    │ no such file',
    '',
    '↑ sent to Claude with a 2.3k-char summary · the local model asked: needs repo-wide refactor',
    '',
    '## Claude',
    'Claude takes over.',
    '',
    'ℹ info: an info',
    '⚠ warning: a warning',
    '✗ error: an error',
    '… 2 updates missed; the turn is reloaded when it ends',
    '',
    ' After the gap.',
    '',
    'Σ usage: 1120 in / 230 out · 800 cache read · $0.0123',
    '— Claude · done',
  }
  H.check('every kind rendered, in order', vim.deep_equal(lines, expected), lines)
  local jargon = {}
  for _, word in ipairs({ 'end_turn', 'default', 'mode:', 'first', 'completed' }) do
    if H.find_line(lines, word, true) then
      table.insert(jargon, word)
    end
  end
  H.check('no jargon (end_turn, default, mode: first, completed)', #jargon == 0, jargon)
  H.check('gap recorded on the turn', chat.had_gap(sid, tid))
  H.check('duplicate ignored', H.find_line(lines, 'DUPLICATE', true) == nil)

  local function row_of(s)
    local i = H.find_line(lines, s, true)
    return i and i - 1
  end
  H.check('info notice highlighted', extmark_groups(S.buf, row_of('ℹ info: an info')).MilkNoticeInfo)
  H.check('warning notice highlighted', extmark_groups(S.buf, row_of('⚠ warning: a warning')).MilkNoticeWarn)
  H.check('error notice highlighted', extmark_groups(S.buf, row_of('✗ error: an error')).MilkNoticeError)
  H.check('failed tool highlighted as error', extmark_groups(S.buf, row_of('⚙ `read_file` · failed')).MilkNoticeError)
  H.check('Claude header highlighted', extmark_groups(S.buf, row_of('## Claude')).MilkAgentClaude)
  H.check('MilkNoticeWarn links to DiagnosticWarn', vim.api.nvim_get_hl(0, { name = 'MilkNoticeWarn' }).link == 'DiagnosticWarn')

  -- Folds: each tool block is one closed fold, the rest is not folded.
  chat.show(sid)
  local win = vim.fn.bufwinid(S.buf)
  vim.api.nvim_win_call(win, function()
    local t1, t2 = row_of('⚙ `search` · done') + 1, row_of('⚙ `read_file` · failed') + 1
    H.check('first tool block folded', vim.fn.foldclosed(t1) == t1 and vim.fn.foldclosedend(t1) == t1 + 5,
      { vim.fn.foldclosed(t1), vim.fn.foldclosedend(t1) })
    H.check('second tool block folded', vim.fn.foldclosed(t2) == t2 and vim.fn.foldclosedend(t2) == t2 + 4)
    H.check('text not folded', vim.fn.foldclosed(row_of('First part.') + 1) == -1)
    H.check('fold text names the tool', vim.fn.foldtextresult(t1):find('⚙ search · done', 1, true) == 1, vim.fn.foldtextresult(t1))
  end)

  -- A later turn whose call reuses an id of an earlier turn (a restarted model server reuses
  -- ids like call_2_0) gets a block of its own; the earlier block keeps its output.
  local t2seq = 0
  local function up2(kind, fields)
    t2seq = t2seq + 1
    chat.on_update(vim.tbl_extend('force', { sessionId = sid, turnId = 'turn-2', seq = t2seq, kind = kind }, fields or {}), nil)
  end
  up2('turn_started', { agent = 'local', route = 'auto', reason = 'default' })
  up2('tool_call', { agent = 'local', toolCallId = 't1', name = 'list_directory', input = { path = '.' }, status = 'running' })
  up2('tool_result', { agent = 'local', toolCallId = 't1', output = 'src/', isError = false })
  up2('turn_ended', { agent = 'local', stopReason = 'end_turn' })
  local after = vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
  local first, second = H.find_line(after, '⚙ `search` · done', true), H.find_line(after, '⚙ `list_directory`', true)
  H.check('a reused call id in a later turn gets its own block', first ~= nil and second ~= nil and second > first, after)
  H.check('the earlier block keeps its own output', after[first + 5] == '    │ b.py:9: parse(y)' and H.find_line(after, '│ src/', true) > second, after)

  -- issue 31: milk's own read before the model's request and the model's read of the same
  -- file are two rows that say whose each is, never two identical rows.
  up2('tool_call', { agent = 'local', toolCallId = 'milk-read-1a2b3c4d-0', name = 'read_file', input = { path = 'a.py' }, status = 'completed' })
  up2('tool_result', { agent = 'local', toolCallId = 'milk-read-1a2b3c4d-0', output = 'x = 1', isError = false })
  up2('tool_call', { agent = 'local', toolCallId = 'call_7', name = 'read_file', input = { path = 'a.py' }, status = 'running' })
  up2('tool_result', { agent = 'local', toolCallId = 'call_7', output = 'x = 1', isError = false })
  local reads = vim.tbl_filter(function(l)
    return l:find('⚙ `read_file` · done', 1, true) == 1
  end, vim.api.nvim_buf_get_lines(S.buf, 0, -1, false))
  H.check("milk's read and the model's are told apart", #reads == 2 and reads[1] ~= reads[2]
    and reads[1]:find('by milk', 1, true) ~= nil and reads[2]:find('by milk', 1, true) == nil, reads)

  -- Permission questions in plain words: a command, a path; never JSON, never `\n`.
  local permission = require('milk.permission')
  local p1 = permission.prompt({ agent = 'claude', tool = 'Bash', input = { command = 'echo a\necho b', description = 'Two echoes' } })
  H.check('a multi-line command in the prompt: no \\n, no JSON', p1 == 'milk: Claude wants to run a command (Bash): echo a ⏎ echo b', p1)
  local p2 = permission.prompt({ agent = 'claude', tool = 'WebFetch', input = { url = 'https://example.com/a_b', prompt = 'sum\nup' } })
  H.check('a tool with a url: the url', p2 == 'milk: Claude wants to use WebFetch on https://example.com/a_b', p2)
  local p3 = permission.prompt({ agent = 'local', tool = 'edit_file', input = { path = 'src/__init__.py', old_text = 'a\nb', new_text = 'c' },
    description = 'Edit src/__init__.py: replace 2 line(s) with 1 line(s)' })
  H.check('a path, and the description when it adds something', p3
    == 'milk: local model wants to use edit_file on src/__init__.py (Edit src/__init__.py: replace 2 line(s) with 1 line(s))', p3)

  -- While a question is open the block says pending; the answer moves it on.
  local pseq = 0
  local function upq(kind, fields)
    pseq = pseq + 1
    chat.on_update(vim.tbl_extend('force', { sessionId = 'perm', turnId = 'q', seq = pseq, kind = kind }, fields or {}), nil)
  end
  upq('turn_started', { agent = 'claude', route = 'claude', reason = 'user asked' })
  upq('tool_call', { agent = 'claude', toolCallId = 'b1', name = 'Bash', input = { command = 'make' }, status = 'running' })
  upq('tool_call', { agent = 'claude', toolCallId = 'b2', name = 'Bash', input = { command = 'make clean' }, status = 'running' })
  local PS = chat.sessions.perm
  local h1 = chat.permission_asked({ sessionId = 'perm', turnId = 'q', toolCallId = 'b1', agent = 'claude', tool = 'Bash', input = { command = 'make' } })
  local plines = vim.api.nvim_buf_get_lines(PS.buf, 0, -1, false)
  H.check('the block says pending while its question is open', H.find_line(plines, '⚙ `Bash` · pending', true) ~= nil, plines)
  H.check('the question line, in plain words', H.find_line(plines, '? Claude wants to run `make`', true) ~= nil, plines)
  chat.permission_answered(h1, 'Allow once', 'allow_once')
  plines = vim.api.nvim_buf_get_lines(PS.buf, 0, -1, false)
  H.check('allowed: the block runs', plines[H.find_line(plines, 'make', true) - 2] == '⚙ `Bash` · running', plines)
  local h2 = chat.permission_asked({ sessionId = 'perm', turnId = 'q', toolCallId = 'b2', agent = 'claude', tool = 'Bash', input = { command = 'make clean' } })
  chat.permission_answered(h2, 'denied (dismissed)', 'deny')
  plines = vim.api.nvim_buf_get_lines(PS.buf, 0, -1, false)
  H.check('denied: the block says denied', H.find_line(plines, '⚙ `Bash` · denied', true) ~= nil, plines)
  upq('turn_ended', { agent = 'claude', stopReason = 'cancelled' })
  plines = vim.api.nvim_buf_get_lines(PS.buf, 0, -1, false)
  H.check('a cancelled turn: its running block says cancelled', H.find_line(plines, '⚙ `Bash` · cancelled', true) ~= nil
    and H.find_line(plines, '⚙ `Bash` · denied', true) ~= nil, plines)

  -- The escalation line in words, for each way Claude is reached.
  local render = require('milk.render')
  local words = {
    { { by = 'user', reason = 'user asked', mode = 'first', contextChars = 2515 }, '↑ sent to Claude with a 2.5k-char summary · you asked' },
    { { by = 'user', reason = 'continuing with Claude', mode = 'resume', contextChars = 0 }, "↑ back to Claude's conversation · you escalated this session" },
    { { by = 'agent', reason = 'too big', mode = 'returning', contextChars = 900 }, "↑ back to Claude's conversation with a 900-char update · the local model asked: too big" },
    { { by = 'fallback', reason = 'model_unreachable: refused', mode = 'fresh', contextChars = 12000 },
      '↑ sent to Claude in a new conversation with a 12k-char summary · the local model failed: model_unreachable: refused' },
  }
  for _, w in ipairs(words) do
    H.check('escalation words: ' .. w[2], render.escalation_text(w[1]) == w[2], render.escalation_text(w[1]))
  end

  -- Updates of another turn of an unknown session open a buffer for it.
  chat.on_update({ sessionId = 'other', turnId = 'x', seq = 1, kind = 'turn_started', agent = 'claude', route = 'claude', reason = 'user asked' }, nil)
  H.check('unknown session gets its own buffer', chat.sessions.other ~= nil and chat.sessions.other.buf ~= S.buf)
  chat.on_update({ sessionId = 'other', turnId = 'x', seq = 2, kind = 'turn_ended', agent = 'claude', stopReason = 'error' }, nil)
  local other = vim.api.nvim_buf_get_lines(chat.sessions.other.buf, 0, -1, false)
  H.check('an error end without a message: failed', other[#other] == '— Claude · failed', other)
  -- Malformed updates do no harm.
  local ok = pcall(chat.on_update, { kind = 'text' }, nil)
  H.check('update without sessionId ignored', ok)
  ok = pcall(chat.on_update, { sessionId = sid, turnId = 'new', seq = 1, kind = 'future_kind', x = 1 }, nil)
  H.check('unknown kind ignored', ok)

  -- UI options: split direction and size, keymaps (custom, disabled, defaults).
  H.setup_milk({ ui = { split = 'below', size = 12, keymaps = { close = 'Q', sessions = false } } })
  vim.cmd('only')
  chat.on_update({ sessionId = 'ui-test', turnId = 'u', seq = 1, kind = 'turn_started', agent = 'local', route = 'auto', reason = 'default' }, nil)
  local uwin = chat.show('ui-test')
  local ubuf = chat.sessions['ui-test'].buf
  H.check('split below', uwin and vim.api.nvim_win_get_position(uwin)[1] > 0 and vim.api.nvim_win_get_position(uwin)[2] == 0)
  H.check('split size', uwin and vim.api.nvim_win_get_height(uwin) == 12, uwin and vim.api.nvim_win_get_height(uwin))
  local function map(lhs)
    for _, m in ipairs(vim.api.nvim_buf_get_keymap(ubuf, 'n')) do
      if m.lhs == lhs then
        return m
      end
    end
  end
  H.check('custom close key Q', map('Q') ~= nil and map('q') == nil)
  H.check('disabled sessions key', map('S') == nil)
  H.check('default cancel key <C-c>', map('<C-C>') ~= nil and map('<C-C>').desc == 'milk: cancel the running turn')
  vim.api.nvim_win_call(uwin, function()
    vim.cmd('normal Q')
  end)
  H.check('Q closes the chat window', not vim.api.nvim_win_is_valid(uwin))
  chat.on_update({ sessionId = 'ui-test', turnId = 'u', seq = 2, kind = 'turn_ended', agent = 'local', stopReason = 'end_turn' }, nil)
  local ok_bad = pcall(require('milk').setup, { ui = { split = 'diagonal' } })
  H.check('a bad ui.split is refused', not ok_bad)

  -- A real turn that loses an update is reloaded from milk/session/get when it ends.
  H.start_openai()
  H.setup_milk()
  local dropped = false
  local orig = chat.on_update
  chat.on_update = function(p, id)
    if p.kind == 'text' and not dropped then
      dropped = true
      return -- lose the first text update
    end
    return orig(p, id)
  end
  H.script_openai({ { text = 'ABCDEFGHIJ', chunk_chars = 2 } })
  vim.cmd('Milk lose one')
  local done = H.wait_turn(1)
  chat.on_update = orig
  H.check('real turn finished', done and done.result and done.result.text == 'ABCDEFGHIJ', done)
  local real = H.chat_lines()
  H.check('after the reload the full answer is shown', H.find_line(real, '^ABCDEFGHIJ$') ~= nil, real)
  H.check('after the reload the gap notice is gone', H.find_line(real, 'missed', true) == nil, real)
  H.check('history shows the user message', H.find_line(real, 'lose one', true) ~= nil, real)

  -- A failing turn from the real server: an error notice (highlighted) and the error end.
  for _, c in ipairs(vim.lsp.get_clients({ name = 'milk' })) do
    c:stop()
  end
  H.wait(5000, function()
    return #vim.lsp.get_clients({ name = 'milk' }) == 0
  end)
  H.setup_milk({ settings = { ['local'] = { baseUrl = 'http://127.0.0.1:9/v1' }, claude = { path = H.tmp .. '/no-claude' } } })
  vim.cmd('Milk this cannot work')
  done = H.wait_turn(2)
  local r = done and done.result or {}
  H.check('failed turn: stopReason error', r.stopReason == 'error' and type(r.error) == 'table', done)
  local S2 = chat.sessions[require('milk').session()]
  local flines = vim.api.nvim_buf_get_lines(S2.buf, 0, -1, false)
  local err_row = H.find_line(flines, '^— local model · failed: ')
  H.check('turn ended with the error, in plain words', err_row ~= nil
    and flines[err_row]:find(r.error and r.error.message or '?', 1, true) ~= nil, flines)
  H.check('the error is said once (no separate notice)', H.find_line(flines, '^✗ error: ') == nil, flines)
  H.check('error line highlighted', err_row and extmark_groups(S2.buf, err_row - 1).MilkNoticeError, flines)
  H.check('status idle after the failed turn', require('milk').status() == 'milk: idle', require('milk').status())

  -- issue 32: an advisor turn's plan is one checklist whose lines tick in place, saying who
  -- did each step.
  local aseq = 0
  local function upa(kind, fields)
    aseq = aseq + 1
    chat.on_update(vim.tbl_extend('force', { sessionId = sid, turnId = 'adv', seq = aseq, kind = kind }, fields or {}), nil)
  end
  local function steps(s1, a1, s2, a2)
    return { { content = 'In `a.py` set X', status = s1, agent = a1 }, { content = 'In `b.py` set Y', status = s2, agent = a2 } }
  end
  upa('turn_started', { agent = 'claude', route = 'advise', reason = "user asked for Claude's plan" })
  upa('text', { agent = 'claude', delta = '1. In `a.py` set X\n2. In `b.py` set Y' })
  upa('plan', { steps = steps('pending', nil, 'pending', nil) })
  upa('plan', { steps = steps('in_progress', 'local', 'pending', nil) })
  local running = vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
  H.check('a running step says who does it', H.find_line(running, '  ▸ 1. In `a.py` set X · local model…', true) ~= nil, running)
  upa('text', { agent = 'local', delta = 'Step 1 done.' })
  upa('plan', { steps = steps('completed', 'local', 'in_progress', 'claude') })
  upa('plan', { steps = steps('completed', 'local', 'completed', 'claude') })
  upa('turn_ended', { agent = 'claude', stopReason = 'end_turn' })
  local planned = vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
  local titles = vim.tbl_filter(function(l)
    return l == "Claude's plan (the local model does the steps):"
  end, planned)
  H.check('one checklist for the plan', #titles == 1, planned)
  H.check('step 1 ticked, done by the local model', H.find_line(planned, '  ☑ 1. In `a.py` set X · local model', true) ~= nil, planned)
  H.check('step 2 ticked, done by Claude', H.find_line(planned, '  ☑ 2. In `b.py` set Y · Claude', true) ~= nil, planned)
  H.check('no step left running', H.find_line(planned, '  ▸ ', true) == nil, planned)
  H.check('the checklist stays under Claude\'s plan, above the step\'s answer',
    H.find_line(planned, "Claude's plan (the local model", true) < H.find_line(planned, 'Step 1 done.', true), planned)
end)
