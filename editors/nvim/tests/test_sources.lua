-- Issue 38: a checked local answer's sources. Its text ends with "Sources (checked by
-- milk):" and `- path:line[-end]` lines (maybe "Proposed, not in the workspace yet:"), and a
-- `citations` update names the same places. The quickfix list gets them (its window stays
-- closed, said once); gf/gF/<CR> on a source line opens the file at the line, relative to
-- the session's workspace folder and not the cwd; a proposed line is no jump target; a
-- reloaded chat's block is read back by :MilkSources. Synthetic updates, no server.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local api = vim.api

--- A file of `n` lines "<name> line <i>".
local function write_lines(path, name, n)
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  local lines = {}
  for i = 1, n do
    lines[i] = ('%s line %d'):format(name, i)
  end
  vim.fn.writefile(lines, path)
end

local function row_of(lines, text)
  local i = H.find_line(lines, text, true)
  return i
end

--- Press keys as typed (mappings apply); a key's error is returned, not raised.
local function press(keys)
  local ok, err = pcall(vim.cmd, 'normal ' .. keys)
  return not ok and err or nil
end

local function qf_windows()
  local n = 0
  for _, win in ipairs(api.nvim_list_wins()) do
    if vim.bo[api.nvim_win_get_buf(win)].buftype == 'quickfix' then
      n = n + 1
    end
  end
  return n
end

local function groups_at(buf, row)
  local groups = {}
  local ns = api.nvim_get_namespaces()['milk.chat.sources']
  if not ns then
    return groups
  end
  for _, m in ipairs(api.nvim_buf_get_extmarks(buf, ns, { row, 0 }, { row, -1 }, { details = true })) do
    groups[m[4].hl_group] = true
  end
  return groups
end

local ANSWER = {
  'The app starts in `main()`.',
  '',
  'Sources (checked by milk):',
  '- src/app.py:12',
  '- lib/util.js:3-9',
  'Proposed, not in the workspace yet:',
  '- docs/new_file.md',
}

H.run(function()
  H.setup_milk()
  local chat = require('milk.chat')
  local methods = require('milk.methods')
  H.check('citations is a kind the plugin knows, with its fields', methods.kind.CITATIONS == 'citations'
    and vim.deep_equal(methods.fields.citations, { 'agent', 'citations', 'proposed' }))

  -- The session's folder is not the cwd; the cwd has a decoy src/app.py.
  local proj = H.tmp .. '/proj'
  write_lines(proj .. '/src/app.py', 'app', 20)
  write_lines(proj .. '/lib/util.js', 'util', 10)
  write_lines(H.ws .. '/src/app.py', 'decoy', 20)
  vim.fn.chdir(H.ws)
  local editor_win = api.nvim_get_current_win()

  local sid, tid = 'sess-sources', 'turn-1'
  local S = chat.get(sid, { title = 'sources' })
  chat.set_info(S, { sessionId = sid, title = 'sources', workspaceFolder = vim.uri_from_fname(proj) })
  local chat_win = chat.show(sid, { focus = false })
  local seqs = {}
  local function up(kind, fields, turn)
    turn = turn or tid
    seqs[turn] = (seqs[turn] or 0) + 1
    chat.on_update(vim.tbl_extend('force', { sessionId = sid, turnId = turn, seq = seqs[turn], kind = kind }, fields or {}), nil)
  end

  chat.user(S, 'Where does the app start and how is it configured for production use?')
  up('turn_started', { agent = 'local', route = 'auto', reason = 'default' })
  -- The block comes as text deltas, split anywhere.
  local text = table.concat(ANSWER, '\n')
  up('text', { agent = 'local', delta = text:sub(1, 60) })
  up('text', { agent = 'local', delta = text:sub(61) })
  local app, util = proj .. '/src/app.py', proj .. '/lib/util.js'
  up('citations', {
    agent = 'local',
    citations = {
      { path = 'src/app.py', uri = vim.uri_from_fname(app), line = 12, endLine = 12, quote = 'app line 12' },
      { path = 'lib/util.js', uri = vim.uri_from_fname(util), line = 3, endLine = 9, quote = 'util line 3\nutil line 4' },
    },
    proposed = { { path = 'docs/new_file.md', uri = vim.uri_from_fname(proj .. '/docs/new_file.md') } },
  })
  up('turn_ended', { agent = 'local', stopReason = 'end_turn' })

  local lines = H.chat_lines(sid)
  H.check('the block is shown as text', row_of(lines, 'Sources (checked by milk):') ~= nil
    and row_of(lines, '- lib/util.js:3-9') ~= nil, lines)

  -- The quickfix list: the update's places, absolute, with their quotes.
  local qf = vim.fn.getqflist({ title = 0, items = 0 })
  local items = qf.items
  H.check('quickfix titled after the question', qf.title == 'milk: sources of Where does the app start and how is it…', qf.title)
  H.check('quickfix has the two sources', #items == 2, items)
  if #items == 2 then
    H.check('quickfix 1: the workspace file at its line', api.nvim_buf_get_name(items[1].bufnr) == app
      and items[1].lnum == 12 and items[1].end_lnum == 12 and items[1].text == 'app line 12', items[1])
    H.check('quickfix 2: a range, its quote on one line', api.nvim_buf_get_name(items[2].bufnr) == util
      and items[2].lnum == 3 and items[2].end_lnum == 9 and items[2].text == 'util line 3 util line 4', items[2])
  end
  H.check('the quickfix window is not opened unasked', qf_windows() == 0)
  local said = vim.tbl_filter(function(n)
    return n.msg:find(':copen', 1, true) ~= nil
  end, H.notes)
  H.check('said once that :copen shows them', #said == 1, H.notes)

  -- Highlights: source lines as links, the proposed line as not there.
  local buf = S.buf
  H.check('a source line is highlighted as a link', groups_at(buf, row_of(lines, '- src/app.py:12') - 1).MilkSource)
  H.check('the proposed line is highlighted as not there', groups_at(buf, row_of(lines, '- docs/new_file.md') - 1).MilkSourceProposed)
  H.check('MilkSourceProposed is a muted group', vim.api.nvim_get_hl(0, { name = 'MilkSourceProposed' }).link ~= nil)

  -- gF on a source line (cursor anywhere on it): the file of the workspace folder at the line,
  -- opened beside the chat.
  api.nvim_set_current_win(chat_win)
  api.nvim_win_set_cursor(chat_win, { row_of(lines, '- lib/util.js:3-9'), 0 })
  press('gF')
  H.check('gF opened lib/util.js of the workspace folder at line 3', api.nvim_buf_get_name(0) == util
    and api.nvim_win_get_cursor(0)[1] == 3, { name = api.nvim_buf_get_name(0), cursor = api.nvim_win_get_cursor(0) })
  H.check('…in the window beside the chat, the chat kept', api.nvim_get_current_win() == editor_win
    and api.nvim_win_get_buf(chat_win) == buf)

  api.nvim_set_current_win(chat_win)
  api.nvim_win_set_cursor(chat_win, { row_of(lines, '- src/app.py:12'), 5 })
  press('gf')
  H.check('gf opened src/app.py of the workspace folder (not the cwd\'s) at line 12', api.nvim_buf_get_name(0) == app
    and api.nvim_win_get_cursor(0)[1] == 12 and api.nvim_get_current_line() == 'app line 12',
    { name = api.nvim_buf_get_name(0), line = api.nvim_get_current_line() })

  -- <CR> (the review key) on a source line opens it too; elsewhere it still moves down.
  api.nvim_set_current_win(editor_win)
  vim.cmd('enew')
  api.nvim_set_current_win(chat_win)
  api.nvim_win_set_cursor(chat_win, { row_of(lines, '- lib/util.js:3-9'), 0 })
  press(vim.keycode('<CR>'))
  H.check('<CR> on a source line opens it', api.nvim_buf_get_name(0) == util and api.nvim_win_get_cursor(0)[1] == 3,
    api.nvim_buf_get_name(0))

  -- A proposed line is no jump target: nothing opens, a note says why.
  api.nvim_set_current_win(editor_win)
  vim.cmd('enew')
  local before = #H.notes
  api.nvim_set_current_win(chat_win)
  local proposed_row = row_of(lines, '- docs/new_file.md')
  api.nvim_win_set_cursor(chat_win, { proposed_row, 3 })
  local errors = {}
  for _, key in ipairs({ 'gf', 'gF' }) do
    table.insert(errors, press(key))
  end
  H.check('gf/gF on a proposed line open nothing', api.nvim_get_current_win() == chat_win
    and api.nvim_get_current_buf() == buf and api.nvim_win_get_cursor(chat_win)[1] == proposed_row
    and api.nvim_buf_get_name(api.nvim_win_get_buf(editor_win)) == '' and #errors == 0, errors)
  local notes = vim.list_slice(H.notes, before + 1)
  H.check('…and say it is proposed, not in the workspace yet', #notes == 2
    and notes[1].msg:find('docs/new_file.md is proposed, not in the workspace yet', 1, true) ~= nil, notes)
  H.check('no file was created for it', vim.fn.filereadable(proj .. '/docs/new_file.md') == 0)

  -- A second answer: the quickfix list gets it, nothing said again.
  chat.user(S, 'and the helpers?')
  up('turn_started', { agent = 'local', route = 'auto', reason = 'default' }, 'turn-2')
  up('text', { agent = 'local', delta = 'Helpers.\n\nSources (checked by milk):\n- lib/util.js:2' }, 'turn-2')
  up('citations', { agent = 'local', citations = {
    { path = 'lib/util.js', uri = vim.uri_from_fname(util), line = 2, endLine = 2, quote = 'util line 2' },
  } }, 'turn-2')
  up('turn_ended', { agent = 'local', stopReason = 'end_turn' }, 'turn-2')
  qf = vim.fn.getqflist({ title = 0, items = 0 })
  H.check('the next answer\'s sources in the quickfix list', qf.title == 'milk: sources of and the helpers?'
    and #qf.items == 1 and qf.items[1].lnum == 2, qf)
  said = vim.tbl_filter(function(n)
    return n.msg:find(':copen', 1, true) ~= nil
  end, H.notes)
  H.check('the :copen hint is not repeated', #said == 1, #said)

  -- :MilkSources: the last answer's sources again (the update's, quotes kept), window open.
  vim.fn.setqflist({}, ' ', { title = 'something else', items = {} })
  api.nvim_set_current_win(chat_win)
  pcall(vim.cmd, 'MilkSources')
  qf = vim.fn.getqflist({ title = 0, items = 0 })
  H.check(':MilkSources puts the last answer\'s sources back', qf.title == 'milk: sources of and the helpers?'
    and #qf.items == 1 and qf.items[1].text == 'util line 2', qf)
  H.check(':MilkSources opens the quickfix window', qf_windows() == 1)
  vim.cmd('cclose')

  -- A reloaded chat: only the text is there. The block (a blank line before the proposed
  -- part this time) is read back; places resolve against the folder, texts from the files.
  local rsid = 'sess-reloaded'
  local R = chat.get(rsid, { title = 'reloaded' })
  chat.set_info(R, { sessionId = rsid, title = 'reloaded', workspaceFolder = vim.uri_from_fname(proj) })
  local stored_text = 'Here.\n\nSources (checked by milk):\n- src/app.py:5-7\n- lib/util.js:9\n\nProposed, not in the workspace yet:\n- docs/new_file.md'
  chat.render_history(R, {
    { turnId = 'r1', role = 'user', agent = 'local', text = 'Show me the setup', status = 'ok', createdAt = '2025-01-01T00:00:00Z' },
    { turnId = 'r1', role = 'assistant', agent = 'local', text = stored_text, status = 'ok', createdAt = '2025-01-01T00:00:01Z' },
  }, { { turnId = 'r1', agent = 'local', stopReason = 'end_turn' } })
  local rlines = api.nvim_buf_get_lines(R.buf, 0, -1, false)
  H.check('reloaded: the proposed line is highlighted', groups_at(R.buf, row_of(rlines, '- docs/new_file.md') - 1).MilkSourceProposed, rlines)
  chat.show(rsid, { focus = true })
  pcall(vim.cmd, 'MilkSources')
  qf = vim.fn.getqflist({ title = 0, items = 0 })
  items = qf.items
  H.check('reloaded: :MilkSources reads the block', qf.title == 'milk: sources of Show me the setup' and #items == 2, qf)
  if #items == 2 then
    H.check('reloaded: a range at its lines, the file\'s text', api.nvim_buf_get_name(items[1].bufnr) == app
      and items[1].lnum == 5 and items[1].end_lnum == 7 and items[1].text == 'app line 5', items[1])
    H.check('reloaded: a line', api.nvim_buf_get_name(items[2].bufnr) == util and items[2].lnum == 9
      and items[2].end_lnum == 9 and items[2].text == 'util line 9', items[2])
  end
  vim.cmd('cclose')
  local rwin = require('milk.window').find()
  api.nvim_set_current_win(rwin)
  api.nvim_win_set_cursor(rwin, { row_of(rlines, '- src/app.py:5-7'), 0 })
  press('gF')
  H.check('reloaded: gF opens the source', api.nvim_buf_get_name(0) == app and api.nvim_win_get_cursor(0)[1] == 5,
    api.nvim_buf_get_name(0))

  -- Lines that only look like the block are not sources.
  local ok, sources = pcall(require, 'milk.sources')
  local blocks = ok and sources.blocks({ '- src/app.py:3', 'Sources (checked by milk):', '- no line here', '- a.py:1' })
  H.check('a list without the header, or after a line that is not a source, is not a block',
    blocks and #blocks == 1 and #blocks[1].items == 0, blocks)

  -- A session with no sources: :MilkSources says so.
  local E = chat.get('sess-empty', { title = 'empty' })
  chat.user(E, 'hi')
  chat.show('sess-empty', { focus = true })
  before = #H.notes
  pcall(vim.cmd, 'MilkSources')
  H.check(':MilkSources without sources says so', H.notes[before + 1] and H.notes[before + 1].msg:find('no answer', 1, true) ~= nil,
    vim.list_slice(H.notes, before + 1))
end)
