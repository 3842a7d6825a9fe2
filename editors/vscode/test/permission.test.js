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
  assert.deepEqual(p.labels, ['Allow once', 'Allow for this session', 'Deny']);
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
