--- Review and undo of what a turn changed: the turn's diff (`milk/turn/changes`) and its
--- undo (`milk/turn/undo`), with the question an undo conflict needs and the chat's
--- "files changed" line kept in step.
local M = {}

local methods = require('milk.methods')
local client_mod = require('milk.client')
local chat = require('milk.chat')

local notify = client_mod.notify

local fire = client_mod.fire

local request = client_mod.request

local fail = client_mod.fail

local function file_names(uris)
  local names = {}
  for _, uri in ipairs(type(uris) == 'table' and uris or {}) do
    table.insert(names, vim.fn.fnamemodify(require('milk.diff').path_of(uri), ':~:.'))
  end
  return table.concat(names, ', ')
end

--- The bytes Neovim would write for a buffer (its line ending, final newline and BOM).
local function buffer_bytes(buf)
  local bo = vim.bo[buf]
  local nl = ({ dos = '\r\n', mac = '\r' })[bo.fileformat] or '\n'
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), nl)
  if bo.eol or (bo.fixeol and not bo.binary) then
    text = text .. nl
  end
  return (bo.bomb and '\239\187\191' or '') .. text
end

--- After an undo: a restored file's buffer that now holds exactly what is on disk is not
--- modified (the undo went through `workspace/applyEdit`, which marks it so). A buffer
--- whose text differs from the disk (the user's own unsaved text) stays modified.
function M.settle(uris)
  local loaded = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    if name ~= '' and vim.api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == '' then
      loaded[vim.fs.normalize(vim.fn.fnamemodify(name, ':p'))] = b
    end
  end
  for _, uri in ipairs(uris) do
    local path = vim.fs.normalize(require('milk.diff').path_of(uri))
    local buf = loaded[path]
    if buf and vim.bo[buf].modified then
      local f = io.open(path, 'rb')
      local disk = f and f:read('*a')
      if f then
        f:close()
      end
      if disk ~= nil and disk == buffer_bytes(buf) then
        vim.bo[buf].modified = false
      end
    end
  end
end

--- Open the diff of a turn's changes (`milk/turn/changes`).
function M.review(client, S, entry)
  request(client, methods.TURN_CHANGES, { sessionId = S.id, turnId = entry.turn }, function(err, res)
    if err or type(res) ~= 'table' then
      return fail('loading the changes', err)
    end
    if type(res.changes) ~= 'table' or #res.changes == 0 then
      return notify('milk: this turn changed no files')
    end
    local undone = res.undone == true
    if undone and not entry.undone then
      chat.changes_undone(S, entry.turn)
    end
    local actions = { { keys = { 'q', '<Esc>' }, label = 'close', run = function() end } }
    if not undone then
      table.insert(actions, {
        keys = { 'u' },
        label = 'undo these changes',
        run = function()
          M.undo(client, S, entry, false)
        end,
      })
    end
    local n = #res.changes
    require('milk.diff').open({
      files = res.changes,
      heading = ('Changes of this turn: %d file%s%s'):format(n, n == 1 and '' or 's', undone and ' (undone)' or ''),
      actions = actions,
    })
    fire('MilkReview', { sessionId = S.id, turnId = entry.turn })
  end)
end

--- Undo a turn (`force`: even when its files changed since).
function M.undo(client, S, entry, force)
  local params = { sessionId = S.id, turnId = entry.turn }
  if force then
    params.force = true
  end
  request(client, methods.TURN_UNDO, params, function(err, res)
    if err then
      local data = type(err.data) == 'table' and err.data or {}
      if data.reason == methods.reason.UNDO_CONFLICT and not force then
        local files = file_names(data.files)
        vim.ui.select({ 'force', 'keep' }, {
          prompt = ('milk: %s changed after that turn. Undo anyway? The later changes to %s are lost.'):format(
            files ~= '' and files or 'a file', files ~= '' and 'them' or 'it'),
          kind = 'milk.undo_conflict',
          format_item = function(c)
            return c == 'force' and 'Undo anyway' or 'Keep the files as they are'
          end,
        }, function(choice)
          if choice == 'force' then
            M.undo(client, S, entry, true)
          else
            notify(('milk: not undone: %s changed after the turn. :MilkUndo! undoes the last turn anyway.'):format(files),
              vim.log.levels.WARN)
          end
        end)
        fire('MilkUndo', { sessionId = S.id, turnId = entry.turn, conflict = data.files or {} })
        return
      end
      if data.reason == methods.reason.SESSION_BUSY then
        notify('milk: a turn is running; undo when it ends (or :MilkCancel it)', vim.log.levels.WARN)
      else
        fail('undo', err)
      end
      fire('MilkUndo', { sessionId = S.id, turnId = entry.turn, error = err })
      return
    end
    local restored = type(res) == 'table' and type(res.restored) == 'table' and res.restored or {}
    chat.changes_undone(S, entry.turn)
    M.settle(restored)
    pcall(vim.cmd, 'checktime')
    if #restored == 0 then
      notify('milk: nothing to undo (already undone)')
    else
      notify('milk: undone; restored ' .. file_names(restored))
    end
    fire('MilkUndo', { sessionId = S.id, turnId = entry.turn, restored = restored })
  end)
end

return M
