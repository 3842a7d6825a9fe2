const { test } = require('node:test');
const assert = require('node:assert/strict');
const { buildServerSettings, classifyChange, answerConfiguration, SERVER_SETTING_KEYS, MACHINE_PATH_KEYS, vscodeSettingNames } = require('../out/lib/config.js');
const fs = require('node:fs');
const path = require('node:path');
const pkg = require('../package.json');

test('flat milk.* settings become the nested object of PROTOCOL.md', () => {
  const flat = {
    'local.baseUrl': 'http://127.0.0.1:9/v1',
    'local.model': 'qwen',
    'local.apiKey': '',
    'local.maxToolRounds': 5,
    'local.requestTimeoutSeconds': 30,
    'claude.path': '/opt/claude',
    'claude.allowedTools': ['Read'],
    'claude.addDirs': [],
    'claude.model': '',
    'claude.skipPermissions': false,
    'claude.permissionTimeoutSeconds': 0.5,
    contextBudgetChars: 12000,
    route: 'auto',
    storageDir: '',
    'server.path': '/ignored',
  };
  const s = buildServerSettings((k) => flat[k]);
  assert.deepEqual(s, {
    local: { baseUrl: 'http://127.0.0.1:9/v1', model: 'qwen', maxToolRounds: 5, requestTimeoutSeconds: 30 },
    claude: { path: '/opt/claude', allowedTools: ['Read'], addDirs: [], skipPermissions: false, permissionTimeoutSeconds: 0.5 },
    contextBudgetChars: 12000,
    route: 'auto',
  });
});

test('nothing set gives an empty object', () => {
  assert.deepEqual(buildServerSettings(() => undefined), {});
});

test('every server key is declared in package.json with a default and a description', () => {
  const props = pkg.contributes.configuration.properties;
  for (const k of SERVER_SETTING_KEYS) {
    const p = props[`milk.${k}`];
    assert.ok(p, `milk.${k} declared`);
    assert.ok('default' in p, `milk.${k} default`);
    assert.ok(p.markdownDescription || p.description, `milk.${k} description`);
  }
  // and nothing else under milk.* except the client's own server.* keys
  const extra = Object.keys(props).filter((k) => !SERVER_SETTING_KEYS.includes(k.slice(5)) && !k.startsWith('milk.server.'));
  assert.deepEqual(extra, []);
  // the defaults match PROTOCOL.md's table
  assert.equal(props['milk.local.baseUrl'].default, 'http://127.0.0.1:11434/v1');
  assert.equal(props['milk.local.maxToolRounds'].default, 20);
  assert.equal(props['milk.contextBudgetChars'].default, 12000);
  assert.equal(props['milk.route'].default, 'auto');
  assert.equal(props['milk.claude.skipPermissions'].default, false);
  assert.equal(props['milk.local.requestTimeoutSeconds'].default, 120);
  assert.equal(props['milk.local.textToolCalls'].default, true);
  assert.equal(props['milk.local.textToolCalls'].type, 'boolean');
  assert.equal(props['milk.local.handOff'].default, 'ask');
  assert.deepEqual(props['milk.local.handOff'].enum, ['ask', 'auto', 'off', 'advise']);
  assert.equal(props['milk.local.memoryTags'].default, false);
  assert.equal(props['milk.claude.permissionTimeoutSeconds'].default, 600);
  // "number > 0" on the server: fractions allowed, zero not
  for (const k of ['milk.local.requestTimeoutSeconds', 'milk.claude.permissionTimeoutSeconds']) {
    assert.equal(props[k].type, 'number', k);
    assert.equal(props[k].exclusiveMinimum, 0, k);
  }
});

test('classifyChange: server.* restarts, others are pushed', () => {
  assert.equal(classifyChange((k) => k === 'milk' || k === 'milk.server.path'), 'restart');
  assert.equal(classifyChange((k) => k === 'milk' || k === 'milk.local.model'), 'push');
  assert.equal(classifyChange(() => false), 'none');
});

test('answerConfiguration answers section milk and sub-sections, null otherwise', () => {
  const s = { local: { model: 'm' } };
  assert.deepEqual(answerConfiguration([{ section: 'milk' }, { section: 'milk.local.model' }, { section: 'python' }, {}], s), [
    s,
    'm',
    null,
    null,
  ]);
});

test('settings that name programs and folders work in remote windows and never come from an untrusted workspace', () => {
  const props = pkg.contributes.configuration.properties;
  for (const k of MACHINE_PATH_KEYS) {
    // machine / machine-overridable values in the User settings are ignored in a remote
    // window (code-server included): window scope is read from User, Remote and workspace
    assert.equal(props[`milk.${k}`].scope, 'window', k);
    assert.ok(pkg.capabilities.untrustedWorkspaces.restrictedConfigurations.includes(`milk.${k}`), `${k} restricted`);
  }
  assert.equal(pkg.capabilities.untrustedWorkspaces.supported, 'limited');
});

test('server messages name the VS Code settings', () => {
  assert.equal(
    vscodeSettingNames('claude.path = "/x" does not exist; set `claude.path`, local.baseUrl or storageDir (milk.local.model stays)'),
    'milk.claude.path = "/x" does not exist; set `milk.claude.path`, milk.local.baseUrl or milk.storageDir (milk.local.model stays)',
  );
  assert.equal(vscodeSettingNames('see https://x/local.model and a.local.baseUrl'), 'see https://x/local.model and a.local.baseUrl');
  // every name it produces is a declared setting
  for (const k of SERVER_SETTING_KEYS) {
    const out = vscodeSettingNames(`set ${k}`);
    if (out !== `set ${k}`) assert.ok(pkg.contributes.configuration.properties[out.slice(4)], out);
  }
});

test('the palette category is "milk" everywhere; the icon exists and is a PNG', () => {
  for (const c of pkg.contributes.commands) assert.equal(c.category, 'milk', c.command);
  const icon = fs.readFileSync(path.join(__dirname, '..', pkg.icon));
  assert.equal(icon.subarray(1, 4).toString(), 'PNG');
  assert.ok(icon.readUInt32BE(16) >= 128 && icon.readUInt32BE(20) >= 128, 'at least 128x128');
});


test('every command the extension contributes is kept from the server\'s executeCommandProvider', () => {
  // a server command of the same name would be registered twice: the extension then fails to
  // start ("command 'milk.advise' already exists")
  const source = require('node:fs').readFileSync(require('node:path').join(__dirname, '..', 'src', 'languageClient.ts'), 'utf8');
  const kept = new Set([...source.split('EXTENSION_COMMANDS = new Set([')[1].split(']);')[0].matchAll(/'([^']+)'/g)].map((m) => m[1]));
  for (const c of pkg.contributes.commands) assert.ok(kept.has(c.command), `${c.command} in EXTENSION_COMMANDS`);
});

test('local.strategy is offered with the server\'s values and default', () => {
  const props = require('../package.json').contributes.configuration.properties;
  assert.equal(props['milk.local.strategy'].default, 'auto');
  assert.deepEqual(props['milk.local.strategy'].enum, ['auto', 'guided', 'agent']);
});
