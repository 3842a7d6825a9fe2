-- Escalation shows the Claude header; permission prompts (Claude's and the local agent's)
-- are answered through a stubbed vim.ui.select: allow, and deny by cancelling.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  H.start_openai()
  H.start_anthropic()
  H.setup_milk()
  H.check('the bundled claude CLI exists', H.bundled_claude() ~= nil)

  local seen_status = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = 'MilkStatus',
    callback = function()
      seen_status[require('milk').status()] = true
    end,
  })

  -- 1. :MilkEscalate: a turn run by Claude.
  H.script_anthropic({ { text = 'Claude here, carrying on.', chunk_chars = 5 } })
  vim.cmd('MilkEscalate needs a stronger model')
  local done = H.wait_turn(1, 90000)
  local r = done and done.result or {}
  H.check('escalation turn ended by Claude', r.agent == 'claude' and r.stopReason == 'end_turn', done)
  local lines = H.chat_lines()
  local you = H.find_line(lines, '(escalate to Claude: needs a stronger model)', true)
  local header = H.find_line(lines, '^## Claude')
  local esc = H.find_line(lines, '^↑ sent to Claude with a [%d.]+k?%-char summary · you asked: needs a stronger model$')
  local text = H.find_line(lines, 'Claude here, carrying on.', true)
  H.check('user escalation echoed', you ~= nil, lines)
  H.check('Claude header', header ~= nil and header > you, lines)
  H.check('escalated line with reason', esc ~= nil, lines)
  H.check('Claude text under the Claude header', text ~= nil and text > header, lines)
  H.check('status showed Claude while running', seen_status['milk: Claude…'] == true, seen_status)

  -- 2. Claude asks to run Bash: allow once.
  local status_in_prompt, lines_in_prompt
  H.stub_select({ function(items)
    status_in_prompt = require('milk').status()
    lines_in_prompt = H.chat_lines()
    return H.pick('optionId', 'allow_once')(items)
  end })
  H.script_anthropic({
    { tool_use = { name = 'Bash', input = { command = 'touch claude-was-here.txt' } } },
    { text = 'It printed the greeting.' },
  })
  vim.cmd('Milk please run echo')
  done = H.wait_turn(2, 90000)
  H.check('allowed turn finished', done and done.result and done.result.stopReason == 'end_turn', done)
  local ask = H.selects[1]
  H.check('permission asked through vim.ui.select', ask ~= nil and ask.kind == 'milk.permission', H.selects)
  H.check('prompt shows the tool and its input in plain words', ask
    and ask.prompt == 'milk: Claude wants to run a command (Bash): touch claude-was-here.txt', ask and ask.prompt)
  local ids = {}
  for _, it in ipairs(ask and ask.items or {}) do
    table.insert(ids, it.optionId)
  end
  H.check('options allow_once / allow_session / deny', vim.deep_equal(ids, { 'allow_once', 'allow_session', 'deny' }), ids)
  lines = H.chat_lines()
  local tool = H.find_line(lines, '^⚙ `Bash` · ')
  H.check('Bash tool block done', tool and lines[tool] == '⚙ `Bash` · done', lines)
  H.check('Bash input shown', tool and lines[tool + 2] == '    $ touch claude-was-here.txt', lines)
  H.check('Bash output shown', tool and H.find_line(lines, '→ output:', true, tool) ~= nil, lines)
  H.check('the allowed command ran', vim.fn.filereadable(H.ws .. '/claude-was-here.txt') == 1)
  H.check('permission line answered', H.find_line(lines, '? Claude wants to run `touch claude-was-here.txt` → Allow once', true) ~= nil, lines)
  H.check('the tool block says pending while the question is open', lines_in_prompt
    and H.find_line(lines_in_prompt, '⚙ `Bash` · pending', true) ~= nil, lines_in_prompt)
  H.check('status says permission? while the prompt is open', status_in_prompt == 'milk: Claude… (permission?)', status_in_prompt)

  -- 3. Claude asks again: the prompt is dismissed (nil), which denies.
  H.stub_select({ function() return nil end }, true)
  H.script_anthropic({
    { tool_use = { name = 'Bash', input = { command = 'touch should-not-exist.txt' } } },
    { text = 'Understood, I will not run it.' },
  })
  vim.cmd('Milk run it again')
  done = H.wait_turn(3, 90000)
  H.check('denied turn finished', done and done.result and done.result.stopReason == 'end_turn', done)
  lines = H.chat_lines()
  local denied_line = H.find_line(lines, 'touch should-not-exist.txt` → denied (dismissed)', true)
  H.check('permission line says denied', denied_line ~= nil, lines)
  local asked_again = H.find_line(lines, '^run it again$')
  local tool2 = H.find_line(lines, '^⚙ `Bash` · ', false, asked_again or 1)
  H.check('denied tool block', tool2 and lines[tool2]:find('denied', 1, true) ~= nil, lines)
  H.check('the denied command did not run', vim.fn.filereadable(H.ws .. '/should-not-exist.txt') == 0)

  -- 4. The local agent's run_command: allow through an asynchronous picker.
  local local_lines_in_prompt
  H.stub_select({ function(items)
    local_lines_in_prompt = H.chat_lines()
    return H.pick('optionId', 'allow_once')(items)
  end }, true)
  H.script_openai({
    { tool_calls = { { name = 'run_command', arguments = { command = 'echo local-ran' } } } },
    { text = 'Done locally.' },
  })
  require('milk').chat('run it locally', { route = 'local' })
  done = H.wait_turn(4, 60000)
  H.check('local tool turn finished', done and done.result and done.result.agent == 'local', done)
  lines = H.chat_lines()
  local last_ask = H.selects[#H.selects]
  H.check('local permission prompt names run_command and its command', last_ask
    and last_ask.prompt == 'milk: local model wants to run a command (run_command): echo local-ran', last_ask and last_ask.prompt)
  H.check('local: the block says pending while the question is open', local_lines_in_prompt
    and H.find_line(local_lines_in_prompt, '⚙ `run_command` · pending', true) ~= nil, local_lines_in_prompt)
  local ltool = H.find_line(lines, '^⚙ `run_command` · done')
  H.check('local command output shown', ltool and H.find_line(lines, '│ local-ran', true, ltool) ~= nil, lines)

  -- 5. The local agent: deny by choosing "Deny".
  H.stub_select({ H.pick('optionId', 'deny') })
  H.script_openai({
    { tool_calls = { { name = 'run_command', arguments = { command = 'echo never' } } } },
    { text = 'Not run.' },
  })
  require('milk').chat('try another', { route = 'local' })
  done = H.wait_turn(5, 60000)
  lines = H.chat_lines()
  H.check('local deny: tool block denied', H.find_line(lines, '^⚙ `run_command` · denied') ~= nil, lines)
  H.check('local deny: nothing ran', H.find_line(lines, '│ never', true) == nil, lines)
  H.check('status idle at the end', require('milk').status() == 'milk: idle', require('milk').status())
end)
