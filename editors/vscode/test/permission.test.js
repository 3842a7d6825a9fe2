const { test } = require('node:test');
const assert = require('node:assert/strict');
const { permissionPrompt, permissionAnswer } = require('../out/lib/permission.js');

const params = {
  sessionId: 's', turnId: 't', agent: 'claude', toolCallId: 'toolu_1', tool: 'Bash',
  input: { command: 'rm -rf build', description: 'clean' },
  description: 'Claude wants to clean the build directory',
  options: [
    { optionId: 'allow_once', label: 'Allow once' },
    { optionId: 'allow_session', label: 'Allow for this session' },
    { optionId: 'deny', label: 'Deny' },
  ],
};

test('prompt names the agent, the tool and its input', () => {
  const p = permissionPrompt(params);
  assert.equal(p.message, 'Claude wants to use Bash');
  assert.match(p.detail, /clean the build directory/);
  assert.match(p.detail, /\$ rm -rf build/);
  assert.match(permissionPrompt({ ...params, input: { command: 'ls', description: 'Claude wants to clean the build directory' } }).detail, /^Claude wants to clean the build directory\n\n\$ ls$/);
  // Deny first: VS Code's modal focuses the first button, so Enter denies; the close button
  // (Escape) stops the turn, so there is no Cancel that means Deny again
  assert.deepEqual(p.labels, ['Deny', 'Allow once', 'Allow for this session']);
  assert.equal(p.close, STOP_LABEL);
  assert.deepEqual(permissionAnswer(params, STOP_LABEL), { optionId: 'deny' });
  assert.equal(permissionPrompt({ ...params, agent: 'local', tool: 'run_command' }).message, 'The local agent wants to use run_command');
});

test('answers map labels to option ids; dismissing denies', () => {
  assert.deepEqual(permissionAnswer(params, 'Allow once'), { optionId: 'allow_once' });
  assert.deepEqual(permissionAnswer(params, 'Allow for this session'), { optionId: 'allow_session' });
  assert.deepEqual(permissionAnswer(params, 'Deny'), { optionId: 'deny' });
  assert.deepEqual(permissionAnswer(params, undefined), { optionId: 'deny' });
  assert.deepEqual(permissionAnswer(params, 'Cancel'), { optionId: 'deny' });
});

test('huge inputs are cut in the dialog', () => {
  const p = permissionPrompt({ ...params, description: undefined, input: { content: 'x'.repeat(10000) } });
  assert.ok(p.detail.length < 1700);
  assert.match(p.detail, /more characters/);
});

const { REVIEW_LABEL, STOP_LABEL, reviewChoices, editSummary } = require('../out/lib/permission.js');

const editParams = (edits, tool = 'Edit') => ({ ...params, tool, description: undefined, input: { file_path: '/w/src/app.py' }, edits });

test('an edit: full path, counts, a short diff and Review…; Deny stays the default', () => {
  const before = 'import os\n\ndef main():\n    print("hi")\n';
  const after = 'import os\n\ndef main():\n    print("hello")\n    return 0\n';
  const p = permissionPrompt(editParams([{ uri: 'file:///w/src/deeply/nested/dir/app.py', before, after }]), { workspaceFolder: 'file:///w' });
  assert.equal(p.message, 'Claude wants to edit src/deeply/nested/dir/app.py');
  assert.match(p.detail, /^src\/deeply\/nested\/dir\/app\.py: 2 lines added, 1 removed$/m);
  // indentation kept as no-break spaces (the dialog collapses spaces)
  assert.match(p.detail, /^-\u00a0{4}print\("hi"\)$/m);
  assert.match(p.detail, /^\+\u00a0{4}print\("hello"\)$/m);
  assert.match(p.detail, /^\u00a0def main\(\):$/m);
  assert.doesNotMatch(p.detail, /\\n|"file_path"/, 'no JSON with escapes');
  // Review… is focused (it allows nothing); Deny is the close button: four buttons, no Cancel
  assert.deepEqual(p.labels, [REVIEW_LABEL, 'Allow once', 'Allow for this session']);
  assert.equal(p.close, 'Deny');
  assert.deepEqual(permissionAnswer(editParams([]), REVIEW_LABEL), { optionId: 'deny' }, 'Review is not an answer by itself');
});

test('a new file and a deleted file', () => {
  const created = permissionPrompt(editParams([{ uri: 'file:///w/new.py', after: 'a\nb\n' }], 'Write'), { workspaceFolder: 'file:///w' });
  assert.equal(created.message, 'Claude wants to create new.py');
  assert.match(created.detail, /new\.py: new file, 2 lines/);
  // the CLI's description of a Write is the file's path: said once, in the summary
  const described = permissionPrompt({ ...editParams([{ uri: 'file:///w/new.py', after: 'a\n' }], 'Write'), description: '/w/new.py' }, { workspaceFolder: 'file:///w' });
  assert.match(described.detail, /^new\.py: new file, 1 line/);
  assert.doesNotMatch(described.detail, /\/w\/new\.py/);
  const deleted = editSummary({ uri: 'file:///w/old.py', before: 'x\n' }, 'file:///w');
  assert.equal(deleted, 'old.py: deleted (1 line)');
  const two = permissionPrompt(editParams([{ uri: 'file:///w/a.py', before: '', after: 'x' }, { uri: 'file:///w/b.py', before: 'y', after: 'z' }], 'MultiEdit'));
  assert.equal(two.message, 'Claude wants to change 2 files');
});

test('the diff review answers: Accept (this once) or Reject', () => {
  assert.deepEqual(reviewChoices(editParams([])).map((c) => [c.label, c.optionId]), [
    ['Accept', 'allow_once'],
    ['Reject', 'deny'],
  ]);
  assert.deepEqual(reviewChoices({ ...editParams([]), options: [{ optionId: 'deny', label: 'No' }] }).map((c) => c.optionId), ['deny']);
});

test("the hand-off question: words, the reason, only the choices that exist", () => {
  const handOff = (localAnswer, deny) => ({
    sessionId: 's', turnId: 't', agent: 'local', toolCallId: 'handoff-t', tool: 'hand_off_to_claude',
    input: { signal: 'model_unreachable', detail: 'cannot reach the local model at http://127.0.0.1:9/v1.' },
    description: 'The local model could not finish: … Hand this turn to Claude Code?',
    options: [{ optionId: 'allow_once', label: 'Hand to Claude' }, { optionId: 'deny', label: deny }],
    localAnswer,
  });
  const none = permissionPrompt(handOff(false, "Don't hand off"));
  assert.equal(none.message, 'The local model could not finish this turn. Hand it to Claude?');
  assert.match(none.detail, /^Why: cannot reach the local model at http:\/\/127\.0\.0\.1:9\/v1\.$/m);
  assert.doesNotMatch(none.detail, /[{}]|signal|hand_off_to_claude|Keep the local answer/);
  assert.deepEqual([...none.labels, none.close], ['Hand to Claude', "Don't hand off"]);
  assert.deepEqual(permissionAnswer(handOff(false, "Don't hand off"), "Don't hand off"), { optionId: 'deny' });
  const kept = permissionPrompt(handOff(true, 'Keep the local answer'));
  assert.deepEqual([...kept.labels, kept.close], ['Hand to Claude', 'Keep the local answer']);
  assert.match(kept.detail, /Keep the local answer: the turn ends as failed, with the local model's text\./);
});

test("the budget question: words, the day's figures, go on once or stop", () => {
  const budget = {
    sessionId: 's', turnId: 't', agent: 'claude', toolCallId: 'budget-t', tool: 'claude_budget',
    input: { limitUsd: 0.5, spentTodayUsd: 0.512345, day: '2026-12-02' },
    description: "Claude's daily budget for this workspace is reached: …",
    options: [{ optionId: 'allow_once', label: 'Go on once' }, { optionId: 'deny', label: 'Stop here' }],
  };
  const p = permissionPrompt(budget);
  assert.equal(p.message, "Claude's daily budget for this workspace is reached. Go on with Claude for this turn?");
  assert.match(p.detail, /^Spent on Claude today \(2026-12-02\): \$0\.51 of the \$0\.50 a day set by milk\.claude\.budgetUsd\.$/m);
  assert.doesNotMatch(p.detail, /[{}]|claude_budget|limitUsd/);
  assert.deepEqual([...p.labels, p.close], ['Go on once', 'Stop here']);
  assert.deepEqual(permissionAnswer(budget, 'Go on once'), { optionId: 'allow_once' });
  assert.deepEqual(permissionAnswer(budget, undefined), { optionId: 'deny' });
});
