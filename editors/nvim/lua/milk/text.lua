--- Text helpers of the chat: agent labels, one-line summaries, markdown code spans, and
--- tool input in plain words (a command, a path, `key: value` lines), never JSON escapes.
local M = {}

M.AGENT_LABEL = { ['local'] = 'local model', claude = 'Claude' }

--- "local model" / "Claude".
function M.label(agent)
  return M.AGENT_LABEL[agent] or tostring(agent or '?')
end
local label = M.label

--- One line of at most `max` bytes.
function M.one_line(s, max)
  s = tostring(s or ''):gsub('%s*\n%s*', ' ')
  max = max or 200
  if #s > max then
    s = s:sub(1, max - 1) .. '…'
  end
  return s
end
local one_line = M.one_line

--- `s` as a markdown code span (shown literally): a fence longer than any run of
--- backticks inside, with spaces when `s` starts or ends with one.
function M.code(s)
  s = tostring(s or '')
  local longest = 0
  for run in s:gmatch('`+') do
    longest = math.max(longest, #run)
  end
  local fence = ('`'):rep(longest + 1)
  if s:sub(1, 1) == '`' or s:sub(-1) == '`' or s == '' then
    s = ' ' .. s .. ' '
  end
  return fence .. s .. fence
end
local code = M.code

--- "800" / "2.5k" (characters of a summary).
function M.short_count(n)
  n = tonumber(n) or 0
  if n < 1000 then
    return tostring(math.floor(n))
  end
  local k = ('%.1f'):format(n / 1000):gsub('%.0$', '')
  return k .. 'k'
end

--- The lines of a text (a trailing newline gives a last empty line).
function M.split_lines(text)
  return vim.split(text or '', '\n', { plain = true })
end
local split_lines = M.split_lines


--- Input fields that say what a call works on, shown first.
local MAIN_KEYS = { 'command', 'path', 'file_path', 'notebook_path', 'pattern', 'query', 'url', 'old_text', 'old_string', 'new_text', 'new_string', 'content' }
local MAX_VALUE_LINES = 200

local function sorted_keys(input)
  local keys, seen = {}, {}
  for _, k in ipairs(MAIN_KEYS) do
    if input[k] ~= nil then
      table.insert(keys, k)
      seen[k] = true
    end
  end
  local rest = {}
  for k in pairs(input) do
    if not seen[k] then
      table.insert(rest, tostring(k))
    end
  end
  table.sort(rest)
  vim.list_extend(keys, rest)
  return keys
end

local function scalar_text(v)
  if type(v) == 'string' then
    return v
  end
  if v == vim.NIL then
    return 'null'
  end
  local ok, json = pcall(vim.json.encode, v)
  return ok and json or vim.inspect(v)
end

--- The lines of a tool input, unindented: `$ command` for a shell tool, else one
--- `key: value` per field (multi-line values under their key).
function M.input_text_lines(input)
  if input == nil or input == vim.NIL then
    return {}
  end
  if type(input) ~= 'table' then
    return split_lines(tostring(input))
  end
  local lines = {}
  local cmd = input.command or input.cmd
  if type(cmd) == 'string' then
    for i, l in ipairs(split_lines(cmd)) do
      table.insert(lines, (i == 1 and '$ ' or '  ') .. l)
    end
  end
  for _, k in ipairs(sorted_keys(input)) do
    local v = input[k]
    if not ((k == 'command' or k == 'cmd') and v == cmd and type(cmd) == 'string') then
      local text = scalar_text(v)
      local parts = split_lines(text)
      if #parts == 1 then
        table.insert(lines, k .. ': ' .. text)
      else
        table.insert(lines, k .. ':')
        for i, l in ipairs(parts) do
          if i > MAX_VALUE_LINES then
            table.insert(lines, ('  … %d more lines'):format(#parts - MAX_VALUE_LINES))
            break
          end
          table.insert(lines, '  ' .. l)
        end
      end
    end
  end
  return lines
end

--- A one-line summary of a tool input: the command of a shell tool, the path of a file
--- tool, else `key: value` pairs; line breaks shown as `⏎`, never as `\n`.
function M.input_summary(input, max)
  max = max or 200
  if type(input) ~= 'table' then
    return one_line(input ~= vim.NIL and input or '', max)
  end
  local function flat(s)
    return (tostring(s):gsub('\r?\n', ' ⏎ '))
  end
  local cmd = input.command or input.cmd
  if type(cmd) == 'string' then
    return one_line(flat(cmd), max)
  end
  for _, k in ipairs({ 'file_path', 'path', 'notebook_path', 'url', 'pattern', 'query' }) do
    if type(input[k]) == 'string' then
      return one_line(flat(input[k]), max)
    end
  end
  local parts = {}
  for _, k in ipairs(sorted_keys(input)) do
    table.insert(parts, k .. ': ' .. flat(scalar_text(input[k])))
  end
  return one_line(table.concat(parts, ', '), max)
end

return M
