--- `milk/requestPermission`: ask the user through `vim.ui.select`; a cancelled prompt denies.
local M = {}

local methods = require('milk.methods')
local P = methods.permission

local DEFAULT_OPTIONS = {
  { optionId = P.ALLOW_ONCE, label = 'Allow once' },
  { optionId = P.ALLOW_SESSION, label = 'Allow for this session' },
  { optionId = P.DENY, label = 'Deny' },
}

--- Run `vim.ui.select` and wait for the choice. Server requests are handled inside a
--- coroutine (vim.lsp.rpc), so an asynchronous picker (telescope, fzf-lua, snacks, …)
--- suspends the handler instead of blocking the editor.
local function select(items, opts)
  local done, choice, waiting = false, nil, false
  local co = coroutine.running()
  local function on_choice(item)
    if done then
      return
    end
    done, choice = true, item
    if waiting then
      vim.schedule(function()
        coroutine.resume(co)
      end)
    end
  end
  vim.ui.select(items, opts, on_choice)
  if not done then
    if co and coroutine.isyieldable() then
      waiting = true
      coroutine.yield()
    else
      vim.wait(24 * 60 * 60 * 1000, function()
        return done
      end, 50)
    end
  end
  return choice
end

--- Describe the request for the prompt line.
function M.prompt(params)
  local chat = require('milk.chat')
  local text = ('milk: %s wants to use %s: %s'):format(
    chat.label(params.agent),
    tostring(params.tool),
    chat.input_summary(params.input)
  )
  local summary = chat.input_summary(params.input)
  if type(params.description) == 'string' and params.description ~= '' and params.description ~= summary then
    text = text .. ' (' .. chat.one_line(params.description, 120) .. ')'
  end
  return text
end

--- The handler: returns `{optionId = …}`.
--- @param params table
function M.handle(params, _)
  local chat = require('milk.chat')
  local status = require('milk.status')
  params = type(params) == 'table' and params or {}
  local options = params.options
  if type(options) ~= 'table' or #options == 0 then
    options = DEFAULT_OPTIONS
  end
  local handle
  if type(params.sessionId) == 'string' then
    handle = chat.permission_asked(params)
    status.permission(params.sessionId, true)
  end
  local ok, choice = pcall(select, options, {
    prompt = M.prompt(params),
    kind = 'milk.permission',
    format_item = function(o)
      return o.label or o.optionId
    end,
  })
  if not ok then
    vim.notify('milk: permission prompt failed: ' .. tostring(choice), vim.log.levels.ERROR)
    choice = nil
  end
  local option_id = type(choice) == 'table' and choice.optionId or P.DENY
  if handle then
    status.permission(params.sessionId, false)
    local answer = type(choice) == 'table' and (choice.label or option_id) or 'denied (dismissed)'
    chat.permission_answered(handle, answer)
  end
  return { optionId = option_id }
end

return M
