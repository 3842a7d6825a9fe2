-- A visual-selection :Milk sends the selection (and its file) as context.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  H.start_openai()
  H.setup_milk()

  local file = H.ws .. '/calc.py'
  vim.fn.writefile({ 'def add(a, b):', '    return a + b', '', 'def sub(a, b):', '    return a - b' }, file)
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  -- An unsaved change: the context must carry the editor's text, not the file's.
  vim.api.nvim_buf_set_lines(0, 1, 2, false, { '    return a + b  # unsaved' })

  -- Capture what the plugin sends.
  local sent
  local orig = require('milk.client').request
  require('milk.client').request = function(client, method, params, cb)
    if method == require('milk.methods').CHAT then
      sent = vim.deepcopy(params)
    end
    return orig(client, method, params, cb)
  end

  H.script_openai({ { text = 'It adds two numbers.' } })
  -- Linewise visual selection of lines 1-2, then :'<,'>Milk.
  vim.cmd('normal! ggVj\27')
  vim.cmd("'<,'>Milk explain this")
  local done = H.wait_turn(1)
  H.check('turn finished', done and done.result and done.result.stopReason == 'end_turn', done)

  local ctx = sent and sent.context and sent.context[1]
  H.check('milk/chat carried one context item', sent and sent.context and #sent.context == 1, sent)
  H.check('context uri is the file', ctx and ctx.uri == vim.uri_from_fname(file), ctx)
  H.check('context text is the (unsaved) selection', ctx and ctx.text == 'def add(a, b):\n    return a + b  # unsaved', ctx)
  H.check('context range covers lines 1-2', ctx and ctx.range.start.line == 0 and ctx.range.start.character == 0
    and ctx.range['end'].line == 1 and ctx.range['end'].character == #'    return a + b  # unsaved', ctx)
  H.check('message text sent as typed', sent and sent.text == 'explain this', sent)

  -- The model saw the selection (the fake records request bodies).
  local reqs = H.openai_requests() or {}
  local body = vim.json.encode(reqs)
  H.check('the local model received the selected text', body:find('# unsaved', 1, true) ~= nil)

  local lines = H.chat_lines()
  H.check('chat shows the attached context', H.find_line(lines, '> context: `calc.py` L1-L2', true) ~= nil, lines)
  H.check('answer in chat', H.find_line(lines, 'It adds two numbers.', true) ~= nil, lines)

  -- Characterwise selection: `a + b` on line 2 (UTF-16 columns in the range).
  vim.api.nvim_set_current_win(vim.fn.bufwinid(vim.fn.bufnr(file)))
  vim.api.nvim_win_set_cursor(0, { 5, 11 })
  vim.cmd('normal! v4l\27')
  H.script_openai({ { text = 'subtraction' } })
  vim.cmd("'<,'>Milk what is this")
  H.wait_turn(2)
  ctx = sent and sent.context and sent.context[1]
  H.check('charwise selection text', ctx and ctx.text == 'a - b', ctx)
  H.check('charwise selection range', ctx and ctx.range.start.line == 4 and ctx.range.start.character == 11
    and ctx.range['end'].line == 4 and ctx.range['end'].character == 16, ctx)

  -- A selection in a buffer without a file goes into the message text instead.
  vim.cmd('enew')
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'scratch one', 'scratch two' })
  vim.cmd('normal! ggVj\27')
  H.script_openai({ { text = 'scratch seen' } })
  vim.cmd("'<,'>Milk look")
  H.wait_turn(3)
  H.check('no-file selection: no context item', sent and sent.context == nil, sent)
  H.check('no-file selection: text in the message', sent and sent.text == 'look\n\n```\nscratch one\nscratch two\n```', sent and sent.text)
  vim.cmd('bwipeout!')

  -- Without a range no context is attached.
  H.script_openai({ { text = 'plain' } })
  vim.cmd('Milk no selection here')
  H.wait_turn(4)
  H.check('no range, no context', sent and sent.context == nil and sent.text == 'no selection here', sent)

  -- :Milk without text and without a range opens the chat (no prompt); `i` in the chat
  -- window asks with vim.ui.input.
  local prompted
  vim.ui.input = function(opts, on_confirm)
    prompted = opts.prompt
    on_confirm('typed in the prompt')
  end
  vim.cmd('only')
  vim.cmd('Milk')
  local chat_buf = require('milk.chat').sessions[require('milk').session()].buf
  H.wait(10000, function()
    return vim.api.nvim_get_current_buf() == chat_buf
  end)
  H.check(':Milk alone opens the chat and moves into it', vim.api.nvim_get_current_buf() == chat_buf)
  H.check(':Milk alone asks nothing', prompted == nil, prompted)
  H.script_openai({ { text = 'got it' } })
  vim.cmd('normal i')
  H.wait_turn(5)
  H.check('i in the chat prompts via vim.ui.input', prompted == 'milk> ' and sent.text == 'typed in the prompt', { prompted, sent })
end)
