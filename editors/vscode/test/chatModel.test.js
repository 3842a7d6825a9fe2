// The transcript reducer: history, streamed updates in PROTOCOL.md's order, results.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const m = require('../out/lib/chatModel.js');

const session = {
  sessionId: 'S1', workspaceFolder: 'file:///w', title: 't', state: 'local', activeAgent: 'local',
  createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', turnCount: 1,
};
let seq = 0;
const u = (kind, fields) => ({ sessionId: 'S1', turnId: 'T1', seq: ++seq, kind, ...fields });

test('streamed local turn with a tool call, usage and need', () => {
  seq = 0;
  const st = m.emptyState(session);
  m.addUserMessage(st, 'list files', ['a.py:1-3']);
  m.applyUpdate(st, u('turn_started', { agent: 'local', route: 'auto', reason: 'default' }));
  assert.equal(st.turns.length, 1);
  assert.equal(st.turns[0].turnId, 'T1', 'pending turn adopted');
  assert.equal(st.turns[0].pending, false);
  m.applyUpdate(st, u('text', { agent: 'local', delta: 'Let me ' }));
  m.applyUpdate(st, u('text', { agent: 'local', delta: 'look.' }));
  m.applyUpdate(st, u('tool_call', { agent: 'local', toolCallId: 'c1', name: 'list_files', input: { path: '.' }, status: 'running' }));
  m.applyUpdate(st, u('tool_result', { agent: 'local', toolCallId: 'c1', output: 'a.py\nb.py', isError: false }));
  m.applyUpdate(st, u('tool_call', { agent: 'local', toolCallId: 'c1', name: 'list_files', input: { path: '.' }, status: 'completed' }));
  m.applyUpdate(st, u('usage', { agent: 'local', inputTokens: 10, outputTokens: 5 }));
  m.applyUpdate(st, u('text', { agent: 'local', delta: 'Two files.' }));
  m.applyUpdate(st, u('usage', { agent: 'local', inputTokens: 20, outputTokens: 3 }));
  m.applyUpdate(st, u('need', { currentNeed: 'see the files' }));
  m.applyUpdate(st, u('turn_ended', { agent: 'local', stopReason: 'end_turn' }));
  const t = st.turns[0];
  assert.deepEqual(t.blocks.map((b) => b.kind), ['agent', 'text', 'tool', 'text']);
  assert.equal(t.blocks[1].text, 'Let me look.');
  assert.equal(t.blocks[2].tool.status, 'completed');
  assert.equal(t.blocks[2].tool.output, 'a.py\nb.py');
  assert.equal(t.blocks[3].text, 'Two files.');
  assert.deepEqual(t.usage, { inputTokens: 30, outputTokens: 8, cacheReadTokens: undefined, cacheCreationTokens: undefined, costUsd: undefined });
  assert.equal(st.need, 'see the files');
  assert.equal(t.status, 'ok');
  assert.equal(t.gap, false);
  assert.deepEqual(t.attachments, ['a.py:1-3']);
  m.applyResult(st, { sessionId: 'S1', turnId: 'T1', agent: 'local', stopReason: 'end_turn', text: 'Let me look.Two files.', usage: { inputTokens: 30, outputTokens: 8, costUsd: 0 } });
  assert.equal(st.turns[0].usage.costUsd, 0);
  assert.match(m.formatUsage(st.turns[0].usage), /30 in · 8 out tokens · \$0$/);
});

test('escalation midway: banner, then a Claude badge', () => {
  seq = 0;
  const st = m.emptyState(session);
  m.addUserMessage(st, 'hard one');
  m.applyUpdate(st, u('turn_started', { agent: 'local', route: 'auto', reason: 'default' }));
  m.applyUpdate(st, u('text', { agent: 'local', delta: 'Too hard.' }));
  m.applyUpdate(st, u('escalated', { by: 'agent', reason: 'needs a refactor', mode: 'first', contextChars: 1234 }));
  m.applyUpdate(st, u('text', { agent: 'claude', delta: 'On it.' }));
  m.applyUpdate(st, u('usage', { agent: 'claude', inputTokens: 100, outputTokens: 10, cacheReadTokens: 50, costUsd: 0.0123 }));
  m.applyUpdate(st, u('turn_ended', { agent: 'claude', stopReason: 'end_turn' }));
  const t = st.turns[0];
  assert.deepEqual(t.blocks.map((b) => (b.kind === 'agent' ? `agent:${b.agent}` : b.kind)), ['agent:local', 'text', 'escalation', 'agent:claude', 'text']);
  assert.equal(m.escalationText(t.blocks[2]), 'Escalated to Claude by the local agent: needs a refactor (sent with a 1.2k-char summary, a new Claude conversation)');
  assert.match(m.formatUsage(t.usage), /100 in · 10 out · 50 cache read tokens · \$0.0123/);
});

test('a turn Claude runs from its start: banner above the one Claude badge', () => {
  seq = 0;
  const st = m.emptyState(session);
  m.addUserMessage(st, '');
  m.applyUpdate(st, u('turn_started', { agent: 'claude', route: 'claude', reason: 'user asked' }));
  m.applyUpdate(st, u('escalated', { by: 'user', reason: 'user asked', mode: 'first', contextChars: 10 }));
  m.applyUpdate(st, u('text', { agent: 'claude', delta: 'Hi.' }));
  assert.deepEqual(st.turns[0].blocks.map((b) => (b.kind === 'agent' ? `agent:${b.agent}` : b.kind)), ['escalation', 'agent:claude', 'text']);
});

test('cancel: running tools end as cancelled (not failed, not denied), status cancelled', () => {
  seq = 0;
  const st = m.emptyState(session);
  m.applyUpdate(st, u('turn_started', { agent: 'claude', route: 'claude', reason: 'user asked' }));
  m.applyUpdate(st, u('tool_call', { agent: 'claude', toolCallId: 'toolu_1', name: 'Bash', input: { command: 'sleep 9' }, status: 'pending' }));
  m.applyUpdate(st, u('notice', { severity: 'info', message: 'cancelled' }));
  m.applyUpdate(st, u('turn_ended', { agent: 'claude', stopReason: 'cancelled' }));
  const t = st.turns[0];
  assert.equal(t.status, 'cancelled');
  assert.equal(t.blocks.find((b) => b.kind === 'tool').tool.status, 'cancelled');
  assert.equal(m.toolSummary(t.blocks.find((b) => b.kind === 'tool').tool), 'sleep 9');
});

test('gaps and repeats in seq', () => {
  seq = 0;
  const st = m.emptyState(session);
  const a = u('turn_started', { agent: 'local', route: 'auto', reason: 'default' });
  m.applyUpdate(st, a);
  assert.equal(m.applyUpdate(st, a), undefined, 'repeat ignored');
  seq++; // skip one
  m.applyUpdate(st, u('text', { agent: 'local', delta: 'x' }));
  assert.equal(st.turns[0].gap, true);
});

test('updates of another session are ignored', () => {
  const st = m.emptyState(session);
  assert.equal(m.applyUpdate(st, { sessionId: 'OTHER', turnId: 'X', seq: 1, kind: 'text', agent: 'local', delta: 'x' }), undefined);
  assert.equal(st.turns.length, 0);
});

test('request failure before a turn marks the pending message', () => {
  const st = m.emptyState(session);
  m.addUserMessage(st, 'again');
  const t = m.failPending(st, 'session is busy', 'session_busy');
  assert.equal(t.status, 'error');
  assert.equal(t.error.reason, 'session_busy');
  assert.equal(m.isRunning(st), false);
});

test('history: user and assistant records, tool calls, escalation', () => {
  const st = m.fromHistory({
    session: { ...session, currentNeed: 'n0' },
    bricks: { currentNeed: 'fix the build', escalationBrief: '', lastLocalSummary: '', lastClaudeSummary: '' },
    turns: [
      { turnId: 'A', role: 'user', agent: 'local', text: 'hi', status: 'ok', createdAt: 'x' },
      { turnId: 'A', role: 'assistant', agent: 'local', text: 'hello', status: 'ok', createdAt: 'x' },
      { turnId: 'B', role: 'user', agent: 'local', text: 'fix it', status: 'cancelled', createdAt: 'x' },
      { turnId: 'B', role: 'assistant', agent: 'local', text: 'trying', status: 'cancelled', createdAt: 'x',
        toolCalls: [{ toolCallId: 'c', name: 'run_command', input: { command: 'make' }, output: 'error', isError: true }] },
      { turnId: 'B', role: 'assistant', agent: 'claude', text: 'done', status: 'cancelled', createdAt: 'x' },
    ],
  });
  assert.equal(st.need, 'fix the build');
  assert.equal(st.turns.length, 2);
  assert.equal(st.turns[0].userText, 'hi');
  assert.equal(st.turns[0].status, 'ok');
  assert.equal(st.turns[1].status, 'cancelled');
  assert.deepEqual(st.turns[1].blocks.map((b) => (b.kind === 'agent' ? `agent:${b.agent}` : b.kind)), ['agent:local', 'tool', 'text', 'escalation', 'agent:claude', 'text']);
  assert.equal(st.turns[1].blocks[1].tool.status, 'failed');
});

test('labels', () => {
  assert.equal(m.agentLabel('claude', 'qwen'), 'Claude');
  assert.equal(m.agentLabel('local', 'qwen'), 'local · qwen');
  assert.equal(m.agentLabel('local'), 'local');
  assert.equal(m.oneLine('a\n  b', 10), 'a b');
});

test('two turns whose tool calls share an id keep separate blocks (ids are unique per turn only)', () => {
  const st = m.emptyState(session);
  const up = (turnId, n, kind, fields) => ({ sessionId: 'S1', turnId, seq: n, kind, ...fields });
  m.addUserMessage(st, 'read it');
  m.applyUpdate(st, up('T1', 1, 'turn_started', { agent: 'local', route: 'auto', reason: 'default' }));
  m.applyUpdate(st, up('T1', 2, 'tool_call', { agent: 'local', toolCallId: 'call_2_0', name: 'read_file', input: { path: 'a.py' }, status: 'running' }));
  m.applyUpdate(st, up('T1', 3, 'tool_result', { agent: 'local', toolCallId: 'call_2_0', output: 'A', isError: false }));
  m.applyUpdate(st, up('T1', 4, 'turn_ended', { agent: 'local', stopReason: 'end_turn' }));
  // the model server restarted and reuses the id in the next turn
  m.addUserMessage(st, 'list');
  m.applyUpdate(st, up('T2', 1, 'turn_started', { agent: 'local', route: 'auto', reason: 'default' }));
  m.applyUpdate(st, up('T2', 2, 'tool_call', { agent: 'local', toolCallId: 'call_2_0', name: 'ls', input: {}, status: 'running' }));
  m.applyUpdate(st, up('T2', 3, 'tool_result', { agent: 'local', toolCallId: 'call_2_0', output: 'B', isError: false }));
  const tools = (t) => t.blocks.filter((b) => b.kind === 'tool').map((b) => [b.tool.name, b.tool.output]);
  assert.deepEqual(tools(st.turns[0]), [['read_file', 'A']]);
  assert.deepEqual(tools(st.turns[1]), [['ls', 'B']]);
});

test('badges keep the model that answered then, not the current one', () => {
  seq = 0;
  const st = m.emptyState(session, 'qwen-small');
  m.addUserMessage(st, 'hi');
  m.applyUpdate(st, u('turn_started', { agent: 'local', route: 'auto', reason: 'default' }));
  st.localModel = 'llama-big'; // the user switched models afterwards
  const badge = st.turns[0].blocks.find((b) => b.kind === 'agent');
  assert.equal(m.agentLabel(badge.agent, badge.model), 'local · qwen-small');
  // a stored turn does not say which model answered: the badge does not pretend
  const hist = m.fromHistory({
    session, bricks: { currentNeed: '' },
    turns: [
      { turnId: 'A', role: 'user', agent: 'local', text: 'hi', status: 'ok', createdAt: 'x' },
      { turnId: 'A', role: 'assistant', agent: 'local', text: 'hello', status: 'ok', createdAt: 'x' },
    ],
  }, 'llama-big');
  const hb = hist.turns[0].blocks.find((b) => b.kind === 'agent');
  assert.equal(m.agentLabel(hb.agent, hb.model), 'local');
});

test('an error is shown once: the error notice becomes the card the result names', () => {
  seq = 0;
  const st = m.emptyState(session);
  m.addUserMessage(st, 'hi');
  m.applyUpdate(st, u('turn_started', { agent: 'local', route: 'auto', reason: 'default' }));
  m.applyUpdate(st, u('notice', { severity: 'warning', message: 'slow model' }));
  m.applyUpdate(st, u('notice', { severity: 'error', message: 'no model server at http://x/v1; set milk.local.baseUrl' }));
  m.applyUpdate(st, u('turn_ended', { agent: 'local', stopReason: 'error' }));
  m.applyResult(st, { sessionId: 'S1', turnId: 'T1', agent: 'local', stopReason: 'error', text: '',
    error: { reason: 'local_unreachable', message: 'no model server at http://x/v1; set milk.local.baseUrl' } });
  const t = st.turns[0];
  assert.deepEqual(t.blocks.filter((b) => b.kind === 'notice').map((b) => b.message), ['slow model']);
  assert.deepEqual(t.error, { reason: 'local_unreachable', message: 'no model server at http://x/v1; set milk.local.baseUrl' });
  assert.deepEqual(m.errorActions(t.error.reason), ['openSettings', 'retry', 'doctor']);
  assert.equal(m.errorSetting(t.error.reason, t.error.message), 'milk.local.baseUrl');
  assert.equal(m.errorSetting('claude_not_found', 'claude was not found'), 'milk.claude.path');
});

test("error card: a judged local failure offers Retry, not the server's settings or Doctor", () => {
  seq = 0;
  const st = m.emptyState(session);
  m.addUserMessage(st, 'change it');
  m.applyUpdate(st, u('turn_started', { agent: 'local', route: 'local', reason: 'route_local' }));
  m.applyUpdate(st, u('turn_ended', { agent: 'local', stopReason: 'error' }));
  const message = "The local model did not finish: the user denied the local model's edit of a.js.";
  m.applyResult(st, { sessionId: 'S1', turnId: 'T1', agent: 'local', stopReason: 'error', text: '',
    error: { reason: 'local_failed', message, data: { signal: 'edit_not_made' } } });
  const t = st.turns[0];
  assert.deepEqual(t.error, { reason: 'local_failed', message, signal: 'edit_not_made' });
  assert.deepEqual(m.errorActions(t.error.reason, t.error.signal), ['retry']);
  assert.deepEqual(m.errorActions('local_failed', 'model_error'), ['openSettings', 'retry', 'doctor']);
  assert.deepEqual(m.errorActions('local_failed'), ['openSettings', 'retry', 'doctor']);
});

test('changes: the update, then the result, and undo', () => {
  seq = 0;
  const st = m.emptyState(session);
  m.addUserMessage(st, 'fix it');
  m.applyUpdate(st, u('turn_started', { agent: 'local', route: 'auto', reason: 'default' }));
  const changes = [
    { uri: 'file:///w/src/a.py', kind: 'modified', added: 3, removed: 1 },
    { uri: 'file:///w/new.py', kind: 'created', added: 10, removed: 0 },
  ];
  m.applyUpdate(st, u('changes', { changes }));
  m.applyUpdate(st, u('turn_ended', { agent: 'local', stopReason: 'end_turn' }));
  assert.deepEqual(st.turns[0].changes, changes);
  assert.deepEqual(m.changesText(changes, 'file:///w'), { head: '2 files changed', files: 'src/a.py +3 −1, new.py (new) +10' });
  m.applyResult(st, { sessionId: 'S1', turnId: 'T1', agent: 'local', stopReason: 'end_turn', text: '', changes });
  assert.equal(st.turns[0].undone, undefined);
  m.markUndone(st, 'T1');
  assert.equal(st.turns[0].undone, true);
});

test('history with turnInfo equals the live view: error, escalation, denied, usage, changes', () => {
  const st = m.fromHistory({
    session,
    bricks: { currentNeed: '' },
    turns: [
      { turnId: 'A', role: 'user', agent: 'local', text: 'run it', status: 'ok', createdAt: 'x' },
      { turnId: 'A', role: 'assistant', agent: 'local', text: 'ok', status: 'ok', createdAt: 'x',
        toolCalls: [
          { toolCallId: 'c1', name: 'run_command', input: { command: 'rm x' }, output: 'denied by the user', isError: true, status: 'denied' },
          { toolCallId: 'c2', name: 'run_command', input: { command: 'false' }, output: 'exit 1', isError: true, status: 'failed' },
        ] },
      // a Claude turn that failed at once: no assistant record at all
      { turnId: 'B', role: 'user', agent: 'claude', text: 'hard one', status: 'error', createdAt: 'x' },
      { turnId: 'C', role: 'user', agent: 'local', text: 'edit', status: 'ok', createdAt: 'x' },
      { turnId: 'C', role: 'assistant', agent: 'local', text: 'edited', status: 'ok', createdAt: 'x' },
    ],
    turnInfo: [
      { turnId: 'A', agent: 'local', stopReason: 'end_turn', usage: { inputTokens: 5, outputTokens: 2 } },
      { turnId: 'B', agent: 'claude', stopReason: 'error', escalated: { by: 'user', reason: 'user asked', mode: 'first', contextChars: 2515 },
        error: { reason: 'claude_not_logged_in', message: 'Claude is not logged in: run /opt/claude login' } },
      { turnId: 'C', agent: 'local', stopReason: 'end_turn', changes: [{ uri: 'file:///w/a.py', kind: 'modified', added: 1, removed: 1 }], undone: true },
    ],
  });
  const [a, b, c] = st.turns;
  assert.deepEqual(a.blocks.filter((x) => x.kind === 'tool').map((x) => x.tool.status), ['denied', 'failed']);
  assert.match(m.formatUsage(a.usage), /5 in · 2 out/);
  assert.equal(b.status, 'error');
  assert.equal(b.error.reason, 'claude_not_logged_in');
  const banner = b.blocks.find((x) => x.kind === 'escalation');
  assert.equal(m.escalationText(banner), 'Escalated to Claude by you: user asked (sent with a 2.5k-char summary, a new Claude conversation)');
  assert.equal(c.changes.length, 1);
  assert.equal(c.undone, true);
});

test('a tool left open by a cancelled turn is "cancelled" live and after a reload', () => {
  const st = m.fromHistory({
    session, bricks: { currentNeed: '' },
    turns: [
      { turnId: 'A', role: 'user', agent: 'claude', text: 'go', status: 'cancelled', createdAt: 'x' },
      { turnId: 'A', role: 'assistant', agent: 'claude', text: '', status: 'cancelled', createdAt: 'x',
        toolCalls: [{ toolCallId: 't', name: 'Bash', input: { command: 'sleep 9' }, status: 'cancelled' }] },
    ],
    turnInfo: [{ turnId: 'A', agent: 'claude', stopReason: 'cancelled' }],
  });
  assert.equal(st.turns[0].blocks.find((x) => x.kind === 'tool').tool.status, 'cancelled');
  assert.equal(st.turns[0].status, 'cancelled');
});

test('tool output cut on the wire is marked', () => {
  assert.deepEqual(m.splitToolOutput('short'), { text: 'short' });
  const marked = m.splitToolOutput('line 1\nline 2\n… (cut: 12345 more characters)\n');
  assert.equal(marked.text, 'line 1\nline 2');
  assert.equal(marked.cut, '… cut, 12,345 more characters');
  // exactly at the wire limit but not cut: no note
  assert.deepEqual(m.splitToolOutput('x'.repeat(2000)), { text: 'x'.repeat(2000) });
});

test('plain words: route reasons, times, session names', () => {
  assert.equal(m.routeReasonText('default'), '');
  assert.equal(m.routeReasonText('session escalated by the user'), 'you sent this session to Claude');
  assert.equal(m.routeReasonText('something new'), 'something new');
  const now = Date.parse('2026-01-10T12:00:00Z');
  assert.equal(m.relativeTime('2026-01-10T11:59:50Z', now), 'just now');
  assert.equal(m.relativeTime('2026-01-10T11:55:00Z', now), '5 min ago');
  assert.equal(m.relativeTime('2026-01-10T09:00:00Z', now), '3 hours ago');
  assert.equal(m.relativeTime('2026-01-09T10:00:00Z', now), 'yesterday');
  assert.equal(m.relativeTime('2025-01-01T00:00:00Z', now), '2025-01-01');
  assert.equal(m.sessionTitle({ title: '', currentNeed: null }), 'New session');
  assert.equal(m.sessionTitle({ title: 'Fix the build', currentNeed: 'x' }), 'Fix the build');
  assert.equal(m.sessionDescription({ turnCount: 3, activeAgent: 'claude', updatedAt: '2026-01-10T11:55:00Z' }, now), '3 messages · Claude · 5 min ago');
  assert.equal(m.sessionDescription({ turnCount: 0, activeAgent: 'local', updatedAt: '2026-01-10T11:59:59Z' }, now), 'empty · just now');
  assert.equal(m.shortCount(2515), '2.5k');
  assert.equal(m.shortCount(999), '999');
});

// the blocks as the user sees them, without the render keys
const shown = (turn) =>
  turn.blocks.map((b) => {
    if (b.kind === 'agent') return `agent:${b.agent}`;
    if (b.kind === 'text') return `text:${b.text}`;
    if (b.kind === 'tool') return `tool:${b.tool.toolCallId}:${b.tool.name}:${b.tool.status}:${b.tool.output ?? ''}`;
    return b.kind;
  });

test('a reloaded reply with text before, between and after its tool calls keeps the live order (segments)', () => {
  seq = 0;
  const live = m.emptyState(session);
  m.addUserMessage(live, 'what is here?');
  m.applyUpdate(live, u('turn_started', { agent: 'local', route: 'auto', reason: 'default' }));
  m.applyUpdate(live, u('text', { agent: 'local', delta: 'Let me ' }));
  m.applyUpdate(live, u('text', { agent: 'local', delta: 'look.' }));
  m.applyUpdate(live, u('tool_call', { agent: 'local', toolCallId: 'c1', name: 'list_files', input: { path: '.' }, status: 'running' }));
  m.applyUpdate(live, u('tool_result', { agent: 'local', toolCallId: 'c1', output: 'a.py', isError: false }));
  m.applyUpdate(live, u('tool_call', { agent: 'local', toolCallId: 'c2', name: 'read_file', input: { path: 'a.py' }, status: 'running' }));
  m.applyUpdate(live, u('tool_result', { agent: 'local', toolCallId: 'c2', output: 'x = 1', isError: false }));
  m.applyUpdate(live, u('text', { agent: 'local', delta: 'One file; ' }));
  m.applyUpdate(live, u('tool_call', { agent: 'local', toolCallId: 'c3', name: 'read_file', input: { path: 'b.py' }, status: 'running' }));
  m.applyUpdate(live, u('tool_result', { agent: 'local', toolCallId: 'c3', output: 'no such file', isError: true }));
  m.applyUpdate(live, u('text', { agent: 'local', delta: 'it sets x.' }));
  m.applyUpdate(live, u('turn_ended', { agent: 'local', stopReason: 'end_turn' }));

  const hist = m.fromHistory({
    session, bricks: { currentNeed: '' },
    turns: [
      { turnId: 'T1', role: 'user', agent: 'local', text: 'what is here?', status: 'ok', createdAt: 'x' },
      { turnId: 'T1', role: 'assistant', agent: 'local', text: 'Let me look.One file; it sets x.', status: 'ok', createdAt: 'x',
        toolCalls: [
          { toolCallId: 'c1', name: 'list_files', input: { path: '.' }, output: 'a.py', isError: false, status: 'completed' },
          { toolCallId: 'c2', name: 'read_file', input: { path: 'a.py' }, output: 'x = 1', isError: false, status: 'completed' },
          { toolCallId: 'c3', name: 'read_file', input: { path: 'b.py' }, output: 'no such file', isError: true, status: 'failed' },
        ],
        segments: [{ text: 'Let me look.' }, { toolCallId: 'c1' }, { toolCallId: 'c2' }, { text: 'One file; ' }, { toolCallId: 'c3' }, { text: 'it sets x.' }] },
    ],
    turnInfo: [{ turnId: 'T1', agent: 'local', stopReason: 'end_turn' }],
  });
  const want = [
    'agent:local',
    'text:Let me look.',
    'tool:c1:list_files:completed:a.py',
    'tool:c2:read_file:completed:x = 1',
    'text:One file; ',
    'tool:c3:read_file:failed:no such file',
    'text:it sets x.',
  ];
  assert.deepEqual(shown(live.turns[0]), want);
  assert.deepEqual(shown(hist.turns[0]), want);
  // unique render keys, as the webview needs
  assert.equal(new Set(hist.turns[0].blocks.map((b) => b.key)).size, want.length);
});

test('a record without segments (an older server) keeps its calls first, then its text', () => {
  const rec = { turnId: 'A', role: 'assistant', agent: 'claude', text: 'Looked. Done.', status: 'ok', createdAt: 'x',
    toolCalls: [{ toolCallId: 't1', name: 'Bash', input: { command: 'ls' }, output: 'a.py', isError: false }] };
  const user = { turnId: 'A', role: 'user', agent: 'claude', text: 'go', status: 'ok', createdAt: 'x' };
  const old = m.fromHistory({ session, bricks: { currentNeed: '' }, turns: [user, rec] });
  assert.deepEqual(shown(old.turns[0]), ['agent:claude', 'tool:t1:Bash:completed:a.py', 'text:Looked. Done.']);
  assert.equal(m.inShownOrder(rec), undefined);
  assert.equal(m.inShownOrder({ ...rec, segments: null }), undefined);
  assert.equal(m.inShownOrder({ ...rec, segments: [] }), undefined);
  // the same record with segments: the text before the call stays before it
  const withOrder = m.fromHistory({ session, bricks: { currentNeed: '' },
    turns: [user, { ...rec, segments: [{ text: 'Looked. ' }, { toolCallId: 't1' }, { text: 'Done.' }] }] });
  assert.deepEqual(shown(withOrder.turns[0]), ['agent:claude', 'text:Looked. ', 'tool:t1:Bash:completed:a.py', 'text:Done.']);
});

test('segments that do not account for the record exactly fall back to the old layout: nothing is lost', () => {
  const calls = [
    { toolCallId: 't1', name: 'Bash', input: { command: 'ls' }, output: 'a.py', isError: false },
    { toolCallId: 't2', name: 'Read', input: { file_path: 'a.py' }, output: 'x', isError: false },
  ];
  const rec = (segments) => ({ turnId: 'A', role: 'assistant', agent: 'claude', text: 'Hm. Ok.', status: 'ok', createdAt: 'x', toolCalls: calls, segments });
  const old = ['agent:claude', 'tool:t1:Bash:completed:a.py', 'tool:t2:Read:completed:x', 'text:Hm. Ok.'];
  for (const segments of [
    [{ text: 'Hm. ' }, { toolCallId: 't1' }, { text: 'Ok.' }], // a call left out
    [{ text: 'Hm. ' }, { toolCallId: 't1' }, { toolCallId: 't9' }, { toolCallId: 't2' }, { text: 'Ok.' }], // an unknown call
    [{ text: 'Hm. ' }, { toolCallId: 't1' }, { toolCallId: 't1' }, { toolCallId: 't2' }, { text: 'Ok.' }], // a call twice
    [{ text: 'Hm. ' }, { toolCallId: 't1' }, { toolCallId: 't2' }], // text missing
    [{ text: 'Hm. ' }, {}, { toolCallId: 't1' }, { toolCallId: 't2' }, { text: 'Ok.' }], // neither text nor call
  ]) {
    const st = m.fromHistory({ session, bricks: { currentNeed: '' }, turns: [rec(segments)] });
    assert.deepEqual(shown(st.turns[0]), old, JSON.stringify(segments));
  }
  // empty text pieces are skipped, adjacent ones joined (as the live view joins deltas)
  const st = m.fromHistory({ session, bricks: { currentNeed: '' },
    turns: [rec([{ text: '' }, { toolCallId: 't1' }, { text: 'Hm. ' }, { text: 'Ok.' }, { toolCallId: 't2' }, { text: '' }])] });
  assert.deepEqual(shown(st.turns[0]), ['agent:claude', 'tool:t1:Bash:completed:a.py', 'text:Hm. Ok.', 'tool:t2:Read:completed:x']);
});

test('a tool row names a workspace file by its relative path, as the question does', () => {
  const write = { name: 'Write', input: { file_path: '/w/notes/a.txt', content: 'x' } };
  assert.equal(m.toolSummary(write, 'file:///w'), 'notes/a.txt');
  assert.equal(m.toolSummary(write), '/w/notes/a.txt');
  assert.equal(m.toolSummary({ name: 'Write', input: { file_path: '/elsewhere/b.txt' } }, 'file:///w'), '/elsewhere/b.txt');
  assert.equal(m.toolSummary({ name: 'run_command', input: { command: '/w/x.sh' } }, 'file:///w'), '/w/x.sh');
});

test('Open Settings goes to the one setting; a call milk stopped is "not run"', () => {
  assert.equal(m.errorSetting('local_unreachable', 'The local model is unreachable.'), 'milk.local.baseUrl');
  assert.equal(m.errorSetting('local_failed', 'The local model did not finish: it answered HTTP 500.'), 'milk.local.baseUrl');
  assert.equal(m.errorSetting('tool_rounds_exceeded', 'still calling tools'), 'milk.local.maxToolRounds');
  assert.ok(m.notRun({ status: 'failed', output: 'not run: the same call a third time' }));
  assert.ok(!m.notRun({ status: 'failed', output: 'Traceback: not run' }));
  assert.ok(!m.notRun({ status: 'completed', output: 'not run' }));
});

test('history keeps what the live turn showed: the badge reason, notices, a failed turn\'s model', () => {
  const st = m.fromHistory({
    session,
    bricks: { currentNeed: '', escalationBrief: '', lastLocalSummary: '', lastClaudeSummary: '' },
    turns: [
      { turnId: 'A', role: 'user', agent: 'local', text: 'hi', status: 'ok', createdAt: 'x' },
      { turnId: 'A', role: 'assistant', agent: 'local', text: 'hello', status: 'ok', createdAt: 'x' },
      { turnId: 'B', role: 'user', agent: 'local', text: 'there?', status: 'error', createdAt: 'x' },
    ],
    turnInfo: [
      { turnId: 'A', agent: 'local', stopReason: 'end_turn', model: 'm1', routeReason: 'user chose the local agent' },
      { turnId: 'B', agent: 'local', stopReason: 'error', model: 'm1', routeReason: 'default',
        error: { reason: 'local_unreachable', message: 'cannot reach it' },
        notices: [{ severity: 'info', message: 'The local model is unreachable; you can still ask Claude (Escalate, or route claude).' }] },
    ],
  });
  const [a, b] = st.turns;
  assert.deepEqual(a.blocks[0], { key: a.blocks[0].key, kind: 'agent', agent: 'local', model: 'm1', reason: 'user chose the local agent' });
  assert.equal(m.routeReasonText(a.blocks[0].reason), 'you chose the local model');
  assert.equal(b.blocks[0].kind, 'agent');
  assert.equal(m.agentLabel(b.blocks[0].agent, b.blocks[0].model), 'local · m1', 'a failed turn keeps its model');
  const notice = b.blocks.find((x) => x.kind === 'notice');
  assert.match(notice.message, /unreachable; you can still ask Claude/);
  assert.equal(b.error.reason, 'local_unreachable');
});

test('a local badge made while the model was unknown gets its name once it is known', () => {
  const st = m.emptyState(session);
  m.addUserMessage(st, 'back?');
  m.applyUpdate(st, u('turn_started', { agent: 'local', route: 'auto', reason: 'default' }));
  m.applyUpdate(st, u('text', { agent: 'local', delta: 'yes' }));
  m.applyUpdate(st, u('turn_ended', { agent: 'local', stopReason: 'end_turn' }));
  assert.equal(st.turns[0].blocks[0].model, undefined);
  assert.ok(m.nameLocalModel(st, 'm1'));
  assert.equal(st.turns[0].blocks[0].model, 'm1');
  // a turn whose local part said nothing (it failed at once) keeps "local"
  const st2 = m.emptyState(session);
  m.addUserMessage(st2, 'there?');
  m.applyUpdate(st2, u('turn_started', { agent: 'local', route: 'auto', reason: 'default' }));
  m.applyUpdate(st2, u('turn_ended', { agent: 'local', stopReason: 'error' }));
  assert.equal(m.nameLocalModel(st2, 'm1'), undefined);
});

test('issue 31 item 3: after the hand-off the running turn is Claude\'s, before Claude says a word', () => {
  seq = 0;
  const st = m.emptyState(session);
  m.addUserMessage(st, 'fix it');
  const turn = st.turns[0];
  assert.equal(m.workingAgent(turn), undefined, 'not started yet');
  assert.equal(m.workingText(turn).state, 'waiting for the server…');
  m.applyUpdate(st, u('turn_started', { agent: 'local', route: 'auto', reason: 'default' }));
  m.applyUpdate(st, u('text', { agent: 'local', delta: 'Trying.' }));
  assert.equal(m.workingAgent(turn), 'local');
  assert.equal(m.workingText(turn).state, 'local model is answering…');
  m.applyUpdate(st, u('escalated', { by: 'fallback', reason: 'the model server is down', mode: 'first', contextChars: 100 }));
  assert.equal(m.workingAgent(turn), 'claude');
  assert.deepEqual(m.workingText(turn), { turn: 'Claude is working…', state: 'Claude is answering…' });
  m.applyUpdate(st, u('text', { agent: 'claude', delta: 'Done.' }));
  assert.equal(m.workingAgent(turn), 'claude');
  m.applyUpdate(st, u('turn_ended', { agent: 'claude', stopReason: 'end_turn' }));
  assert.equal(m.workingAgent(turn), undefined, 'no longer running');
});

test('a turn another door runs (elsewhere): its own turn with the message and the door, never a pending one', () => {
  const st = m.emptyState(session);
  const mine = m.addUserMessage(st, 'my question, not sent yet');
  const e = (s, kind, fields) => ({ sessionId: 'S1', turnId: 'T9', seq: s, kind, elsewhere: true, ...fields });
  m.applyUpdate(st, e(1, 'turn_started', { agent: 'local', route: 'local', reason: '', userText: 'Was macht das Terminal?', door: 'terminal' }));
  m.applyUpdate(st, e(2, 'text', { agent: 'local', delta: 'Streaming' }));
  assert.equal(st.turns.length, 2, 'a turn of its own');
  assert.equal(mine.pending, true, 'the pending turn of this window is left alone');
  const t = st.turns[1];
  assert.equal(t.turnId, 'T9');
  assert.equal(t.userText, 'Was macht das Terminal?');
  assert.equal(t.askedIn, 'the terminal (milk-lsp chat)');
  assert.equal(t.status, 'running');
  assert.equal(t.blocks[1].text, 'Streaming');
  m.applyUpdate(st, e(3, 'turn_ended', { agent: 'local', stopReason: 'cancelled' }));
  assert.equal(t.status, 'cancelled');
  // another session's turn is not shown here
  m.applyUpdate(st, { sessionId: 'S2', turnId: 'T10', seq: 1, kind: 'turn_started', elsewhere: true, agent: 'local', route: 'auto', reason: '', userText: 'x', door: 'nvim' });
  assert.equal(st.turns.length, 2);
});

test('an advisor turn: the plan is one checklist block that ticks, and it comes back from history', () => {
  const st = m.emptyState(session);
  m.addUserMessage(st, 'Multiply the constants by ten.');
  const p = (s, kind, fields) => ({ sessionId: 'S1', turnId: 'A1', seq: s, kind, ...fields });
  const steps = (...states) => states.map(([status, agent], i) => ({ content: `step ${i + 1}`, status, ...(agent ? { agent } : {}) }));
  m.applyUpdate(st, p(1, 'turn_started', { agent: 'claude', route: 'advise', reason: "user asked for Claude's plan" }));
  m.applyUpdate(st, p(2, 'text', { agent: 'claude', delta: '1. step 1\n2. step 2' }));
  m.applyUpdate(st, p(3, 'plan', { steps: steps(['pending'], ['pending']) }));
  m.applyUpdate(st, p(4, 'plan', { steps: steps(['in_progress', 'local'], ['pending']) }));
  m.applyUpdate(st, p(5, 'text', { agent: 'local', delta: 'Step 1 done.' }));
  m.applyUpdate(st, p(6, 'plan', { steps: steps(['completed', 'local'], ['completed', 'claude']) }));
  const t = st.turns[0];
  const plans = t.blocks.filter((b) => b.kind === 'plan');
  assert.equal(plans.length, 1, 'one checklist, updated in place');
  assert.deepEqual(plans[0].steps.map((s) => [s.status, s.agent]), [['completed', 'local'], ['completed', 'claude']]);
  assert.ok(t.blocks.findIndex((b) => b.kind === 'plan') < t.blocks.findIndex((b) => b.kind === 'text' && b.agent === 'local'), 'under Claude\'s plan, above the steps');

  const history = m.fromHistory({
    session,
    bricks: {},
    turns: [
      { turnId: 'A1', role: 'user', agent: 'claude', text: 'Multiply the constants by ten.', status: 'ok', createdAt: '2026-01-01T00:00:00Z' },
      { turnId: 'A1', role: 'assistant', agent: 'claude', text: '1. step 1\n2. step 2', status: 'ok', createdAt: '2026-01-01T00:00:00Z' },
      { turnId: 'A1', role: 'assistant', agent: 'local', text: 'Step 1 done.', status: 'ok', createdAt: '2026-01-01T00:00:00Z' },
    ],
    turnInfo: [{ turnId: 'A1', agent: 'local', stopReason: 'end_turn', plan: steps(['completed', 'local'], ['completed', 'claude']) }],
  });
  const ht = history.turns[0];
  const kinds = ht.blocks.map((b) => b.kind);
  assert.equal(kinds.filter((k) => k === 'plan').length, 1);
  assert.ok(kinds.indexOf('plan') > kinds.indexOf('text') && kinds.indexOf('plan') < kinds.lastIndexOf('agent'), kinds.join(','));
});
