// Issue 31 item 5: the chat input's keys (Up / Down through the messages sent, Escape cancels
// the running turn) as the pure logic the webview runs (src/inputHistory.ts).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { InputHistory, inputKeyAction, HISTORY_MAX } = require('../out/lib/inputHistory.js');

const box = (value, caret = value.length, end = caret) => ({ value, selectionStart: caret, selectionEnd: end });
const idle = { running: false, browsing: false };

test('Up recalls the last message sent, further back on repeated Up; Down goes forward, then back to the draft', () => {
  const h = new InputHistory();
  assert.equal(h.older(''), undefined, 'nothing sent yet');
  h.add('first');
  h.add('second');
  h.add('third');
  assert.equal(h.older(''), 'third');
  assert.equal(h.browsing, true);
  assert.equal(h.older('third'), 'second');
  assert.equal(h.older('second'), 'first');
  assert.equal(h.older('first'), undefined, 'the oldest: Up stays');
  assert.equal(h.newer(), 'second');
  assert.equal(h.newer(), 'third');
  assert.equal(h.newer(), '', 'past the newest: the (empty) draft');
  assert.equal(h.browsing, false);
  assert.equal(h.newer(), undefined, 'not browsing: Down does nothing');
});

test('a typed draft comes back after browsing; sending ends browsing; no duplicate in a row; bounded', () => {
  const h = new InputHistory(['a', 'b']);
  assert.equal(h.older('half typed'), 'b');
  assert.equal(h.newer(), 'half typed');
  h.older('x');
  h.add('b'); // sent again: not twice in a row
  assert.deepEqual(h.entries, ['a', 'b']);
  assert.equal(h.browsing, false);
  h.add('   ');
  assert.deepEqual(h.entries, ['a', 'b'], 'blank messages are not kept');
  const many = new InputHistory();
  for (let i = 0; i < HISTORY_MAX + 5; i++) many.add(`m${i}`);
  assert.equal(many.entries.length, HISTORY_MAX);
  assert.equal(many.entries[0], 'm5');
  // the saved history, read back
  assert.deepEqual(new InputHistory(['x', '', 'y']).entries, ['x', 'y']);
});

test('Up recalls only from an empty input or the first line; Down only while browsing, from the last line', () => {
  assert.equal(inputKeyAction({ key: 'ArrowUp' }, box(''), idle), 'older');
  assert.equal(inputKeyAction({ key: 'ArrowUp' }, box('one line', 3), idle), 'older', 'caret on the first line');
  assert.equal(inputKeyAction({ key: 'ArrowUp' }, box('line 1\nline 2'), idle), undefined, 'caret on line 2: the caret moves');
  assert.equal(inputKeyAction({ key: 'ArrowUp' }, box('line 1\nline 2', 2), idle), 'older');
  assert.equal(inputKeyAction({ key: 'ArrowUp' }, box('abc', 0, 2), idle), undefined, 'a selection');
  assert.equal(inputKeyAction({ key: 'ArrowUp', shiftKey: true }, box(''), idle), undefined);
  assert.equal(inputKeyAction({ key: 'ArrowDown' }, box('x'), idle), undefined, 'not browsing');
  assert.equal(inputKeyAction({ key: 'ArrowDown' }, box('x'), { running: false, browsing: true }), 'newer');
  assert.equal(inputKeyAction({ key: 'ArrowDown' }, box('a\nb', 0), { running: false, browsing: true }), undefined, 'not on the last line');
});

test('Escape cancels the running turn (the Cancel button\'s message), and only then; Enter sends', () => {
  assert.equal(inputKeyAction({ key: 'Escape' }, box(''), { running: true, browsing: false }), 'cancel');
  assert.equal(inputKeyAction({ key: 'Escape' }, box('typing'), { running: true, browsing: false }), 'cancel');
  assert.equal(inputKeyAction({ key: 'Escape' }, box(''), idle), undefined, 'nothing runs');
  assert.equal(inputKeyAction({ key: 'Escape', ctrlKey: true }, box(''), { running: true, browsing: false }), undefined);
  assert.equal(inputKeyAction({ key: 'Enter' }, box('hi'), idle), 'send');
  assert.equal(inputKeyAction({ key: 'Enter', shiftKey: true }, box('hi'), idle), undefined, 'a new line');
  assert.equal(inputKeyAction({ key: 'Enter', isComposing: true }, box('hi'), idle), undefined, 'an IME composing');
  assert.equal(inputKeyAction({ key: 'a' }, box(''), idle), undefined);
});

test('the webview wires the keys: Escape sends the Cancel button\'s message, Up/Down show the recalled text', () => {
  const src = require('node:fs').readFileSync(require('node:path').join(__dirname, '..', 'webview', 'main.ts'), 'utf8');
  const cancelButton = /cancelBtn\.addEventListener\('click', \(\) => send\((\{ type: 'cancel' \})\)\)/.exec(src);
  assert.ok(cancelButton, 'the Cancel button');
  const onKey = src.slice(src.indexOf("input.addEventListener('keydown'"));
  assert.match(onKey, /inputKeyAction\(e, input, \{ running: isRunning\(state\), browsing: sent\.browsing \}\)/);
  assert.ok(onKey.includes(`case 'cancel':`) && onKey.includes(`send(${cancelButton[1]})`), 'Escape sends the same cancel');
  assert.match(onKey, /sent\.older\(input\.value\)/);
  assert.match(onKey, /sent\.newer\(\)/);
});
