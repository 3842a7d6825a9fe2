// Line diffs for the permission question of an edit: how many lines a change adds and
// removes, and a short unified-diff preview (the whole change opens in VS Code's diff editor).
// Myers' O(ND) algorithm over lines. No `vscode` import.

export type DiffOp = { kind: 'same' | 'add' | 'del'; line: string };

/** Split into lines; a final newline does not make an extra empty line. */
export function splitLines(text: string | null | undefined): string[] {
  if (!text) return [];
  const lines = text.split(/\r?\n/);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** When the edit graph is this far from the diagonal, give up on a minimal diff. */
const MAX_EDIT_DISTANCE = 4000;

/** The line operations turning `a` into `b`. */
export function diffLines(a: string[], b: string[]): DiffOp[] {
  // common prefix and suffix first: most edits touch a few lines of a long file
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const ops: DiffOp[] = a.slice(0, start).map((line) => ({ kind: 'same', line }));
  ops.push(...middle(a.slice(start, endA), b.slice(start, endB)));
  for (let i = endA; i < a.length; i++) ops.push({ kind: 'same', line: a[i] });
  return ops;
}

function middle(a: string[], b: string[]): DiffOp[] {
  const n = a.length;
  const m = b.length;
  if (n === 0) return b.map((line) => ({ kind: 'add', line }));
  if (m === 0) return a.map((line) => ({ kind: 'del', line }));
  const max = n + m;
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= Math.min(max, MAX_EDIT_DISTANCE); d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
    if (found >= 0) break;
  }
  if (found < 0) {
    // too different for a minimal diff: everything removed, then everything added
    return [...a.map((line) => ({ kind: 'del' as const, line })), ...b.map((line) => ({ kind: 'add' as const, line }))];
  }
  const ops: DiffOp[] = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const vd = trace[d];
    const k = x - y;
    const prevK = k === -d || (k !== d && vd[offset + k - 1] < vd[offset + k + 1]) ? k + 1 : k - 1;
    const prevX = vd[offset + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      ops.push({ kind: 'same', line: a[x] });
    }
    if (x === prevX) {
      y--;
      ops.push({ kind: 'add', line: b[y] });
    } else {
      x--;
      ops.push({ kind: 'del', line: a[x] });
    }
  }
  while (x > 0 && y > 0) {
    x--;
    y--;
    ops.push({ kind: 'same', line: a[x] });
  }
  return ops.reverse();
}

export interface LineCounts {
  added: number;
  removed: number;
}

export function countChanges(before: string | null | undefined, after: string | null | undefined): LineCounts {
  let added = 0;
  let removed = 0;
  for (const op of diffLines(splitLines(before), splitLines(after))) {
    if (op.kind === 'add') added++;
    else if (op.kind === 'del') removed++;
  }
  return { added, removed };
}

/**
 * A unified diff of `before` → `after` (hunks with `context` lines around each change),
 * at most `maxLines` lines; the rest is summed up in a last line.
 */
export function unifiedDiff(before: string | null | undefined, after: string | null | undefined, context = 2, maxLines = 40): string {
  const a = splitLines(before);
  const b = splitLines(after);
  const ops = diffLines(a, b);
  const changed = ops.map((op) => op.kind !== 'same');
  const out: string[] = [];
  let i = 0;
  let lineA = 1;
  let lineB = 1;
  // positions in a and b of each op
  const posA: number[] = [];
  const posB: number[] = [];
  for (const op of ops) {
    posA.push(lineA);
    posB.push(lineB);
    if (op.kind !== 'add') lineA++;
    if (op.kind !== 'del') lineB++;
  }
  while (i < ops.length) {
    if (!changed[i]) {
      i++;
      continue;
    }
    const start = Math.max(0, i - context);
    let end = i;
    // one hunk while the next change is at most 2*context unchanged lines away
    for (;;) {
      while (end < ops.length && changed[end]) end++;
      let next = end;
      while (next < ops.length && !changed[next]) next++;
      if (next < ops.length && next - end <= 2 * context) end = next;
      else break;
    }
    const stop = Math.min(ops.length, end + context);
    const countA = ops.slice(start, stop).filter((op) => op.kind !== 'add').length;
    const countB = ops.slice(start, stop).filter((op) => op.kind !== 'del').length;
    out.push(`@@ -${countA ? posA[start] : posA[start] - 1},${countA} +${countB ? posB[start] : posB[start] - 1},${countB} @@`);
    for (let j = start; j < stop; j++) {
      const op = ops[j];
      out.push(`${op.kind === 'add' ? '+' : op.kind === 'del' ? '-' : ' '}${op.line}`);
    }
    i = stop;
  }
  if (out.length > maxLines) {
    const rest = out.length - maxLines;
    return [...out.slice(0, maxLines), `… ${rest} more diff line${rest === 1 ? '' : 's'} (Review shows the whole change)`].join('\n');
  }
  return out.join('\n');
}
