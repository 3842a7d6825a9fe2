// Issue 38: a local answer milk verified ends with "Sources (checked by milk):" (and maybe
// "Proposed, not in the workspace yet:"); the chat shows those lines in place as file links
// (live and reloaded alike: both have the text), the `citations` update adding each quote as
// its tooltip, never a second list.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { splitSources, parseSourceLine, renderSources, renderAnswer } = require('../out/lib/sources.js');
const { renderMarkdown } = require('../out/lib/markdown.js');
const chat = require('../out/lib/chatModel.js');

const ANSWER = [
  'greet() builds the message in `src/app.py` and prints it.',
  '',
  'Sources (checked by milk):',
  '- src/app.py:12',
  '- lib/util.js:3-9',
  '- docs/my notes.md:4',
  '- données/é.py:2-3',
  '- C:\\work\\app.py:7',
  '',
  'Proposed, not in the workspace yet:',
  '- docs/new_file.md',
  '',
].join('\n');

test('the Sources block: several paths, ranges, spaces and non-ASCII in paths, a Windows path left as text', () => {
  const block = splitSources(ANSWER);
  assert.ok(block);
  assert.equal(block.body, 'greet() builds the message in `src/app.py` and prints it.');
  assert.deepEqual(block.sources, [
    { path: 'src/app.py', line: 12, endLine: undefined, text: 'src/app.py:12' },
    { path: 'lib/util.js', line: 3, endLine: 9, text: 'lib/util.js:3-9' },
    { path: 'docs/my notes.md', line: 4, endLine: undefined, text: 'docs/my notes.md:4' },
    { path: 'données/é.py', line: 2, endLine: 3, text: 'données/é.py:2-3' },
    // not a place in the folder: a line of text, not a link
    'C:\\work\\app.py:7',
  ]);
  assert.deepEqual(block.proposed, ['docs/new_file.md']);
});

test('a source line: the path is all before the last :line(-end); anything else is not one', () => {
  assert.deepEqual(parseSourceLine('notes/a:b c.py:10-12'), { path: 'notes/a:b c.py', line: 10, endLine: 12, text: 'notes/a:b c.py:10-12' });
  assert.deepEqual(parseSourceLine('x.py:3:4'), { path: 'x.py:3', line: 4, endLine: undefined, text: 'x.py:3:4' });
  for (const bad of ['src/app.py', 'src/app.py:', 'src/app.py:0', 'src/app.py:9-3', '/etc/passwd:1', 'C:/w/a.py:2', 'c:\\w\\a.py:2', '../secret.py:1', 'a/../../b.py:1', ':3', 'a.py:x']) {
    assert.equal(parseSourceLine(bad), undefined, bad);
  }
});

test('only a block that ends the text is one: mid-answer, unshaped, or without its blank line it is text', () => {
  assert.equal(splitSources('No sources here.'), undefined);
  assert.equal(splitSources('Intro\n\nSources (checked by milk):\n- a.py:1\n\nThen more prose.'), undefined, 'prose after it');
  assert.equal(splitSources('Intro\nSources (checked by milk):\n- a.py:1'), undefined, 'no blank line before');
  assert.equal(splitSources('See Sources (checked by milk): - a.py:1'), undefined, 'not a line of its own');
  // an answer that is only the block (its text came after tool calls), CRLF line ends
  const only = splitSources('\r\n\r\nSources (checked by milk):\r\n- a.py:1\r\n');
  assert.equal(only.body, '');
  assert.deepEqual(only.sources, [{ path: 'a.py', line: 1, endLine: undefined, text: 'a.py:1' }]);
  // a Windows path:line in prose is no source: the answer renders as plain Markdown
  const prose = 'Build with C:\\tools\\make.py:3 today.\n\n- C:\\tools\\make.py:3';
  assert.equal(renderAnswer(prose, 'local'), renderMarkdown(prose));
  assert.doesNotMatch(renderAnswer(prose, 'local'), /source-link/);
});

test('rendered: the lines are file links with their range, proposed files marked as not existing, once', () => {
  const html = renderAnswer(ANSWER, 'local');
  assert.equal(html.match(/class="sources"/g).length, 1);
  assert.equal(html.match(/Sources \(checked by milk\):/g).length, 1, 'the heading once, not also as a paragraph');
  assert.match(html, /<code>src\/app.py<\/code>/, 'the answer above is Markdown as before');
  assert.match(html, /<a class="file-link source-link" data-path="src\/app.py" data-line="12" data-end-line="12" title="Open src\/app.py:12">src\/app.py:12<\/a>/);
  assert.match(html, /data-path="lib\/util.js" data-line="3" data-end-line="9"[^>]*>lib\/util.js:3-9<\/a>/);
  assert.match(html, /data-path="docs\/my notes.md" data-line="4"/);
  assert.match(html, /data-path="données\/é.py" data-line="2" data-end-line="3"/);
  assert.match(html, /<li class="source-text">C:\\work\\app.py:7<\/li>/);
  assert.doesNotMatch(html, /data-path="C:/);
  assert.match(html, /<li class="source-proposed"[^>]*><span class="source-path">docs\/new_file.md<\/span> <span class="source-note">not in the workspace yet<\/span><\/li>/);
  assert.doesNotMatch(html, /<a [^>]*new_file/, 'a proposed file is not a link');
});

test('rendered: the citations update gives each link its quote as tooltip, escaped; unmatched ones add nothing', () => {
  const citations = [
    { path: 'src/app.py', uri: 'file:///w/src/app.py', line: 12, endLine: 12, quote: 'def greet(name):\n    return f"<hi> {name}"' },
    { path: 'lib/util.js', uri: 'file:///w/lib/util.js', line: 3, endLine: 9, quote: "export const a = 'x';" },
    { path: 'elsewhere.py', uri: 'file:///w/elsewhere.py', line: 1, endLine: 1, quote: 'not in the text' },
  ];
  const html = renderAnswer(ANSWER, 'local', citations);
  assert.match(html, /data-path="src\/app.py"[^>]*title="def greet\(name\):\n    return f&quot;&lt;hi&gt; \{name\}&quot;"/);
  assert.match(html, /data-path="lib\/util.js"[^>]*title="export const a = &#39;x&#39;;"/);
  assert.doesNotMatch(html, /elsewhere|not in the text/, 'no second list from the update');
  assert.equal(html.match(/<li/g).length, 6);
  // a path with markup in it is text in the page
  const evil = renderSources(splitSources('\n\nSources (checked by milk):\n- <img src=x onerror=alert(1)>.py:1'));
  assert.doesNotMatch(evil, /<img/);
  assert.match(evil, /data-path="&lt;img src=x onerror=alert\(1\)&gt;.py"/);
});

test("a Sources block in Claude's answer is left as written", () => {
  assert.equal(renderAnswer(ANSWER, 'claude'), renderMarkdown(ANSWER));
  assert.doesNotMatch(renderAnswer(ANSWER, 'claude'), /source-link|class="sources"/);
});

test('the citations update: accepted, kept for the tooltips, no block of its own; live and reloaded render alike', () => {
  const st = chat.emptyState();
  const base = { sessionId: 'S1', turnId: 'T1' };
  chat.addUserMessage(st, 'what does greet do?');
  chat.applyUpdate(st, { ...base, seq: 1, kind: 'turn_started', agent: 'local', route: 'auto', reason: 'default' });
  for (const [i, delta] of [ANSWER.slice(0, 70), ANSWER.slice(70)].entries()) chat.applyUpdate(st, { ...base, seq: 2 + i, kind: 'text', agent: 'local', delta });
  const citations = [{ path: 'src/app.py', uri: 'file:///w/src/app.py', line: 12, endLine: 12, quote: 'def greet(name):' }];
  const turn = chat.applyUpdate(st, { ...base, seq: 4, kind: 'citations', agent: 'local', citations, proposed: [{ path: 'docs/new_file.md', uri: 'file:///w/docs/new_file.md' }] });
  assert.ok(turn, 'the update is taken');
  assert.deepEqual(turn.citations, citations);
  const kinds = () => turn.blocks.map((b) => b.kind);
  assert.deepEqual(kinds(), ['agent', 'text']);
  chat.applyUpdate(st, { ...base, seq: 5, kind: 'turn_ended', agent: 'local', stopReason: 'end_turn' });
  assert.equal(turn.status, 'ok');
  assert.equal(turn.gap, false);
  const live = turn.blocks[1];
  assert.match(renderAnswer(live.text, live.agent, turn.citations), /title="def greet\(name\):"/);

  // the reload has the text only: the same links, without the quotes
  const reloaded = chat.fromHistory({
    session: { sessionId: 'S1', workspaceFolder: 'file:///w', title: 't', state: 'local', activeAgent: 'local', createdAt: '', updatedAt: '', turnCount: 1 },
    bricks: {},
    turns: [
      { turnId: 'T1', role: 'user', agent: 'local', text: 'what does greet do?', status: 'ok', createdAt: '' },
      { turnId: 'T1', role: 'assistant', agent: 'local', text: ANSWER, status: 'ok', createdAt: '' },
    ],
  });
  const text = reloaded.turns[0].blocks.find((b) => b.kind === 'text');
  const links = (html) => [...html.matchAll(/<a class="file-link source-link"[^>]*data-line="(\d+)" data-end-line="(\d+)"[^>]*>([^<]*)<\/a>/g)].map((m) => m.slice(1).join('|'));
  assert.deepEqual(links(renderAnswer(text.text, text.agent, reloaded.turns[0].citations)), links(renderAnswer(live.text, live.agent, turn.citations)));
  assert.equal(links(renderAnswer(text.text, text.agent)).length, 4);
});

test('the webview renders answers with renderAnswer (the quotes re-render the text) and sends a link\'s range', () => {
  const src = fs.readFileSync(path.join(__dirname, '..', 'webview', 'main.ts'), 'utf8');
  assert.match(src, /node\.innerHTML = renderAnswer\(b\.text, b\.agent, turn\.citations\)/);
  assert.match(src, /const sig = `\$\{b\.text\.length\}\|\$\{turn\.citations\?\.length \?\? 0\}`/);
  assert.match(src, /send\(\{ type: 'openFile', path: a\.dataset\.path \?\? '', line, endLine \}\)/);
  assert.match(src, /a\.dataset\.endLine/);
  // the built page script has it (the bundle the view loads)
  assert.match(fs.readFileSync(path.join(__dirname, '..', 'dist', 'webview.js'), 'utf8'), /Sources \(checked by milk\):/);
  const tsconfig = fs.readFileSync(path.join(__dirname, '..', 'webview', 'tsconfig.json'), 'utf8');
  assert.match(tsconfig, /"\.\.\/src\/sources\.ts"/, 'typechecked with the webview');
});
