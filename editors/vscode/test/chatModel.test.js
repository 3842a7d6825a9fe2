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
  assert.equal(m.escalationText(t.blocks[2]), 'Escalated to Claude by the local agent: needs a refactor (first conversation, 1,234 chars of context)');
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

test('cancel: running tools end as denied, status cancelled', () => {
  seq = 0;
  const st = m.emptyState(session);
  m.applyUpdate(st, u('turn_started', { agent: 'claude', route: 'claude', reason: 'user asked' }));
  m.applyUpdate(st, u('tool_call', { agent: 'claude', toolCallId: 'toolu_1', name: 'Bash', input: { command: 'sleep 9' }, status: 'pending' }));
  m.applyUpdate(st, u('notice', { severity: 'info', message: 'cancelled' }));
  m.applyUpdate(st, u('turn_ended', { agent: 'claude', stopReason: 'cancelled' }));
  const t = st.turns[0];
  assert.equal(t.status, 'cancelled');
  assert.equal(t.blocks.find((b) => b.kind === 'tool').tool.status, 'denied');
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
