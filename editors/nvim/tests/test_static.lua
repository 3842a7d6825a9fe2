-- Static checks of the Lua sources: every file compiles, and no module reads or writes a
-- global it should not (LuaJIT bytecode listing, a small stand-in for luacheck).
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local ALLOWED = {}
for name in ([[vim require pairs ipairs type tostring tonumber pcall xpcall error select next table
  string math coroutine setmetatable getmetatable assert os io debug unpack rawget print _G arg dofile loadfile]]):gmatch('%S+') do
  ALLOWED[name] = true
end

H.run(function()
  local bc = require('jit.bc')
  local files = vim.fn.glob(H.plugin .. '/lua/milk/*.lua', false, true)
  vim.list_extend(files, vim.fn.glob(H.plugin .. '/tests/*.lua', false, true))
  vim.list_extend(files, { H.plugin .. '/plugin/milk.lua', H.plugin .. '/lsp/milk.lua' })
  H.check('found the sources', #files >= 15, #files)
  for _, f in ipairs(files) do
    local name = vim.fn.fnamemodify(f, ':t')
    local fn, err = loadfile(f)
    if H.check(name .. ' compiles', fn ~= nil, err) then
      local chunks = {}
      bc.dump(fn, { write = function(_, s) table.insert(chunks, s) end, flush = function() end }, true)
      local bad = {}
      for op, global in table.concat(chunks):gmatch('(G[GS]ET)[^\n]-"([%w_]+)"') do
        if op == 'GSET' and not (name:match('^test_') or name == 'helpers.lua') or not ALLOWED[global] then
          table.insert(bad, op .. ' ' .. global)
        end
      end
      H.check(name .. ' uses no stray globals', #bad == 0, bad)
    end
  end
  -- Method strings are spelled only in methods.lua.
  local stray = {}
  for _, f in ipairs(vim.fn.glob(H.plugin .. '/lua/milk/*.lua', false, true)) do
    if not f:match('methods%.lua$') then
      for i, line in ipairs(vim.fn.readfile(f)) do
        if line:find("['\"]milk/", 1) then
          table.insert(stray, vim.fn.fnamemodify(f, ':t') .. ':' .. i)
        end
      end
    end
  end
  H.check('no milk/ method string outside methods.lua', #stray == 0, stray)
end)
