--- The sources of a local answer that milk checked. Such an answer's text ends with a
--- block, kept in the history as text too:
---
---     Sources (checked by milk):
---     - src/app.py:12
---     - lib/util.js:3-9
---     Proposed, not in the workspace yet:
---     - docs/new_file.md
---
--- and the `citations` update that follows it names the same places with their quotes.
--- A source line opens with gf/gF (or the review key), resolved against the session's
--- workspace folder, not the cwd; a proposed line is no jump target. Each answer's
--- sources go to the quickfix list; |:MilkSources| puts the last ones back, read from the
--- chat's text when the update is not known (a reloaded chat).
local M = {}

local api = vim.api
local one_line = require('milk.text').one_line

M.HEADER = 'Sources (checked by milk):'
M.PROPOSED_HEADER = 'Proposed, not in the workspace yet:'

M.ns = api.nvim_create_namespace('milk.chat.sources')

local KIND_OF_HEADER = { [M.HEADER] = 'sources', [M.PROPOSED_HEADER] = 'proposed' }
local ITEM_PREFIX = '- '

local function notify(msg, level)
  require('milk.client').notify(msg, level)
end

-- Reading the block ---------------------------------------------------------------------

--- `{path, line, end_line}` of a source line (`- src/app.py:12`, `- lib/util.js:3-9`).
function M.parse_source(l)
  local path, first, last = l:match('^%- (.-):(%d+)%-(%d+)%s*$')
  if not path then
    path, first = l:match('^%- (.-):(%d+)%s*$')
  end
  if not path or path == '' then
    return nil
  end
  first = tonumber(first)
  return { path = path, line = first, end_line = tonumber(last) or first }
end

--- `{path}` of a proposed line (`- docs/new_file.md`).
function M.parse_proposed(l)
  local path = vim.trim(l:sub(#ITEM_PREFIX + 1))
  return path ~= '' and { path = path } or nil
end

local function header_kind(l)
  return KIND_OF_HEADER[(l:gsub('%s+$', ''))]
end

local function parse_item(kind, l)
  if kind == 'sources' then
    return M.parse_source(l)
  end
  return M.parse_proposed(l)
end

--- The blocks of `lines`: `{kind = 'sources'|'proposed', header = row, items = {{row,
--- path, line?, end_line?}}}`, rows 1-based. A block is its header and the `- ` lines
--- right under it.
function M.blocks(lines)
  local blocks, current = {}, nil
  for i, l in ipairs(lines) do
    local kind = header_kind(l)
    if kind then
      current = { kind = kind, header = i, items = {} }
      table.insert(blocks, current)
    elseif current and vim.startswith(l, ITEM_PREFIX) then
      local item = parse_item(current.kind, l)
      if item then
        item.row = i
        table.insert(current.items, item)
      else
        current = nil
      end
    else
      current = nil
    end
  end
  return blocks
end

--- The block item on line `row` (0-based) of a buffer, with its `kind`, or nil.
function M.item_at(buf, row)
  local line = api.nvim_buf_get_lines(buf, row, row + 1, false)[1]
  if not line or not vim.startswith(line, ITEM_PREFIX) then
    return nil
  end
  -- up through the block's other items to its header
  for r = row - 1, 0, -1 do
    local above = api.nvim_buf_get_lines(buf, r, r + 1, false)[1]
    if not vim.startswith(above, ITEM_PREFIX) then
      local kind = header_kind(above)
      local item = kind and parse_item(kind, line)
      if item then
        item.kind = kind
      end
      return item
    end
  end
end

-- Places --------------------------------------------------------------------------------

--- The session's workspace folder (its SessionInfo's, else its server's root, else the
--- cwd): what the block's paths are relative to.
function M.workspace(S)
  if S.workspace then
    return S.workspace
  end
  local client = S.client_id and vim.lsp.get_client_by_id(S.client_id)
  local root = client and require('milk.client').root_of(client)
  return vim.fs.normalize(root or vim.fn.getcwd())
end

--- The absolute path of a block path.
function M.resolve(S, path)
  if vim.startswith(path, '/') then
    return vim.fs.normalize(path)
  end
  return vim.fs.normalize(M.workspace(S) .. '/' .. path)
end

--- A SessionInfo's `workspaceFolder` (a file URI) as a path.
function M.folder_path(folder)
  if type(folder) ~= 'string' or folder == '' then
    return nil
  end
  return vim.fs.normalize(folder:match('^file:') and vim.uri_to_fname(folder) or folder)
end

-- Highlights ----------------------------------------------------------------------------

--- Highlight the blocks of the chat: source lines as links, proposed ones as not there.
--- The whole buffer each time (once per turn): it is cheap, and a reload rewrites it.
function M.mark(S)
  local buf = S.buf
  api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  for _, block in ipairs(M.blocks(lines)) do
    local group = block.kind == 'sources' and 'MilkSource' or 'MilkSourceProposed'
    for _, item in ipairs(block.items) do
      api.nvim_buf_set_extmark(buf, M.ns, item.row - 1, #ITEM_PREFIX, {
        end_row = item.row - 1,
        end_col = #lines[item.row],
        hl_group = group,
      })
    end
  end
end

-- The quickfix list ---------------------------------------------------------------------

--- "milk: sources of <the first words of the question>".
function M.title(question)
  local words = vim.trim(((question or ''):gsub('%s+', ' ')))
  if words == '' then
    return 'milk: sources'
  end
  if vim.fn.strchars(words) > 48 then
    words = vim.fn.strcharpart(words, 0, 48):gsub('%s+%S*$', '') .. '…'
  end
  return 'milk: sources of ' .. words
end

--- The user's message above row `row` (1-based): the line under the last `## You`.
local function question_above(lines, row)
  for i = row - 1, 1, -1 do
    if lines[i] == '## You' then
      return lines[i + 1]
    end
  end
end

--- The text of a file's line (the quickfix text of a source read from the chat).
local function file_line(path, lnum)
  local ok, lines = pcall(vim.fn.readfile, path, '', lnum)
  return ok and lines[lnum] and vim.trim(lines[lnum]) or ''
end

local function opt(v)
  return v ~= vim.NIL and v or nil
end

--- Quickfix entries of a `citations` update.
local function citation_entries(S, citations)
  local entries = {}
  for _, c in ipairs(citations) do
    local uri = opt(c.uri)
    local path = type(uri) == 'string' and uri:match('^file:') and vim.uri_to_fname(uri)
      or M.resolve(S, tostring(c.path))
    local line = tonumber(opt(c.line)) or 1
    table.insert(entries, {
      filename = path,
      lnum = line,
      end_lnum = tonumber(opt(c.endLine)) or line,
      text = one_line(opt(c.quote) or '', 300),
    })
  end
  return entries
end

--- Quickfix entries of a block read from the chat.
local function block_entries(S, block)
  local entries = {}
  for _, item in ipairs(block.items) do
    local path = M.resolve(S, item.path)
    table.insert(entries, { filename = path, lnum = item.line, end_lnum = item.end_line, text = file_line(path, item.line) })
  end
  return entries
end

--- The places of a block or an update's citations, compared to know they are the same.
local function places_key(list)
  local parts = {}
  for _, c in ipairs(list) do
    local line = tonumber(opt(c.line)) or 0
    table.insert(parts, ('%s:%d-%d'):format(tostring(c.path), line, tonumber(opt(c.end_line or c.endLine)) or line))
  end
  return table.concat(parts, '\n')
end

--- Set the quickfix list; the same answer's list again replaces it, another one is
--- pushed (`:colder` goes back to what was there).
local function to_quickfix(entries, title, key)
  local current = vim.fn.getqflist({ context = 0 }).context
  local same = type(current) == 'table' and current.milk == key
  vim.fn.setqflist({}, same and 'r' or ' ', { title = title, items = entries, context = { milk = key } })
end

local told = false

--- A `citations` update: remembered for |:MilkSources|, the block highlighted, the
--- sources put in the quickfix list (its window stays as it is: said once how to open it).
function M.cited(S, turn_id, p)
  local citations = type(p.citations) == 'table' and p.citations or {}
  S.citations = { turn = turn_id, citations = citations }
  M.mark(S)
  if #citations == 0 then
    return
  end
  local lines = api.nvim_buf_get_lines(S.buf, 0, -1, false)
  to_quickfix(citation_entries(S, citations), M.title(question_above(lines, #lines)), S.id .. ':' .. turn_id)
  if not told then
    told = true
    notify("milk: the answer's sources are in the quickfix list; :copen shows them")
  end
  require('milk.client').fire('MilkSources', { sessionId = S.id, turnId = turn_id, count = #citations })
end

--- The last answer's sources of the session back in the quickfix list: the `citations`
--- update's when it is the last block's, else the block as the chat shows it.
--- @return integer? the number of sources (nil: the chat has none)
function M.reopen(S)
  local lines = api.nvim_buf_get_lines(S.buf, 0, -1, false)
  local last
  for _, block in ipairs(M.blocks(lines)) do
    if block.kind == 'sources' and #block.items > 0 then
      last = block
    end
  end
  if not last then
    return nil
  end
  local title = M.title(question_above(lines, last.header))
  local live = S.citations
  if live and #live.citations > 0 and places_key(live.citations) == places_key(last.items) then
    to_quickfix(citation_entries(S, live.citations), title, S.id .. ':' .. live.turn)
  else
    to_quickfix(block_entries(S, last), title, S.id .. ':row ' .. last.header)
  end
  return #last.items
end

-- Opening a source ----------------------------------------------------------------------

--- A window of this tab to open a file in: the previous one, else any file window that is
--- not the chat.
local function file_window(chat_win)
  local function usable(win)
    if win == 0 or win == chat_win or not api.nvim_win_is_valid(win) then
      return false
    end
    if api.nvim_win_get_config(win).relative ~= '' then
      return false
    end
    local b = api.nvim_win_get_buf(win)
    return not vim.b[b].milk_chat and vim.bo[b].buftype == ''
  end
  local previous = vim.fn.win_getid(vim.fn.winnr('#'))
  if usable(previous) then
    return previous
  end
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    if usable(win) then
      return win
    end
  end
end

-- Where a new window goes when the chat is alone in its tab: on the side away from it.
local SPLIT = { left = 'rightbelow vsplit', above = 'belowright split', below = 'aboveleft split' }

--- Open a source at its line, in a window beside the chat (the chat stays where it is).
function M.open(S, item)
  local path = M.resolve(S, item.path)
  if vim.fn.filereadable(path) ~= 1 then
    notify(('milk: %s is not in the workspace (any more)'):format(item.path), vim.log.levels.WARN)
    return
  end
  local win = file_window(api.nvim_get_current_win())
  local ok, err = pcall(function()
    if win then
      api.nvim_set_current_win(win)
      if vim.fs.normalize(api.nvim_buf_get_name(0)) ~= path then
        vim.cmd('edit ' .. vim.fn.fnameescape(path))
      end
    else
      local split = SPLIT[require('milk.config').options.ui.split] or 'leftabove vsplit'
      vim.cmd(split .. ' ' .. vim.fn.fnameescape(path))
    end
  end)
  if not ok then
    notify(('milk: cannot open %s: %s'):format(item.path, tostring(err)), vim.log.levels.ERROR)
    return
  end
  vim.cmd("normal! m'")
  api.nvim_win_set_cursor(0, { math.min(item.line, api.nvim_buf_line_count(0)), 0 })
  vim.cmd('normal! ^zv')
end

--- The block line under the cursor of a chat window, opened. Returns whether it was one
--- (a proposed line is one, and says it is not there yet).
function M.open_at_cursor()
  local buf = api.nvim_get_current_buf()
  local sid = vim.b[buf].milk_session
  local S = sid and require('milk.chat').sessions[sid]
  if not S then
    return false
  end
  local item = M.item_at(buf, api.nvim_win_get_cursor(0)[1] - 1)
  if not item then
    return false
  end
  if item.kind == 'proposed' then
    notify(('milk: %s is proposed, not in the workspace yet'):format(item.path))
  else
    M.open(S, item)
  end
  return true
end

--- gf / gF in the chat: a block line opens its source; anywhere else the key does what
--- it always does ('path' of the chat holds the workspace folder).
function M.follow(key)
  if M.open_at_cursor() then
    return
  end
  local count = vim.v.count > 0 and tostring(vim.v.count) or ''
  local ok, err = pcall(vim.cmd, 'normal! ' .. count .. key)
  if not ok then
    api.nvim_echo({ { (tostring(err):gsub('^Vim%(normal%):', '')), 'ErrorMsg' } }, true, {})
  end
end

--- The chat buffer's 'path' starts with the workspace folder, so that gf on any path
--- written in the chat finds it there.
function M.set_path(S)
  local folder = S.workspace and S.workspace:gsub('[\\, ]', '\\%0')
  if folder then
    vim.bo[S.buf].path = folder .. ',' .. vim.go.path
  end
end

return M
