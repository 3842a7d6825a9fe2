// Line diffs of the permission question: counts and the unified preview.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { diffLines, countChanges, unifiedDiff, splitLines } = require('../out/lib/diff.js');

test('counts lines added and removed', () => {
  assert.deepEqual(countChanges('a\nb\nc\n', 'a\nB\nc\nd\n'), { added: 2, removed: 1 });
  assert.deepEqual(countChanges(undefined, 'x\ny'), { added: 2, removed: 0 });
  assert.deepEqual(countChanges('x\ny\n', null), { added: 0, removed: 2 });
  assert.deepEqual(countChanges('same\n', 'same\n'), { added: 0, removed: 0 });
});

test('the ops rebuild both sides (random edits)', () => {
  let seed = 7;
  const rnd = (n) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
  for (let i = 0; i < 200; i++) {
    const a = Array.from({ length: rnd(30) }, () => `l${rnd(6)}`);
    const b = a.slice();
    for (let j = rnd(6); j > 0; j--) {
      const at = rnd(b.length + 1);
      if (rnd(2)) b.splice(at, 1);
      else b.splice(at, 0, `n${rnd(6)}`);
    }
    const ops = diffLines(a, b);
    assert.deepEqual(ops.filter((o) => o.kind !== 'add').map((o) => o.line), a);
    assert.deepEqual(ops.filter((o) => o.kind !== 'del').map((o) => o.line), b);
  }
});

test('a unified diff with context and hunk headers', () => {
  const before = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join('\n');
  const after = before.replace('line 5', 'LINE 5').replace('line 18', 'line 18\nextra');
  const d = unifiedDiff(before, after, 2);
  assert.equal(
    d,
    ['@@ -3,5 +3,5 @@', ' line 3', ' line 4', '-line 5', '+LINE 5', ' line 6', ' line 7',
      '@@ -17,4 +17,5 @@', ' line 17', ' line 18', '+extra', ' line 19', ' line 20'].join('\n'),
  );
  const long = unifiedDiff('', Array.from({ length: 100 }, (_, i) => `n${i}`).join('\n'), 2, 10);
  assert.equal(long.split('\n').length, 11);
  assert.match(long, /… 91 more diff lines \(Review shows the whole change\)$/);
  assert.deepEqual(splitLines('a\r\nb\n'), ['a', 'b']);
});
