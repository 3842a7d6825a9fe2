--- Options of the plugin: defaults, validation and the merged values in force.
local M = {}

--- @class milk.UiOptions
--- @field split 'right'|'left'|'above'|'below'|'tab' where the chat window opens
--- @field size integer|nil width (left/right) or height (above/below); nil = half
--- @field focus boolean move the cursor into the chat window when it opens from a command
--- @field keymaps table<string, string|false> chat-buffer keys (false disables one)

--- @class milk.Options
--- @field cmd string[] the server command
--- @field cmd_env table<string, string>|nil extra environment for the server process
--- @field root_markers string[] files that mark a workspace folder
--- @field settings table the `milk` settings of PROTOCOL.md (nested, camelCase)
--- @field ui milk.UiOptions
--- @field health_timeout_ms integer how long :checkhealth waits for the server
--- @field install_source string|nil what :MilkInstall installs when the plugin is not inside a
--- milk-lsp checkout: a wheel, an sdist, a checkout folder or a pip URL

--- @type milk.Options
M.defaults = {
  cmd = { 'milk-lsp' },
  cmd_env = nil,
  root_markers = { '.git' },
  settings = {},
  ui = {
    split = 'right',
    size = nil,
    focus = false,
    keymaps = {
      ask = 'i', -- prompt for a message
      cancel = '<C-c>', -- cancel the running turn
      escalate = 'E', -- hand the session to Claude (asks first)
      close = 'q', -- close the chat window
      sessions = 'S', -- pick a session
      review = '<CR>', -- on a "files changed" line: the diff of the turn's changes
      undo = 'u', -- on a "files changed" line: undo the turn's changes
    },
  },
  health_timeout_ms = 15000,
  install_source = nil,
}

--- @type milk.Options
M.options = vim.deepcopy(M.defaults)

--- Whether setup() was given a `cmd` (without one, the server of :MilkInstall is used when
--- it is there).
M.cmd_given = false

--- The server command to start: `opts.cmd`, except that the default `milk-lsp` becomes the
--- server :MilkInstall installed, when there is one (the plugin's own version).
--- @param opts milk.Options
--- @return string[]
function M.server_cmd(opts)
  local cmd = vim.deepcopy(opts.cmd)
  if opts == M.options and not M.cmd_given and vim.deep_equal(cmd, M.defaults.cmd) then
    local installed = require('milk.install').server()
    if installed then
      return { installed }
    end
  end
  return cmd
end

local splits = { right = true, left = true, above = true, below = true, tab = true }

local function expect(name, value, kind)
  if type(value) ~= kind then
    error(('milk: option %s must be a %s (got %s)'):format(name, kind, type(value)), 3)
  end
end

--- Merge `opts` over the defaults and keep the result in `M.options`.
--- @param opts table|nil
--- @return milk.Options
function M.set(opts)
  opts = opts or {}
  expect('opts', opts, 'table')
  if type(opts.cmd) == 'string' then
    opts = vim.deepcopy(opts)
    opts.cmd = { opts.cmd }
  end
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  -- Lists replace, they do not merge by index.
  if opts.cmd then
    merged.cmd = vim.deepcopy(opts.cmd)
  end
  if opts.root_markers then
    merged.root_markers = vim.deepcopy(opts.root_markers)
  end
  expect('cmd', merged.cmd, 'table')
  expect('settings', merged.settings, 'table')
  expect('ui', merged.ui, 'table')
  if merged.cmd_env ~= nil then
    expect('cmd_env', merged.cmd_env, 'table')
  end
  if merged.install_source ~= nil then
    expect('install_source', merged.install_source, 'string')
    if vim.startswith(merged.install_source, '-') or vim.trim(merged.install_source) == '' then
      error(('milk: install_source must name a wheel, sdist, folder or URL (got %s)'):format(
        vim.inspect(merged.install_source)
      ))
    end
  end
  if not splits[merged.ui.split] then
    error(('milk: ui.split must be one of right, left, above, below, tab (got %s)'):format(
      vim.inspect(merged.ui.split)
    ))
  end
  M.options = merged
  M.cmd_given = opts.cmd ~= nil
  return merged
end

return M
