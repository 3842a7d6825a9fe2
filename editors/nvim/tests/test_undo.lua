-- :MilkUndo of an edit the local agent made in an open buffer: disk and buffer end as the
-- turn found them, saved where they were saved. The edit saved with :write after the turn
-- (issue 20 item 11: the buffer came back, the file on disk did not, and the buffer stayed
-- modified), the edit never saved, and a buffer that already had unsaved text of the user's.
-- Real milk-lsp, the local agent on the scripted model server.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  H.start_openai()
  H.setup_milk()
  local diff = require('milk.diff')
  local undos = {}
  vim.api.nvim_create_autocmd('User', { pattern = 'MilkUndo', callback = function(ev) table.insert(undos, ev.data) end })
  H.stub_select({ function() return nil end })

  local function read(path)
    return vim.fn.filereadable(path) == 1 and vim.fn.readfile(path) or nil
  end
  local function lines_of(buf)
    return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  end
  local turns = 0
  -- One local turn that edits `name` (open in a buffer) with `old` -> `new`, allowed with `a`.
  local function edit_turn(name, old, new)
    H.script_openai({
      { tool_calls = { { name = 'edit_file', arguments = { path = name, old_text = old, new_text = new } } } },
      { text = 'Edited.' },
    })
    vim.cmd('Milk change ' .. name)
    H.wait(30000, function()
      return #diff.views > 0
    end)
    local view = diff.views[#diff.views]
    if view then
      vim.api.nvim_set_current_win(view.wins.after)
      vim.cmd('normal a')
    end
    turns = turns + 1
    return H.wait_turn(turns)
  end
  local function undo()
    local n = #undos
    vim.cmd('MilkUndo')
    H.wait(20000, function()
      return #undos > n
    end)
    return undos[n + 1]
  end
  local function open(path)
    vim.cmd('tabnext 1')
    vim.cmd('edit ' .. vim.fn.fnameescape(path))
    return vim.api.nvim_get_current_buf()
  end

  -- 1. The edit lands in the buffer; the user saves it; :MilkUndo puts back both.
  local calc = H.ws .. '/calc.py'
  vim.fn.writefile({ 'def add(a, b):', '    return a - b' }, calc)
  local buf = open(calc)
  local done = edit_turn('calc.py', 'a - b', 'a + b')
  H.check('saved: the turn ended', done and done.result and done.result.stopReason == 'end_turn', done)
  H.check('saved: the edit is in the buffer, not on disk', lines_of(buf)[2] == '    return a + b' and vim.bo[buf].modified
    and read(calc)[2] == '    return a - b', { lines_of(buf), read(calc) })
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('silent write')
  end)
  H.check('saved: the edit is on disk', read(calc)[2] == '    return a + b', read(calc))
  local res = undo()
  H.check('saved: the undo restored calc.py', res and res.restored and #res.restored == 1, res)
  H.check('saved: the file on disk is back', vim.deep_equal(read(calc), { 'def add(a, b):', '    return a - b' }), read(calc))
  H.check('saved: the buffer is back', vim.deep_equal(lines_of(buf), { 'def add(a, b):', '    return a - b' }), lines_of(buf))
  H.check('saved: the buffer is not modified', not vim.bo[buf].modified)

  -- 2. The edit never saved: the buffer comes back unmodified, the disk was never touched.
  local two = H.ws .. '/two.py'
  vim.fn.writefile({ 'Y = 1' }, two)
  buf = open(two)
  edit_turn('two.py', 'Y = 1', 'Y = 2')
  H.check('unsaved: the edit is in the buffer only', lines_of(buf)[1] == 'Y = 2' and read(two)[1] == 'Y = 1', { lines_of(buf), read(two) })
  res = undo()
  H.check('unsaved: the buffer is back', vim.deep_equal(lines_of(buf), { 'Y = 1' }) and res and res.restored and #res.restored == 1,
    { lines_of(buf), res })
  H.check('unsaved: the buffer is not modified', not vim.bo[buf].modified)
  H.check('unsaved: the disk is as it was', vim.deep_equal(read(two), { 'Y = 1' }), read(two))

  -- 3. The buffer had unsaved text of the user's before the turn: it comes back as the user
  --    left it, still modified, and the disk keeps its own text (also after a :write of the
  --    turn's edit).
  local three = H.ws .. '/three.py'
  vim.fn.writefile({ 'Z = 1' }, three)
  buf = open(three)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'Z = 1  # mine' })
  edit_turn('three.py', 'Z = 1', 'Z = 3')
  H.check('user text: the edit is in the buffer', lines_of(buf)[1] == 'Z = 3  # mine', lines_of(buf))
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('silent write')
  end)
  res = undo()
  H.check('user text: the buffer is as the user left it', vim.deep_equal(lines_of(buf), { 'Z = 1  # mine' }), { lines_of(buf), res })
  H.check('user text: still modified (it was never saved)', vim.bo[buf].modified)
  H.check('user text: the disk is as the turn found it', vim.deep_equal(read(three), { 'Z = 1' }), read(three))
  H.check('no undo failed', #vim.tbl_filter(function(u) return u.error ~= nil or u.conflict ~= nil end, undos) == 0, undos)
end)
