--- The wire names of milk-lsp, mirroring `milk_lsp/wire/` and
--- `shared/design/PROTOCOL.md` (protocol version 1).
---
--- Every method string the plugin sends or handles is spelled here and only here; the
--- project's wire test scans this file to keep it in step with the server.
local M = {}

M.PROTOCOL_VERSION = 1

-- Requests, client to server.
M.SESSION_NEW = 'milk/session/new'
M.SESSION_LIST = 'milk/session/list'
M.SESSION_GET = 'milk/session/get'
M.SESSION_DELETE = 'milk/session/delete'
M.CHAT = 'milk/chat'
M.ESCALATE = 'milk/escalate'
M.CANCEL = 'milk/cancel'
M.CONTEXT = 'milk/context'
M.STATUS = 'milk/status'
M.STATS = 'milk/stats'
M.TURN_CHANGES = 'milk/turn/changes'
M.TURN_UNDO = 'milk/turn/undo'

-- Notification, server to client.
M.UPDATE = 'milk/update'

-- Request, server to client.
M.REQUEST_PERMISSION = 'milk/requestPermission'

--- The configuration section the server pulls with `workspace/configuration`.
M.CONFIG_SECTION = 'milk'

--- `milk/update` kinds.
M.kind = {
  TURN_STARTED = 'turn_started',
  TEXT = 'text',
  THINKING = 'thinking',
  TOOL_CALL = 'tool_call',
  TOOL_RESULT = 'tool_result',
  ESCALATED = 'escalated',
  NEED = 'need',
  USAGE = 'usage',
  NOTICE = 'notice',
  CHANGES = 'changes',
  PLAN = 'plan',
  CITATIONS = 'citations',
  TURN_ENDED = 'turn_ended',
}

--- The fields each `milk/update` kind carries besides sessionId, turnId, seq and kind
--- (optional ones included); the project's wire test keeps them in step with the server.
M.fields = {
  turn_started = { 'agent', 'route', 'reason', 'userText', 'door' },
  text = { 'agent', 'delta' },
  thinking = { 'agent', 'delta' },
  tool_call = { 'agent', 'toolCallId', 'name', 'input', 'status' },
  tool_result = { 'agent', 'toolCallId', 'output', 'isError' },
  escalated = { 'by', 'reason', 'mode', 'contextChars' },
  need = { 'currentNeed' },
  usage = { 'agent', 'inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheCreationTokens', 'costUsd' },
  notice = { 'severity', 'message' },
  changes = { 'changes' },
  plan = { 'steps' },
  citations = { 'agent', 'citations', 'proposed' },
  turn_ended = { 'agent', 'stopReason' },
}

--- `RequestFailed.data.reason` values the plugin acts on.
M.reason = {
  UNDO_CONFLICT = 'undo_conflict',
  UNDO_UNAVAILABLE = 'undo_unavailable',
  SESSION_BUSY = 'session_busy',
}

--- `milk/requestPermission` option ids.
M.permission = {
  ALLOW_ONCE = 'allow_once',
  ALLOW_SESSION = 'allow_session',
  DENY = 'deny',
}

return M
