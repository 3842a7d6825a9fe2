--- A diff view in a tab of its own: what a file was and what it becomes, side by side in
--- Neovim's diff mode on scratch buffers, the full path in each window's bar, and a
--- heading that says what is shown and which keys do what. The permission question of an
--- edit and the review of a turn's changes both use it.
local M = {}

local api = vim.api

--- @class milk.DiffFile
--- @field uri string
--- @field before string? absent: the file does not exist before
--- @field after string? absent: the file is deleted
--- @field binary boolean? no text to show
--- @field truncated boolean? a side was cut (its text says where)

--- @class milk.DiffAction
--- @field keys string[]
--- @field label string shown in the heading
--- @field run fun(view: milk.DiffView)

--- @class milk.DiffSpec
--- @field files milk.DiffFile[]
--- @field heading string first line of the heading (what is asked, or what this is)
--- @field actions milk.DiffAction[]
--- @field on_dismiss fun()? the view closed without an action (a key, :q, :tabclose)

--- @class milk.DiffView
--- @field spec milk.DiffSpec
--- @field index integer the file shown
--- @field tab integer
--- @field wins {head: integer, before: integer, after: integer}
--- @field bufs {head: integer, before: integer, after: integer}
--- @field closed boolean

--- Open views, oldest first.
--- @type milk.DiffView[]
M.views = {}
local next_id = 0

local function path_of(uri)
  if type(uri) ~= 'string' then
    return tostring(uri)
  end
  if uri:match('^file:') then
    return vim.uri_to_fname(uri)
  end
  return uri
end
M.path_of = path_of

--- The lines of one side: nil text (no such side) is an empty buffer.
local function text_lines(text)
  if text == nil or text == vim.NIL then
    return {}
  end
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

local function scratch(name)
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  pcall(api.nvim_buf_set_name, buf, name)
  return buf
end

local function set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

local function bar(text)
  return ' ' .. tostring(text):gsub('%%', '%%%%')
end

local function side_label(file, side)
  local path = path_of(file.uri)
  if side == 'before' then
    if file.before == nil or file.before == vim.NIL then
      return 'before: ' .. path .. ' (does not exist yet)'
    end
    return 'before: ' .. path
  end
  if file.after == nil or file.after == vim.NIL then
    return 'after: ' .. path .. ' (deleted)'
  end
  return 'after: ' .. path
end

local function heading_lines(view)
  local spec = view.spec
  local keys = {}
  for _, a in ipairs(spec.actions) do
    table.insert(keys, table.concat(a.keys, ' / ') .. ' ' .. a.label)
  end
  local lines = { spec.heading, table.concat(keys, ' · ') }
  local n = #spec.files
  local file = spec.files[view.index]
  local where = ('file %d of %d: %s'):format(view.index, n, path_of(file.uri))
  if n > 1 then
    where = where .. '   ]f next file · [f previous file'
  end
  table.insert(lines, where)
  if file.truncated then
    table.insert(lines, 'The text is cut (a side is larger than milk sends); its last line says how much is left out.')
  end
  return lines
end

--- Show the `view.index`-th file.
local function show_file(view)
  local file = view.spec.files[view.index]
  local before, after
  if file.binary then
    before, after = { '(binary file: no text to show)' }, { '(binary file: no text to show)' }
  else
    before, after = text_lines(file.before), text_lines(file.after)
  end
  set_lines(view.bufs.before, before)
  set_lines(view.bufs.after, after)
  local ft = vim.filetype.match({ filename = path_of(file.uri) }) or ''
  for _, side in ipairs({ 'before', 'after' }) do
    if vim.bo[view.bufs[side]].filetype ~= ft then
      vim.bo[view.bufs[side]].filetype = ft
    end
    if api.nvim_win_is_valid(view.wins[side]) then
      vim.wo[view.wins[side]].winbar = bar(side_label(file, side))
    end
  end
  local head = heading_lines(view)
  set_lines(view.bufs.head, head)
  if api.nvim_win_is_valid(view.wins.head) then
    api.nvim_win_set_height(view.wins.head, #head)
  end
  if api.nvim_win_is_valid(view.wins.after) then
    api.nvim_win_call(view.wins.after, function()
      vim.cmd('diffupdate')
    end)
  end
end

local function remove(view)
  for i, v in ipairs(M.views) do
    if v == view then
      table.remove(M.views, i)
      return
    end
  end
end

--- Close the view (no callback). Returns to the window the user was in.
function M.close(view)
  if view.closed then
    return
  end
  view.closed = true
  remove(view)
  pcall(api.nvim_del_augroup_by_id, view.group)
  if api.nvim_tabpage_is_valid(view.tab) then
    if #api.nvim_list_tabpages() > 1 then
      pcall(vim.cmd, api.nvim_tabpage_get_number(view.tab) .. 'tabclose!')
    else
      for _, w in pairs(view.wins) do
        pcall(api.nvim_win_close, w, true)
      end
    end
  end
  for _, b in pairs(view.bufs) do
    if api.nvim_buf_is_valid(b) then
      pcall(api.nvim_buf_delete, b, { force = true })
    end
  end
  if view.return_win and api.nvim_win_is_valid(view.return_win) then
    pcall(api.nvim_set_current_win, view.return_win)
  end
end

--- Run an action: the view closes first, then the action runs.
local function act(view, action)
  if view.closed then
    return
  end
  M.close(view)
  action.run(view)
end

local function step(view, delta)
  local n = #view.spec.files
  if n < 2 then
    return
  end
  view.index = (view.index - 1 + delta) % n + 1
  show_file(view)
end

--- Open a diff view.
--- @param spec milk.DiffSpec
--- @return milk.DiffView
function M.open(spec)
  next_id = next_id + 1
  local id = next_id
  vim.cmd('stopinsert') -- the question's keys are normal-mode keys
  local view = { spec = spec, index = 1, closed = false, return_win = api.nvim_get_current_win() }
  view.bufs = {
    head = scratch(('milk://diff/%d'):format(id)),
    before = scratch(('milk://diff/%d/before'):format(id)),
    after = scratch(('milk://diff/%d/after'):format(id)),
  }
  vim.cmd('tab sbuffer ' .. view.bufs.before)
  view.tab = api.nvim_get_current_tabpage()
  local before_win = api.nvim_get_current_win()
  local after_win = api.nvim_open_win(view.bufs.after, true, { split = 'right', win = before_win })
  local head_win = api.nvim_open_win(view.bufs.head, false, { split = 'above', win = -1, height = 3 })
  view.wins = { head = head_win, before = before_win, after = after_win }
  for _, side in ipairs({ 'before', 'after' }) do
    local w = view.wins[side]
    vim.wo[w].wrap = false
    vim.wo[w].number = true
  end
  vim.wo[head_win].winfixheight = true
  vim.wo[head_win].number = false
  vim.wo[head_win].wrap = true
  show_file(view)
  for _, side in ipairs({ 'before', 'after' }) do
    api.nvim_win_call(view.wins[side], function()
      vim.cmd('diffthis')
    end)
  end
  for _, buf in pairs(view.bufs) do
    local function map(lhs, fn, desc)
      vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = 'milk: ' .. desc })
    end
    for _, action in ipairs(spec.actions) do
      for _, key in ipairs(action.keys) do
        map(key, function()
          act(view, action)
        end, action.label)
      end
    end
    map(']f', function()
      step(view, 1)
    end, 'next file')
    map('[f', function()
      step(view, -1)
    end, 'previous file')
  end
  view.group = api.nvim_create_augroup('milk.diff.' .. id, { clear = true })
  local watched = {}
  for _, w in pairs(view.wins) do
    watched[tostring(w)] = true
  end
  api.nvim_create_autocmd('WinClosed', {
    group = view.group,
    callback = function(ev)
      if watched[ev.match] and not view.closed then
        vim.schedule(function()
          if not view.closed then
            M.close(view)
            if spec.on_dismiss then
              spec.on_dismiss()
            end
          end
        end)
      end
    end,
  })
  api.nvim_set_current_win(after_win)
  table.insert(M.views, view)
  return view
end

return M
