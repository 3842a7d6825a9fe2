--- milk.nvim: chat with milk-lsp from Neovim. The public API.
---
--- ```lua
--- require('milk').setup({
---   cmd = { 'milk-lsp' },
---   settings = { ['local'] = { baseUrl = 'http://127.0.0.1:11434/v1' } },
---   ui = { split = 'right', size = 80 },
--- })
--- ```
local M = {}

--- Configure the plugin. Safe to call again: running servers get the new settings through
--- `workspace/didChangeConfiguration`.
--- @param opts milk.Options|nil
function M.setup(opts)
  local config = require('milk.config')
  local old = vim.deepcopy(config.options.settings)
  config.set(opts)
  M.define_commands()
  if vim.lsp.config then
    -- Re-resolve lsp/milk.lua (it reads these options) the next time it is used.
    pcall(vim.lsp.config, 'milk', {})
  end
  if not vim.deep_equal(old, config.options.settings) then
    require('milk.client').push_settings(config.options.settings)
  end
end

--- Statusline component: "" when no milk server runs, else "milk: idle", "milk: local…"
--- or "milk: Claude…" (plus " (permission?)" while a permission prompt waits, and
--- " · next: Claude" when the current session's next turn goes to Claude).
--- @return string
function M.status()
  return require('milk.status').text()
end

--- The same, by the name statusline plugins look for.
--- @return string
function M.statusline()
  return require('milk.status').text()
end

--- The state behind `status()`: `{state = 'off'|'idle'|'local'|'claude', permission, session,
--- running, next}` (`next`: `{agent, reason}`, where the session's next turn goes).
function M.state()
  return require('milk.status').get()
end

--- Send a message from Lua: `require('milk').chat('explain this', { context = {...}, route = 'local' })`.
function M.chat(text, opts)
  require('milk.commands').send(text, opts)
end

--- The current session id, if any.
function M.session()
  return require('milk.commands').current
end

local defined = false

--- Define the user commands and highlight groups (plugin/milk.lua calls this).
function M.define_commands()
  if defined then
    return
  end
  defined = true
  local function run(name)
    return function(o)
      require('milk.commands')[name](o)
    end
  end
  local cmd = vim.api.nvim_create_user_command
  cmd('Milk', run('ask'), {
    nargs = '*',
    range = true,
    bang = true,
    desc = 'milk: chat (no text: open the chat; ! sends to Claude; a range attaches the selection)',
  })
  cmd('MilkLocal', run('ask_local'), {
    nargs = '*',
    range = true,
    desc = 'milk: send to the local model (and take the session back from Claude)',
  })
  cmd('MilkAdvise', run('advise'), {
    nargs = '*',
    range = true,
    desc = 'milk: Claude plans it, the local model does the steps (Claude the ones it cannot)',
  })
  cmd('MilkEscalate', run('escalate'), { nargs = '*', desc = 'milk: hand the session to Claude [reason]' })
  cmd('MilkCancel', run('cancel'), { nargs = 0, desc = 'milk: cancel the running turn' })
  cmd('MilkUndo', run('undo'), {
    nargs = 0,
    bang = true,
    desc = 'milk: undo the last turn that changed files (! even if they changed since)',
  })
  cmd('MilkNew', run('new'), { nargs = '*', desc = 'milk: start a new session [title]' })
  cmd('MilkSessions', run('sessions'), { nargs = 0, desc = 'milk: switch to or delete a session' })
  cmd('MilkContext', run('context'), { nargs = '*', desc = 'milk: preview what Claude would be given [reason]' })
  cmd('MilkStatus', run('status'), { nargs = 0, desc = 'milk: server, local model and Claude status' })
  cmd('MilkSources', run('sources'), { nargs = 0, desc = "milk: the last answer's checked sources in the quickfix list" })
  cmd('MilkInstall', function(o)
    require('milk.install').install({ python = o.args })
  end, {
    nargs = '?',
    complete = 'file',
    desc = 'milk: install milk-lsp from this plugin\'s checkout into a venv [python]',
  })

  local group = vim.api.nvim_create_augroup('milk', { clear = true })
  vim.api.nvim_create_autocmd('ColorScheme', {
    group = group,
    callback = function()
      require('milk.chat').highlights()
    end,
  })
  require('milk.chat').highlights()
end

return M
