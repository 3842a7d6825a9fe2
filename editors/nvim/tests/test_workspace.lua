-- Workspace files are attached to the client: the server reads unsaved editor text, and
-- the local agent's edits of open files arrive through workspace/applyEdit (unsaved).
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

H.run(function()
  H.start_openai()
  H.setup_milk()

  local file = H.ws .. '/app.py'
  vim.fn.writefile({ 'x = 1' }, file)
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'x = 2  # unsaved' })

  H.script_openai({
    { tool_calls = { { name = 'read_file', arguments = { path = 'app.py' } } } },
    { text = 'Read it.' },
  })
  vim.cmd('Milk read app.py')
  H.wait_turn(1)
  local c = H.milk_client()
  H.check('the open file is attached to the milk client', c and vim.lsp.buf_is_attached(buf, c.id))
  local lines = H.chat_lines()
  H.check('read_file saw the unsaved editor text', H.find_line(lines, '│ x = 2  # unsaved', true) ~= nil, lines)

  -- edit_file on the open file: reviewed as a diff of the buffer's text, allowed with `a`,
  -- applied to the buffer, not written to disk.
  H.stub_select({ function() return nil end })
  H.script_openai({
    { tool_calls = { { name = 'edit_file', arguments = { path = 'app.py', old_text = 'x = 2', new_text = 'x = 3' } } } },
    { text = 'Edited.' },
  })
  vim.cmd('Milk change 2 to 3')
  local diff = require('milk.diff')
  H.wait(30000, function()
    return #diff.views > 0
  end)
  local view = diff.views[1]
  H.check('the edit opened the diff review, not a select', view ~= nil and #H.selects == 0, H.selects)
  if view then
    H.check('review: before is the unsaved buffer text', vim.deep_equal(vim.api.nvim_buf_get_lines(view.bufs.before, 0, -1, false), { 'x = 2  # unsaved' }))
    H.check('review: after is the edited text', vim.deep_equal(vim.api.nvim_buf_get_lines(view.bufs.after, 0, -1, false), { 'x = 3  # unsaved' }))
    vim.api.nvim_set_current_win(view.wins.after)
    vim.cmd('normal a')
  end
  local done = H.wait_turn(2)
  H.check('edit turn finished', done and done.result and done.result.stopReason == 'end_turn', done)
  H.check('the review closed', #diff.views == 0)
  H.check('the buffer holds the edit', vim.api.nvim_buf_get_lines(buf, 0, -1, false)[1] == 'x = 3  # unsaved',
    vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  H.check('the buffer is modified, the file on disk is not', vim.bo[buf].modified and vim.fn.readfile(file)[1] == 'x = 1')
  lines = H.chat_lines()
  H.check('the tool said it edited in the editor', H.find_line(lines, 'in the editor (not saved yet)', true) ~= nil, lines)

  -- A file opened later is attached too.
  vim.fn.writefile({ 'y = 1' }, H.ws .. '/later.py')
  vim.cmd('edit ' .. vim.fn.fnameescape(H.ws .. '/later.py'))
  H.check('a file opened later is attached', vim.lsp.buf_is_attached(0, c.id))
  -- A file outside the workspace is not.
  local outside = H.tmp .. '/outside.txt'
  vim.fn.writefile({ 'z' }, outside)
  vim.cmd('edit ' .. vim.fn.fnameescape(outside))
  H.check('a file outside the workspace is not attached', not vim.lsp.buf_is_attached(0, c.id))
end)
