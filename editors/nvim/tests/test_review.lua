-- An edit question opens the diff review (before/after in diff mode, full paths, keys to
-- allow once / for the session / deny); a turn that changed files gets a "files changed"
-- line whose <CR> shows the turn's diff and whose `u` undoes it; :MilkUndo[!] and an undo
-- conflict. Real milk-lsp, the local agent on the scripted model server, Claude's Write
-- through the real CLI.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  H.start_openai()
  H.start_anthropic()
  H.setup_milk()
  local diff = require('milk.diff')
  local chat = require('milk.chat')
  local reviews, undos = {}, {}
  vim.api.nvim_create_autocmd('User', { pattern = 'MilkReview', callback = function(ev) table.insert(reviews, ev.data) end })
  vim.api.nvim_create_autocmd('User', { pattern = 'MilkUndo', callback = function(ev) table.insert(undos, ev.data) end })
  H.stub_select({ function() return nil end })

  local calc = H.ws .. '/calc.py'
  vim.fn.writefile({ 'def add(a, b):', '    return a - b' }, calc)
  local function read(path)
    return vim.fn.filereadable(path) == 1 and vim.fn.readfile(path) or nil
  end
  local function wait_view()
    H.wait(30000, function()
      return #diff.views > 0
    end)
    return diff.views[#diff.views]
  end
  local function lines_of(buf)
    return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  end
  local function press(view, key)
    vim.api.nvim_set_current_win(view.wins.after)
    vim.cmd('normal ' .. vim.keycode(key))
  end
  local function edit(path, old, new)
    return { name = 'edit_file', arguments = { path = path, old_text = old, new_text = new } }
  end

  -- 1. The question: a diff, not a select; the block says pending; `a` allows once.
  H.script_openai({ { tool_calls = { edit('calc.py', 'a - b', 'a + b') } }, { text = 'Fixed.' } })
  vim.cmd('Milk fix calc.py')
  local view = wait_view()
  H.check('an edit question opens the diff review', view ~= nil and #H.selects == 0, H.selects)
  if not view then
    return
  end
  H.check('before: the file as it is', vim.deep_equal(lines_of(view.bufs.before), { 'def add(a, b):', '    return a - b' }), lines_of(view.bufs.before))
  H.check('after: the file as the edit leaves it', vim.deep_equal(lines_of(view.bufs.after), { 'def add(a, b):', '    return a + b' }), lines_of(view.bufs.after))
  H.check('both sides in diff mode', vim.wo[view.wins.before].diff and vim.wo[view.wins.after].diff)
  H.check('the full path in each side\'s bar', vim.wo[view.wins.before].winbar == ' before: ' .. calc
    and vim.wo[view.wins.after].winbar == ' after: ' .. calc, { vim.wo[view.wins.before].winbar, vim.wo[view.wins.after].winbar })
  local head = table.concat(lines_of(view.bufs.head), '\n')
  H.check('the heading says what is asked, without JSON', head:find('local model wants to use edit_file on calc.py', 1, true) ~= nil
    and head:find('{', 1, true) == nil and head:find('\\n', 1, true) == nil, head)
  H.check('the heading lists the keys', head:find('a Allow once', 1, true) and head:find('A Allow for this session', 1, true)
    and head:find('d / <Esc> / q Deny', 1, true), head)
  H.check('the review is in a tab of its own', vim.api.nvim_get_current_tabpage() == view.tab and #vim.api.nvim_list_tabpages() == 2)
  H.check('the block says pending while the review is open', H.find_line(H.chat_lines(), '⚙ `edit_file` · pending', true) ~= nil, H.chat_lines())
  H.check('the statusline says a question waits', require('milk').status() == 'milk: local… (permission?)', require('milk').status())
  press(view, 'a')
  local done = H.wait_turn(1)
  H.check('allowed: the turn ended', done and done.result and done.result.stopReason == 'end_turn', done)
  H.check('allowed: the file changed', vim.deep_equal(read(calc), { 'def add(a, b):', '    return a + b' }), read(calc))
  H.check('the review tab closed', #diff.views == 0 and #vim.api.nvim_list_tabpages() == 1)
  local lines = H.chat_lines()
  local line = H.find_line(lines, '^✎ ')
  H.check('a changes line under the turn', line and lines[line] == '✎ 1 file changed (+1 −1) · <CR> review · u undo', lines)
  H.check('the block is done', H.find_line(lines, '⚙ `edit_file` · done', true) ~= nil, lines)
  H.check('TurnResult.changes lists the file', done.result.changes and done.result.changes[1]
    and done.result.changes[1].uri == vim.uri_from_fname(calc) and done.result.changes[1].kind == 'modified', done.result.changes)

  -- 2. <CR> on the changes line: the turn's diff; q closes it.
  local S = chat.sessions[require('milk').session()]
  local cwin = vim.fn.bufwinid(S.buf)
  vim.api.nvim_set_current_win(cwin)
  vim.api.nvim_win_set_cursor(cwin, { line, 0 })
  vim.cmd('normal ' .. vim.keycode('<CR>'))
  view = wait_view()
  H.check('<CR> on the changes line opens the turn\'s diff', view ~= nil and #reviews == 1, reviews)
  if view then
    H.check('turn review: before and after', vim.deep_equal(lines_of(view.bufs.before), { 'def add(a, b):', '    return a - b' })
      and vim.deep_equal(lines_of(view.bufs.after), { 'def add(a, b):', '    return a + b' }))
    H.check('turn review: heading', lines_of(view.bufs.head)[1] == 'Changes of this turn: 1 file', lines_of(view.bufs.head))
    press(view, 'q')
    H.check('q closes the turn review', #diff.views == 0)
  end

  -- 3. `u` on the changes line undoes the turn.
  vim.api.nvim_set_current_win(cwin)
  vim.api.nvim_win_set_cursor(cwin, { line, 0 })
  vim.cmd('normal u')
  H.wait(20000, function()
    return #undos >= 1
  end)
  H.check('u undid the turn: the file is back', vim.deep_equal(read(calc), { 'def add(a, b):', '    return a - b' }), { undos, read(calc) })
  lines = H.chat_lines()
  H.check('the changes line says undone', lines[line] == '✎ 1 file changed (+1 −1) · <CR> review · undone', lines[line])
  local note = H.notes[#H.notes]
  H.check('the undo names the files restored', note and note.msg == 'milk: undone; restored calc.py', note)

  -- 4. Deny with <Esc>; dismiss by closing the tab: the file is untouched, the block denied.
  H.script_openai({ { tool_calls = { edit('calc.py', 'a - b', 'a * b') } }, { text = 'Not changed.' } })
  vim.cmd('Milk try again')
  view = wait_view()
  press(view, '<Esc>')
  done = H.wait_turn(2)
  H.check('<Esc> denies: the file is untouched', vim.deep_equal(read(calc), { 'def add(a, b):', '    return a - b' }), read(calc))
  lines = H.chat_lines()
  H.check('<Esc> denies: the block says denied', H.find_line(lines, '⚙ `edit_file` · denied', true, H.find_line(lines, '^try again$')) ~= nil, lines)
  H.check('a denied turn has no changes line', done and done.result and done.result.changes == nil, done)
  H.script_openai({ { tool_calls = { edit('calc.py', 'a - b', 'a // b') } }, { text = 'Not changed either.' } })
  vim.cmd('Milk and again')
  view = wait_view()
  vim.cmd('tabclose')
  done = H.wait_turn(3)
  H.check('closing the review denies', vim.deep_equal(read(calc), { 'def add(a, b):', '    return a - b' }) and #diff.views == 0, read(calc))

  -- 5. `A` allows for the session: a turn editing two files asks once; its review has
  --    both files (]f moves between them).
  vim.fn.writefile({ 'X = 1' }, H.ws .. '/one.py')
  vim.fn.writefile({ 'Y = 1' }, H.ws .. '/two.py')
  H.selects = {}
  H.script_openai({
    { tool_calls = { edit('one.py', 'X = 1', 'X = 2') } },
    { tool_calls = { edit('two.py', 'Y = 1', 'Y = 2') } },
    { text = 'Both.' },
  })
  vim.cmd('Milk change both')
  view = wait_view()
  press(view, 'A')
  done = H.wait_turn(4)
  H.check('A: both files changed with one question', read(H.ws .. '/one.py')[1] == 'X = 2' and read(H.ws .. '/two.py')[1] == 'Y = 2'
    and #diff.views == 0, { read(H.ws .. '/one.py'), read(H.ws .. '/two.py') })
  lines = H.chat_lines()
  local two = H.find_line(lines, '^✎ 2 files changed %(%+2 −2%) · <CR> review · u undo$')
  H.check('the changes line counts both files', two ~= nil, lines)
  vim.api.nvim_set_current_win(cwin)
  vim.api.nvim_win_set_cursor(cwin, { two, 0 })
  vim.cmd('normal ' .. vim.keycode('<CR>'))
  view = wait_view()
  if view then
    local first = lines_of(view.bufs.after)[1]
    press(view, ']f')
    local second = lines_of(view.bufs.after)[1]
    H.check(']f shows the other file', ({ ['X = 2'] = 'Y = 2', ['Y = 2'] = 'X = 2' })[first] == second, { first, second })
    H.check('the heading says which file', table.concat(lines_of(view.bufs.head), '\n'):find('file 2 of 2', 1, true) ~= nil, lines_of(view.bufs.head))
    press(view, 'q')
  end

  -- 6. :MilkUndo undoes the last turn with changes.
  local n = #undos
  vim.cmd('MilkUndo')
  H.wait(20000, function()
    return #undos > n
  end)
  H.check(':MilkUndo undid the last turn with changes', read(H.ws .. '/one.py')[1] == 'X = 1' and read(H.ws .. '/two.py')[1] == 'Y = 1')
  H.check('its line says undone', H.chat_lines()[two]:find('· undone$') ~= nil, H.chat_lines()[two])
  n = #undos
  vim.cmd('MilkUndo')
  H.wait(5000, function()
    return #undos > n or H.notes[#H.notes].msg:find('no turn', 1, true) ~= nil
  end)
  H.check(':MilkUndo with nothing left says so', H.notes[#H.notes].msg == 'milk: no turn of this session has changes to undo', H.notes[#H.notes])

  -- 7. A conflict: the file changed after the turn. The question names it; keeping does
  --    nothing; :MilkUndo! undoes anyway.
  H.script_openai({ { tool_calls = { edit('calc.py', 'a - b', 'a + b') } }, { text = 'Again.' } })
  vim.cmd('Milk fix it for good')
  H.wait_turn(5)
  H.check('allowed for the session: edit_file is not asked again', #diff.views == 0 and read(calc)[2] == '    return a + b', read(calc))
  vim.fn.writefile({ 'def add(a, b):', '    return a + b  # mine' }, calc)
  H.selects = {}
  H.stub_select({ H.pick('x', 'keep') })
  n = #undos
  vim.cmd('MilkUndo')
  H.wait(20000, function()
    return #undos > n and #H.selects > 0
  end)
  local q = H.selects[1]
  H.check('a conflict asks, naming the file', q and q.kind == 'milk.undo_conflict' and q.prompt:find('calc.py changed after that turn', 1, true), q)
  H.check('keep: the file stays as the user left it', read(calc)[2] == '    return a + b  # mine', read(calc))
  H.check('keep: says how to force', H.notes[#H.notes].msg:find(':MilkUndo!', 1, true) ~= nil, H.notes[#H.notes])
  n = #undos
  vim.cmd('MilkUndo!')
  H.wait(20000, function()
    return #undos > n
  end)
  H.check(':MilkUndo! undoes anyway', vim.deep_equal(read(calc), { 'def add(a, b):', '    return a - b' }), read(calc))

  -- 8. Claude's Write of a new file, through the real CLI: the review shows no "before".
  local new_file = H.ws .. '/hello.txt'
  H.script_anthropic({
    { tool_use = { name = 'Write', input = { file_path = new_file, content = 'hello\nworld\n' } } },
    { text = 'Written.' },
  })
  vim.cmd('Milk! write hello.txt')
  view = wait_view()
  if view then
    H.check('Write: before is empty, after the new text', #lines_of(view.bufs.before) == 1 and lines_of(view.bufs.before)[1] == ''
      and vim.deep_equal(lines_of(view.bufs.after), { 'hello', 'world' }), { lines_of(view.bufs.before), lines_of(view.bufs.after) })
    H.check('Write: the bar says the file does not exist yet', vim.wo[view.wins.before].winbar == ' before: ' .. new_file .. ' (does not exist yet)',
      vim.wo[view.wins.before].winbar)
    H.check('Write: the heading names Claude and the path', lines_of(view.bufs.head)[1]:find('Claude wants to use Write on ' .. new_file, 1, true) == 1,
      lines_of(view.bufs.head))
    press(view, 'a')
  end
  done = H.wait_turn(6, 90000)
  H.check('Write allowed: the file exists', vim.deep_equal(read(new_file), { 'hello', 'world' }), read(new_file))
  lines = H.chat_lines()
  H.check('Write: a changes line', H.find_line(lines, '^✎ 1 file changed %(%+2 −0%)') ~= nil, lines)
  n = #undos
  vim.cmd('MilkUndo')
  H.wait(20000, function()
    return #undos > n
  end)
  H.check('undo of a created file deletes it', vim.fn.filereadable(new_file) == 0)
end)
