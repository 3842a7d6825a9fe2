--- The chat window: one split per tab showing a session's chat buffer, its window-local
--- options, and the folds that hide tool blocks.
local M = {}

local api = vim.api
local render = require('milk.render')

local FOLDEXPR = "v:lua.require'milk.window'.foldexpr()"
local WINBAR = "%{%v:lua.require'milk.window'.winbar()%}"

--- Options of a window showing a chat buffer. Set once per window and buffer: setting
--- them again (each `:Milk` shows the chat) would close the folds the user opened.
function M.set_options(win)
  if vim.wo[win].foldexpr == FOLDEXPR and vim.wo[win].winbar == WINBAR then
    return
  end
  local wo = vim.wo[win][0]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = 'no'
  wo.foldmethod = 'expr'
  wo.foldexpr = FOLDEXPR
  wo.foldtext = "v:lua.require'milk.window'.foldtext()"
  wo.foldlevel = 0
  wo.foldenable = true
  wo.conceallevel = 2
  wo.fillchars = 'fold: ,eob: '
  wo.winbar = WINBAR
end

--- The chat window's bar: the session's title and where its next turn goes.
function M.winbar()
  local win = vim.g.statusline_winid or api.nvim_get_current_win()
  local ok, buf = pcall(api.nvim_win_get_buf, win)
  local sid = ok and vim.b[buf].milk_session or nil
  local chat = require('milk.chat')
  local S = sid and chat.sessions[sid]
  if not S then
    return ''
  end
  local function esc(s)
    return (tostring(s):gsub('%%', '%%%%'))
  end
  local width = api.nvim_win_get_width(win)
  local title = chat.title(S)
  local nr = S.next_route
  local route, reason, hl = '', '', nil
  if nr and nr.agent == 'claude' then
    route, hl = 'next: Claude · :MilkLocal to go back', 'MilkNextClaude'
    if nr.reason and nr.reason ~= vim.NIL and nr.reason ~= '' then
      reason = ' (' .. nr.reason .. ')'
    end
  elseif nr then
    route = 'next: local model'
  end
  -- Fit the width: the reason goes first, then the title is shortened.
  local function len(t)
    return vim.fn.strdisplaywidth(t)
  end
  local sep = route ~= '' and ' · ' or ''
  if len(' ' .. title .. sep .. route .. reason) > width then
    reason = ''
  end
  local room = width - len(' ' .. sep .. route)
  if len(title) > room then
    title = vim.fn.strcharpart(title, 0, math.max(room - 1, 1)) .. '…'
  end
  local text = ' ' .. esc(title) .. sep
  if hl then
    text = text .. '%#' .. hl .. '#' .. esc(route .. reason) .. '%*'
  else
    text = text .. esc(route .. reason)
  end
  return text
end

--- The blank line under the first line belongs to the block (it makes the body a
--- markdown code block).
function M.foldexpr(lnum)
  lnum = lnum or vim.v.lnum
  local line = vim.fn.getline(lnum)
  if vim.startswith(line, render.TOOL_PREFIX) then
    return '>1'
  end
  if vim.startswith(line, render.BODY) then
    return '='
  end
  if line == '' and lnum > 1 and vim.startswith(vim.fn.getline(lnum - 1), render.TOOL_PREFIX) then
    return '='
  end
  return '0'
end

function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart):gsub('`', '')
  local n = vim.v.foldend - vim.v.foldstart
  return ('%s  [%d line%s]'):format(first, n, n == 1 and '' or 's')
end

--- The window of the current tab showing a chat buffer.
function M.find()
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    local b = api.nvim_win_get_buf(win)
    if vim.b[b].milk_chat then
      return win
    end
  end
end

--- Show a chat buffer in the chat split (opened if needed).
--- @param buf integer
--- @param opts {focus: boolean?}|nil
--- @return integer win
function M.show(buf, opts)
  opts = opts or {}
  local ui = require('milk.config').options.ui
  local win = M.find()
  if win then
    api.nvim_win_set_buf(win, buf)
  elseif ui.split == 'tab' then
    local cur = api.nvim_get_current_win()
    vim.cmd('tab split')
    win = api.nvim_get_current_win()
    api.nvim_win_set_buf(win, buf)
    if not opts.focus then
      pcall(api.nvim_set_current_win, cur)
    end
  else
    local vertical = ui.split == 'left' or ui.split == 'right'
    local size = ui.size
    if not size then
      size = math.floor((vertical and vim.o.columns or vim.o.lines) / 2)
    end
    win = api.nvim_open_win(buf, false, {
      split = ui.split,
      win = -1,
      width = vertical and size or nil,
      height = (not vertical) and size or nil,
    })
  end
  M.set_options(win)
  pcall(api.nvim_win_set_cursor, win, { api.nvim_buf_line_count(buf), 0 })
  if opts.focus then
    api.nvim_set_current_win(win)
  end
  return win
end

--- Close the chat window of the current tab, if one is open.
function M.close()
  local win = M.find()
  if win and #api.nvim_tabpage_list_wins(0) > 1 then
    api.nvim_win_close(win, false)
  end
end

return M
