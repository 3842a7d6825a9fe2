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
