--- The user commands: :Milk, :MilkLocal, :MilkEscalate, :MilkCancel, :MilkUndo, :MilkNew,
--- :MilkSessions, :MilkContext, :MilkStatus, :MilkSources, and the session bookkeeping
--- behind them.
local M = {}

local api = vim.api
local methods = require('milk.methods')
local client_mod = require('milk.client')
local chat = require('milk.chat')

--- The session the commands talk to (the one shown last).
--- @type string?
M.current = nil
--- Results of the last finished turn per session (`TurnResult`).
--- @type table<string, table>
M.results = {}

local notify = client_mod.notify

local function with_client(cb)
  client_mod.ensure(function(client, err)
    if not client then
      notify(err or 'milk: no server', vim.log.levels.ERROR)
      return
    end
    cb(client)
  end)
end

local request = client_mod.request

local fail = client_mod.fail

local fire = client_mod.fire

--- The session named by the current buffer (a chat buffer) or the current one.
local function buffer_session()
  return vim.b.milk_session or M.current
end

--- Make `info` (a SessionInfo) the current session, load its history if its buffer is
--- new, show it, then `cb(session_id)`.
local function open_session(client, info, opts, cb)
  local sid = info.sessionId
  local S = chat.get(sid, { client_id = client.id, title = info.title })
  chat.set_info(S, info)
  M.current = sid
  local function done()
    chat.show(sid, opts)
    fire('MilkSession', { sessionId = sid })
    if cb then
      cb(sid)
    end
  end
  if S.loaded or not S.empty or (info.turnCount or 0) == 0 then
    S.loaded = true
    if (info.turnCount or 0) == 0 then
      chat.hint(S)
    end
    return done()
  end
  request(client, methods.SESSION_GET, { sessionId = sid }, function(err, res)
    if err then
      fail('loading the session', err)
    elseif res and S.empty then
      chat.set_info(S, res.session)
      chat.render_history(S, res.turns or {}, res.turnInfo)
    end
    S.loaded = true
    done()
  end)
end

local function new_session(client, title, opts, cb)
  local params = { workspaceFolder = client_mod.workspace_uri(client) }
  if title and title ~= '' then
    params.title = title
  end
  request(client, methods.SESSION_NEW, params, function(err, info)
    if err or type(info) ~= 'table' then
      return fail('creating a session', err)
    end
    local S = chat.get(info.sessionId, { client_id = client.id, title = info.title })
    S.loaded = true
    open_session(client, info, opts, cb)
  end)
end

--- Call `cb(session_id)` with the current session of this client's workspace: the one
--- in use, else the most recently used, else a new one.
local function with_session(client, opts, cb)
  local sid = buffer_session()
  local S = sid and chat.get(sid)
  if S and S.client_id == client.id then
    M.current = sid
    chat.show(sid, opts)
    return cb(sid)
  end
  request(client, methods.SESSION_LIST, { workspaceFolder = client_mod.workspace_uri(client) }, function(err, res)
    if err then
      return fail('listing sessions', err)
    end
    local first = res and res.sessions and res.sessions[1]
    if first then
      open_session(client, first, opts, cb)
    else
      new_session(client, nil, opts, cb)
    end
  end)
end

--- The client a session talks to (its own, else the one for the current buffer).
local function session_client(S)
  local client
  if S and S.client_id then
    client = vim.lsp.get_client_by_id(S.client_id)
  end
  return client or client_mod.find()
end

local function turn_done(client, sid, what, err, result)
  local S = chat.get(sid)
  if err then
    -- -32800: the request was cancelled; the turn's own updates said so already.
    if err.code ~= -32800 then
      if S then
        chat.notice(S, 'error', client_mod.error_text(err))
      end
      fail(what, err)
    end
    fire('MilkTurnDone', { sessionId = sid, error = err })
    return
  end
  M.results[sid] = result
  local steps = {}
  if S then
    chat.turn_result(S, result)
    if type(result) == 'table' and result.turnId and chat.had_gap(sid, result.turnId) then
      table.insert(steps, function(next_step)
        request(client, methods.SESSION_GET, { sessionId = sid }, function(e, res)
          if not e and res then
            chat.set_info(S, res.session)
            chat.render_history(S, res.turns or {}, res.turnInfo)
          end
          next_step()
        end)
      end)
    elseif (S.title or '') == '' then
      -- The first message named the session: take its title (and the buffer's name).
      table.insert(steps, function(next_step)
        request(client, methods.SESSION_GET, { sessionId = sid, limit = 1 }, function(e, res)
          if not e and res then
            chat.set_info(S, res.session)
          end
          next_step()
        end)
      end)
    end
  end
  local function run(i)
    if steps[i] then
      return steps[i](function()
        run(i + 1)
      end)
    end
    fire('MilkTurnDone', { sessionId = sid, result = result })
  end
  run(1)
end

-- Selections as context -------------------------------------------------------------

local function utf16_len(s)
  if vim.fn.exists('*strutf16len') == 1 then
    return vim.fn.strutf16len(s, 1)
  end
  local _, u16 = vim.str_utfindex(s)
  return u16
end

--- The `ContextItem` of a ranged command (`:'<,'>Milk`): the selection and its file.
--- Characterwise when the last visual selection was characterwise on those lines.
--- @param opts table the user-command opts (`range`, `line1`, `line2`)
--- @param bufnr integer|nil
--- @return table? item, string? text
function M.selection(opts, bufnr)
  if not opts or not opts.range or opts.range == 0 then
    return nil
  end
  bufnr = bufnr or api.nvim_get_current_buf()
  if vim.b[bufnr].milk_chat then
    return nil
  end
  local l1, l2 = opts.line1, opts.line2
  local lines = api.nvim_buf_get_lines(bufnr, l1 - 1, l2, false)
  if #lines == 0 then
    return nil
  end
  local start_byte, end_byte = 0, #lines[#lines]
  local vs, ve = vim.fn.getpos("'<"), vim.fn.getpos("'>")
  if vim.fn.visualmode() == 'v' and vs[2] == l1 and ve[2] == l2 then
    start_byte = math.max(vs[3] - 1, 0)
    local last = lines[#lines]
    end_byte = math.min(ve[3], #last)
    if end_byte > 0 and end_byte < #last then
      local ok, extra = pcall(vim.str_utf_end, last, end_byte)
      end_byte = end_byte + (ok and extra or 0)
    end
  end
  local first_line = lines[1]
  local last_line = lines[#lines]
  local text_lines = vim.deepcopy(lines)
  text_lines[#text_lines] = last_line:sub(1, end_byte)
  text_lines[1] = text_lines[1]:sub(start_byte + 1)
  local text = table.concat(text_lines, '\n')
  local range = {
    start = { line = l1 - 1, character = utf16_len(first_line:sub(1, start_byte)) },
    ['end'] = { line = l2 - 1, character = utf16_len(last_line:sub(1, end_byte)) },
  }
  local name = api.nvim_buf_get_name(bufnr)
  if name == '' or vim.bo[bufnr].buftype ~= '' then
    return nil, text -- no file: the text goes into the message instead
  end
  return { uri = vim.uri_from_bufnr(bufnr), range = range, text = text }, text
end

-- Commands --------------------------------------------------------------------------

--- Send a message. `opts.context` is a ContextItem list; `opts.route` a route.
--- @param text string
--- @param opts {context: table[]?, route: string?}|nil
function M.send(text, opts)
  opts = opts or {}
  with_client(function(client)
    with_session(client, { focus = require('milk.config').options.ui.focus }, function(sid)
      local S = chat.get(sid)
      chat.user(S, text, opts.context)
      local params = { sessionId = sid, text = text }
      if opts.context and #opts.context > 0 then
        params.context = opts.context
      end
      if opts.route then
        params.route = opts.route
      end
      request(client, methods.CHAT, params, function(err, result)
        turn_done(client, sid, 'the chat turn', err, result)
      end)
    end)
  end)
end

--- `:Milk` alone: open the chat of the current session (starting the server if needed).
function M.open()
  with_client(function(client)
    with_session(client, { focus = true }, function() end)
  end)
end

local PROMPTS = { claude = 'milk → Claude> ', ['local'] = 'milk → local model> ', advise = 'milk → Claude plans, local does> ' }

--- `:Milk [text]`, `:Milk! [text]` (to Claude), `:MilkLocal [text]`, ranged or not.
--- `:Milk` with neither text nor range opens the chat; otherwise a missing text is asked
--- for with `vim.ui.input`.
--- @param opts table user-command opts, plus `route` and `prompt` (ask even without a range)
function M.ask(opts)
  opts = opts or {}
  local route = opts.route or (opts.bang and 'claude' or nil)
  local item, loose_text = M.selection(opts)
  local text = opts.args
  local has_text = text and vim.trim(text) ~= ''
  if not has_text and not route and not opts.prompt and not item and not loose_text then
    return M.open()
  end
  local function go(t)
    if not t or vim.trim(t) == '' then
      return
    end
    local context = item and { item } or nil
    if not item and loose_text then
      t = t .. '\n\n```\n' .. loose_text .. '\n```'
    end
    M.send(t, { context = context, route = route })
  end
  if has_text then
    return go(text)
  end
  vim.ui.input({ prompt = PROMPTS[route] or 'milk> ' }, go)
end

--- `:MilkLocal [text]`: this message goes to the local model, and the session is back
--- with it (an escalation no longer sticks).
function M.ask_local(opts)
  opts = vim.tbl_extend('force', opts or {}, { route = 'local' })
  M.ask(opts)
end

--- `:MilkAdvise [text]`: Claude writes a plan for it, the local model carries the plan out
--- step by step (Claude does the steps it cannot).
function M.advise(opts)
  opts = vim.tbl_extend('force', opts or {}, { route = 'advise' })
  M.ask(opts)
end

--- `:MilkEscalate [reason]`: the next turn is Claude's, carrying on with the current need.
function M.escalate(opts)
  local reason = opts and opts.args or nil
  with_client(function(client)
    with_session(client, {}, function(sid)
      chat.user_escalation(chat.get(sid), reason)
      local params = { sessionId = sid }
      if reason and vim.trim(reason) ~= '' then
        params.reason = reason
      end
      request(client, methods.ESCALATE, params, function(err, result)
        turn_done(client, sid, 'the escalation', err, result)
      end)
    end)
  end)
end

--- The chat window's escalate key: a paid turn, so it asks first.
function M.confirm_escalate()
  vim.ui.select({ 'escalate', 'keep' }, {
    prompt = 'milk: hand this session to Claude? Its turns go to Claude (a paid service) until :MilkLocal.',
    kind = 'milk.confirm_escalate',
    format_item = function(choice)
      return choice == 'escalate' and 'Hand to Claude now' or 'Cancel'
    end,
  }, function(choice)
    if choice == 'escalate' then
      M.escalate({})
    end
  end)
end

-- Changes: review and undo (milk.undo) ------------------------------------------

--- `:MilkUndo[!]`: undo the last turn of the current session that changed files (`!`:
--- even when a file changed again since).
function M.undo(opts)
  local force = opts and opts.bang or false
  with_client(function(client)
    with_session(client, {}, function(sid)
      local S = chat.get(sid)
      local entry = S and chat.last_changes(S)
      if not entry then
        return notify('milk: no turn of this session has changes to undo')
      end
      require('milk.undo').undo(client, S, entry, force)
    end)
  end)
end

local function at_cursor(what)
  local S, entry = chat.changes_at_cursor()
  if not entry then
    if what == 'review' and require('milk.sources').open_at_cursor() then
      return nil -- a source line of an answer: the review key opens it
    end
    local keys = require('milk.config').options.ui.keymaps or {}
    if what == 'review' and keys.review == '<CR>' then
      pcall(vim.cmd, 'normal! +') -- <CR> elsewhere moves down, as it does everywhere
    else
      notify(('milk: put the cursor on a "files changed" line to %s (:MilkUndo undoes the last turn)'):format(what))
    end
    return nil
  end
  local client = session_client(S)
  if not client then
    notify('milk: the server is not running', vim.log.levels.WARN)
    return nil
  end
  return client, S, entry
end

--- The chat window's review key: the diff of the turn whose changes line is under the cursor.
function M.review_at_cursor()
  local client, S, entry = at_cursor('review')
  if client then
    require('milk.undo').review(client, S, entry)
  end
end

--- The chat window's undo key: undo the turn whose changes line is under the cursor.
function M.undo_at_cursor()
  local client, S, entry = at_cursor('undo')
  if client then
    require('milk.undo').undo(client, S, entry, false)
  end
end

--- `:MilkSources`: the checked sources of the current session's last answer back in the
--- quickfix list, its window opened. Needs no server: a reloaded chat's text says them.
function M.sources()
  local sid = buffer_session()
  local S = sid and chat.get(sid)
  if not S then
    return notify('milk: no session; :Milk opens one', vim.log.levels.WARN)
  end
  local count = require('milk.sources').reopen(S)
  if not count then
    return notify('milk: no answer of this session has checked sources')
  end
  vim.cmd('botright copen')
end

--- `:MilkCancel`: stop the running turn of the current session.
function M.cancel()
  local sid = buffer_session()
  if not sid then
    return notify('milk: no session to cancel', vim.log.levels.WARN)
  end
  local client = client_mod.find()
  local S = chat.get(sid)
  if S and S.client_id then
    client = vim.lsp.get_client_by_id(S.client_id) or client
  end
  if not client then
    return notify('milk: the server is not running', vim.log.levels.WARN)
  end
  request(client, methods.CANCEL, { sessionId = sid }, function(err, res)
    if err then
      return fail('cancel', err)
    end
    if not (res and res.cancelled) then
      notify('milk: nothing to cancel', vim.log.levels.INFO)
    end
  end)
end

--- `:MilkNew [title]`
function M.new(opts)
  local title = opts and opts.args or nil
  with_client(function(client)
    new_session(client, title, { focus = require('milk.config').options.ui.focus })
  end)
end

local function session_label(s)
  local title = (s.title and s.title ~= '') and s.title or 'new session'
  local when = tostring(s.updatedAt or ''):gsub('T', ' '):gsub('%..*$', ''):gsub('Z$', ''):gsub(':%d%d$', '')
  local next_route = type(s.nextRoute) == 'table' and s.nextRoute.agent == 'claude' and ' · next: Claude' or ''
  return ('%s%s · %d turn%s · %s%s'):format(
    s.sessionId == M.current and '* ' or '',
    title,
    s.turnCount or 0,
    (s.turnCount or 0) == 1 and '' or 's',
    when,
    next_route
  )
end

M._session_label = session_label

--- `:MilkSessions`: pick a session, then switch to it or delete it.
function M.sessions()
  with_client(function(client)
    request(client, methods.SESSION_LIST, { workspaceFolder = client_mod.workspace_uri(client) }, function(err, res)
      if err then
        return fail('listing sessions', err)
      end
      local items = vim.deepcopy(res and res.sessions or {})
      table.insert(items, { new = true })
      vim.ui.select(items, {
        prompt = 'milk sessions',
        kind = 'milk.sessions',
        format_item = function(s)
          return s.new and '+ new session' or session_label(s)
        end,
      }, function(choice)
        if not choice then
          return
        end
        if choice.new then
          return new_session(client, nil, { focus = true })
        end
        vim.ui.select({ 'switch', 'delete' }, {
          prompt = 'milk: ' .. session_label(choice),
          kind = 'milk.session_action',
          format_item = function(a)
            return a == 'switch' and 'Switch to this session' or 'Delete this session'
          end,
        }, function(action)
          if action == 'switch' then
            open_session(client, choice, { focus = true })
          elseif action == 'delete' then
            request(client, methods.SESSION_DELETE, { sessionId = choice.sessionId }, function(e)
              if e then
                return fail('deleting the session', e)
              end
              chat.drop(choice.sessionId)
              if M.current == choice.sessionId then
                M.current = nil
              end
              notify('milk: deleted session ' .. (choice.title ~= '' and choice.title or choice.sessionId))
              fire('MilkSession', { sessionId = choice.sessionId, deleted = true })
            end)
          end
        end)
      end)
    end)
  end)
end

--- How Claude is reached (`ContextPreview.mode`), in words.
M.MODE_WORDS = {
  first = 'a new conversation, started with the session summary below',
  resume = 'its own conversation, resumed',
  returning = 'its own conversation, resumed, with an update on the local turns',
  fresh = 'a new conversation (the old one cannot be resumed), started with the summary below',
}

--- The lines of a `ContextPreview`.
function M.context_lines(preview, reason)
  local lines = {
    '# What Claude would be given now',
    '',
    ('- Claude gets: %s%s'):format(M.MODE_WORDS[preview.mode] or tostring(preview.mode),
      reason and reason ~= '' and (' (as if the local model asked: ' .. reason .. ')') or ''),
    ('- context file: %d chars; message prefix: %d chars'):format(
      preview.chars and preview.chars.contextFile or #(preview.contextFile or ''),
      preview.chars and preview.chars.userMessagePrefix or #(preview.userMessagePrefix or '')
    ),
    '',
    '## Command line',
    '',
    '```sh',
  }
  local argv = {}
  for _, a in ipairs(preview.argv or {}) do
    table.insert(argv, a:find('[%s"\']') and vim.fn.shellescape(a) or a)
  end
  table.insert(lines, table.concat(argv, ' '))
  vim.list_extend(lines, { '```', '', '## Context file (<context-file>)', '' })
  vim.list_extend(lines, vim.split(preview.contextFile or '', '\n', { plain = true }))
  vim.list_extend(lines, { '', '## Message prefix', '' })
  if (preview.userMessagePrefix or '') == '' then
    table.insert(lines, '(none)')
  else
    vim.list_extend(lines, vim.split(preview.userMessagePrefix, '\n', { plain = true }))
  end
  return lines
end

--- `:MilkContext [reason]`: the `milk/context` preview in a read-only buffer.
function M.context(opts)
  local reason = opts and opts.args or nil
  if reason and vim.trim(reason) == '' then
    reason = nil
  end
  with_client(function(client)
    with_session(client, {}, function(sid)
      request(client, methods.CONTEXT, { sessionId = sid, reason = reason }, function(err, preview)
        if err or type(preview) ~= 'table' then
          return fail('the context preview', err)
        end
        local buf
        for _, b in ipairs(api.nvim_list_bufs()) do
          if vim.b[b].milk_context == sid then
            buf = b
          end
        end
        if not buf then
          buf = api.nvim_create_buf(false, true)
          pcall(api.nvim_buf_set_name, buf, 'milk://context/' .. chat.title(chat.get(sid)))
        end
        vim.bo[buf].buftype = 'nofile'
        vim.bo[buf].bufhidden = 'wipe'
        vim.bo[buf].swapfile = false
        vim.bo[buf].modifiable = true
        api.nvim_buf_set_lines(buf, 0, -1, false, M.context_lines(preview, reason))
        vim.bo[buf].modifiable = false
        vim.bo[buf].readonly = true
        vim.bo[buf].filetype = 'markdown'
        vim.b[buf].milk_context = sid
        vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, nowait = true, desc = 'milk: close' })
        local win = vim.fn.bufwinid(buf)
        if win == -1 then
          win = api.nvim_open_win(buf, true, { split = 'below', win = 0 })
        else
          api.nvim_set_current_win(win)
        end
        fire('MilkContext', { sessionId = sid, buf = buf })
      end)
    end)
  end)
end

--- The lines of a `Status`.
function M.status_lines(st)
  local lines = { ('milk-lsp %s · storage %s'):format(tostring(st.version), tostring(st.storage)) }
  local l = st['local'] or {}
  table.insert(lines, ('local model: %s%s — %s'):format(
    tostring(l.baseUrl),
    (l.model and l.model ~= vim.NIL) and (' (' .. l.model .. ')') or '',
    l.reachable and 'reachable' or ('unreachable' .. ((l.error and l.error ~= vim.NIL) and (': ' .. l.error) or ''))
  ))
  local c = st.claude or {}
  table.insert(lines, ('Claude: %s%s — %s'):format(
    tostring(c.path),
    (c.version and c.version ~= vim.NIL) and (' ' .. c.version) or '',
    c.found and 'found' or ('not found' .. ((c.error and c.error ~= vim.NIL) and (': ' .. c.error) or ''))
  ))
  local s = require('milk.status').text()
  table.insert(lines, 'now: ' .. (s ~= '' and s or 'milk: idle'))
  return lines
end

--- `:MilkStatus`
function M.status()
  with_client(function(client)
    request(client, methods.STATUS, vim.empty_dict(), function(err, st)
      if err or type(st) ~= 'table' then
        return fail('status', err)
      end
      local ok = st['local'] and st['local'].reachable and st.claude and st.claude.found
      notify(table.concat(M.status_lines(st), '\n'), ok and vim.log.levels.INFO or vim.log.levels.WARN)
      fire('MilkStatusResult', st)
    end)
  end)
end

return M
