--- `milk/requestPermission`: a question that changes files opens the diff review (before
--- and after, side by side, with keys to allow once, allow for the session or deny); any
--- other question goes through `vim.ui.select` with the tool and its input in plain words.
--- Dismissing either denies.
local M = {}

local methods = require('milk.methods')
local P = methods.permission

local DEFAULT_OPTIONS = {
  { optionId = P.ALLOW_ONCE, label = 'Allow once' },
  { optionId = P.ALLOW_SESSION, label = 'Allow for this session' },
  { optionId = P.DENY, label = 'Deny' },
}

--- Keys of the diff review, by option id.
M.REVIEW_KEYS = {
  [P.ALLOW_ONCE] = { 'a' },
  [P.ALLOW_SESSION] = { 'A' },
  [P.DENY] = { 'd', '<Esc>', 'q' },
}

--- Start something that answers through `finish(value)`, and wait for the answer. Server
--- requests are handled inside a coroutine (vim.lsp.rpc), so the wait suspends the
--- handler instead of blocking the editor; outside one it waits in the event loop.
local function wait_for(start)
  local done, value, waiting = false, nil, false
  local co = coroutine.running()
  local function finish(v)
    if done then
      return
    end
    done, value = true, v
    if waiting then
      vim.schedule(function()
        coroutine.resume(co)
      end)
    end
  end
  start(finish)
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
  return value
end

--- Describe the request for the prompt line: the agent, the tool and its input in plain
--- words (a command, a path), and the agent's description when it adds something.
function M.prompt(params)
  local render = require('milk.render')
  local text = 'milk: ' .. M.plain_question(params)
  if params.tool == 'hand_off_to_claude' and type(params.description) == 'string' then
    return 'milk: ' .. render.one_line(params.description, 300)
  end
  local summary = render.input_summary(params.input)
  local desc = params.description
  -- "Run in /ws: make" says nothing the command does not; "Edit a.py: replace 2 lines" does.
  if type(desc) == 'string' and desc ~= '' and not vim.endswith(desc, summary) then
    text = text .. ' (' .. render.one_line(params.description, 120) .. ')'
  end
  return text
end

--- "Claude wants to run touch x" (no markdown: for prompts and the review's heading).
function M.plain_question(params)
  local render = require('milk.render')
  local who = render.label(params.agent)
  local input = type(params.input) == 'table' and params.input or {}
  if type(input.command) == 'string' then
    return ('%s wants to run a command (%s): %s'):format(who, tostring(params.tool), render.input_summary(input, 300))
  end
  local summary = render.input_summary(input, 300)
  if summary == '' then
    return ('%s wants to use %s'):format(who, tostring(params.tool))
  end
  return ('%s wants to use %s on %s'):format(who, tostring(params.tool), summary)
end

local function ask_select(params, options)
  return wait_for(function(finish)
    local ok, err = pcall(vim.ui.select, options, {
      prompt = M.prompt(params),
      kind = 'milk.permission',
      format_item = function(o)
        return o.label or o.optionId
      end,
    }, finish)
    if not ok then
      vim.notify('milk: permission prompt failed: ' .. tostring(err), vim.log.levels.ERROR)
      finish(nil)
    end
  end)
end

--- The diff review of an edit question; returns the chosen option (nil: dismissed).
local function ask_review(params, options, handle)
  return wait_for(function(finish)
    local actions = {}
    for _, o in ipairs(options) do
      local keys = M.REVIEW_KEYS[o.optionId]
      if keys then
        table.insert(actions, {
          keys = keys,
          label = o.label or o.optionId,
          run = function()
            finish(o)
          end,
        })
      end
    end
    local has_deny = false
    for _, o in ipairs(options) do
      has_deny = has_deny or o.optionId == P.DENY
    end
    if not has_deny then -- dismissing denies all the same
      table.insert(actions, { keys = M.REVIEW_KEYS[P.DENY], label = 'Deny', run = function() finish(nil) end })
    end
    local heading = M.plain_question(params)
    if type(params.description) == 'string' and params.description ~= '' then
      heading = heading .. ' — ' .. require('milk.render').one_line(params.description, 200)
    end
    local ok, view = pcall(require('milk.diff').open, {
      files = params.edits,
      heading = heading,
      actions = actions,
      on_dismiss = function()
        finish(nil)
      end,
    })
    if not ok then
      vim.notify('milk: the diff review failed: ' .. tostring(view), vim.log.levels.ERROR)
      finish(nil)
      return
    end
    if handle then
      handle.withdraw = function()
        require('milk.diff').close(view)
        finish(nil)
      end
    end
  end)
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
  local choice
  if type(params.edits) == 'table' and #params.edits > 0 then
    choice = ask_review(params, options, handle)
  else
    choice = ask_select(params, options)
  end
  local option_id = type(choice) == 'table' and choice.optionId or P.DENY
  if handle then
    status.permission(params.sessionId, false)
    local answer = type(choice) == 'table' and (choice.label or option_id) or 'denied (dismissed)'
    chat.permission_answered(handle, answer, option_id)
  end
  return { optionId = option_id }
end

return M
