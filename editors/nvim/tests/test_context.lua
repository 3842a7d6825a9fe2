-- :MilkContext shows the milk/context preview in a read-only buffer; :MilkStatus reports
-- the server's milk/status.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  H.start_openai()
  H.setup_milk({ settings = { claude = { path = H.bundled_claude() } } })

  H.script_openai({ { text = 'Local answer about the parser.' } })
  vim.cmd('Milk look at the parser')
  H.wait_turn(1)
  local sid = require('milk').session()

  -- :MilkContext (a user escalation preview).
  vim.cmd('MilkContext')
  H.wait(20000, function()
    return #H.events.MilkContext >= 1
  end)
  local ev = H.events.MilkContext[1]
  local buf = ev and ev.buf
  H.check('preview buffer opened', buf and vim.api.nvim_buf_is_valid(buf))
  local lines = buf and vim.api.nvim_buf_get_lines(buf, 0, -1, false) or {}
  local text = table.concat(lines, '\n')
  H.check('preview is read-only', buf and not vim.bo[buf].modifiable and vim.bo[buf].readonly)
  H.check('preview says in words how Claude is reached (no `mode: first`)',
    text:find('- Claude gets: a new conversation, started with the session summary below', 1, true) ~= nil
    and text:find('mode', 1, true) == nil, lines)
  H.check('preview shows the claude command line', text:find('--append-system-prompt-file', 1, true) ~= nil, lines)
  H.check('preview shows the context file', text:find('## Context file', 1, true) ~= nil
    and text:find('look at the parser', 1, true) ~= nil, lines)
  H.check('preview names the session', vim.b[buf].milk_context == sid)
  H.check('preview window is current', vim.api.nvim_get_current_buf() == buf)
  H.check('q closes the preview', vim.fn.maparg('q', 'n', false, true).buffer == 1)
  vim.cmd('close')

  -- Compare with the raw request: the buffer holds the whole context file.
  local client = H.milk_client()
  local raw = client:request_sync(require('milk.methods').CONTEXT, { sessionId = sid }, 20000)
  local preview = raw and raw.result or {}
  H.check('preview holds the whole context file', preview.contextFile and text:find(preview.contextFile, 1, true) ~= nil)

  -- With a reason: as if the local agent escalated (mode still first, reason shown).
  vim.cmd('MilkContext the parser is too hard')
  H.wait(20000, function()
    return #H.events.MilkContext >= 2
  end)
  buf = H.events.MilkContext[2].buf
  text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  H.check('agent-escalation preview shows the reason', text:find('the parser is too hard', 1, true) ~= nil, text)
  vim.cmd('close')

  -- :MilkStatus
  H.notes = {}
  vim.cmd('MilkStatus')
  H.wait(20000, function()
    return #H.events.MilkStatusResult >= 1
  end)
  local st = H.events.MilkStatusResult[1]
  H.check('milk/status result', st and st.version and st['local'] and st['local'].reachable == true, st)
  local note = H.notes[#H.notes]
  H.check(':MilkStatus shows version and storage', note and note.msg:find('milk-lsp ' .. tostring(st and st.version), 1, true)
    and note.msg:find(H.storage, 1, true), note)
  H.check(':MilkStatus shows the local model reachable', note and note.msg:find('local model: ' .. H.openai .. ' (fake-model) — reachable', 1, true), note)
  H.check(':MilkStatus shows Claude found', note and note.msg:find('Claude: ' .. H.bundled_claude(), 1, true)
    and note.msg:find('— found', 1, true), note)
  H.check(':MilkStatus at INFO level when all is well', note and note.level == vim.log.levels.INFO, note)
end)
