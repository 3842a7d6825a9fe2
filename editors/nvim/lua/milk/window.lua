--- The chat window: one split per tab showing a session's chat buffer, its window-local
--- options, and the folds that hide tool blocks.
local M = {}

local api = vim.api
local render = require('milk.render')

--- Options of a window showing a chat buffer.
function M.set_options(win)
  local wo = vim.wo[win][0]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = 'no'
  wo.foldmethod = 'expr'
  wo.foldexpr = "v:lua.require'milk.window'.foldexpr()"
  wo.foldtext = "v:lua.require'milk.window'.foldtext()"
  wo.foldlevel = 0
  wo.foldenable = true
  wo.conceallevel = 2
  wo.fillchars = 'fold: ,eob: '
end

--- Fold level of a chat line: a tool block is its `⚙` line plus the indented lines under it.
function M.foldexpr(lnum)
  lnum = lnum or vim.v.lnum
  local line = vim.fn.getline(lnum)
  if vim.startswith(line, render.TOOL_PREFIX) then
    return '>1'
  end
  if vim.startswith(line, render.BODY) then
    return '='
  end
  return '0'
end

function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart)
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
