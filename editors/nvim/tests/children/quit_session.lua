-- A child Neovim of test_quiet_log.lua: one milk session, then `:qa!` as a user quits.
-- MILK_QUIT_AT = "done" quits after the turn ends, "mid" while the answer still streams.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local at = os.getenv('MILK_QUIT_AT') or 'done'
H.start_openai()
-- One warning the log must show (the control); the server's own log where the parent reads it.
H.setup_milk({
  settings = { bogusKey = 1 },
  cmd_env = H.server_env({ MILK_LOG_DIR = os.getenv('MILK_CHILD_LOG') or (H.tmp .. '/log') }),
})
if at == 'mid' then
  H.script_openai({ { text = string.rep('word ', 300), chunk_chars = 5, delay = 0.02 } })
else
  H.script_openai({ { text = 'Hello from the local model.' } })
end
vim.cmd('Milk say hello')
if at == 'mid' then
  H.wait(30000, function()
    return H.chat_text():find('word word', 1, true) ~= nil
  end)
else
  H.wait_turn(1)
end
io.stdout:write('quitting ' .. at .. '\n')
io.stdout:flush()
vim.cmd('qa!')
