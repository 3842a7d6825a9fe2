// Safe Markdown: model output must never produce script, event handlers or unsafe links.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { renderMarkdown, escapeHtml, findFileRefs } = require('../out/lib/markdown.js');

const TAGS = new Set(['p', 'a', 'code', 'pre', 'em', 'strong', 's', 'ul', 'ol', 'li', 'blockquote', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'br', 'table', 'thead', 'tbody', 'tr', 'th', 'td']);
const ATTRS = new Set(['href', 'rel', 'title', 'class', 'start', 'style', 'data-path', 'data-line']);
/** Every tag in `html` is an allowed Markdown tag with allowed attributes and safe links. */
function assertSafe(html, what) {
  const tag = /<\/?([a-zA-Z][\w-]*)((?:\s+[\w-]+="[^"<>]*")*)\s*\/?>/g;
  const stripped = html.replace(tag, (all, name, attrs) => {
    assert.ok(TAGS.has(name.toLowerCase()), `${what}: tag <${name}> in ${html}`);
    for (const [, k, v] of attrs.matchAll(/([\w-]+)="([^"]*)"/g)) {
      assert.ok(ATTRS.has(k), `${what}: attribute ${k} in ${html}`);
      if (k === 'href') assert.match(v, /^(https?:|mailto:)/, `${what}: href ${v}`);
      if (k === 'style') assert.match(v, /^text-align:(left|right|center)$/, `${what}: style ${v}`);
      if (k === 'class') assert.match(v, /^(file-link|language-.*)$/, `${what}: class ${v}`);
    }
    return '';
  });
  assert.doesNotMatch(stripped, /</, `${what}: stray '<' in ${html}`);
}

test('renders ordinary Markdown', () => {
  const html = renderMarkdown('# Title\n\nSome **bold** and `code`.\n\n```py\nprint("hi")\n```\n\n- a\n- b');
  assert.match(html, /<h1>Title<\/h1>/);
  assert.match(html, /<strong>bold<\/strong>/);
  assert.match(html, /<code>code<\/code>/);
  assert.match(html, /<pre><code class="language-py"><span class="hljs-built_in">print<\/span>\(<span class="hljs-string">&quot;hi&quot;<\/span>\)/);
  assert.match(html, /<li>a<\/li>/);
});

test('raw HTML is shown as text, never as tags', () => {
  const attacks = [
    '<script>alert(1)</script>',
    '<img src=x onerror="alert(1)">',
    '<iframe src="https://evil.example"></iframe>',
    'inline <b onmouseover=alert(1)>x</b>',
    '<svg><script>alert(1)</script></svg>',
    '<a href="javascript:alert(1)">x</a>',
    '<style>body{display:none}</style>',
  ];
  for (const a of attacks) {
    const html = renderMarkdown(a);
    assertSafe(html, a);
    assert.doesNotMatch(html, /<(script|img|iframe|svg|style|b[ >])/i, `${a} -> ${html}`);
    assert.match(html, /&lt;/, `escaped: ${html}`);
  }
});

test('links: only http(s) and mailto become links', () => {
  assert.match(renderMarkdown('[ok](https://example.com/a?b=1)'), /<a href="https:\/\/example.com\/a\?b=1" rel="noopener noreferrer"/);
  assert.match(renderMarkdown('<mailto:me@example.com>'), /href="mailto:me@example.com"/);
  for (const bad of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'vbscript:x', 'data:text/html;base64,PHNjcmlwdD4=', 'file:///etc/passwd', 'command:workbench.action.quit']) {
    const html = renderMarkdown(`[x](${bad})`);
    assert.doesNotMatch(html, /<a /, `${bad} -> ${html}`);
  }
});

test('images are not rendered (no remote loads)', () => {
  const html = renderMarkdown('![pixel](https://tracker.example/p.png)');
  assert.doesNotMatch(html, /<img/);
});

test('attribute injection through a link title or text is escaped', () => {
  const html = renderMarkdown('[x" onclick="alert(1)](https://example.com/"onmouseover="alert(1))\n\n<a href=x onclick=alert(1)>t</a>');
  assertSafe(html, 'attribute injection');
  assert.doesNotMatch(html, /\sonclick="/);
  assert.doesNotMatch(html, /\sonmouseover="/);
});

test('fuzz: odd mixes stay within the allowed tags', () => {
  const pieces = ['<', '>', '"', "'", '`', '[', ']', '(', ')', 'javascript:', 'https://a.b/', '<script>', '</p>', '&', '*', '_', '\n', ' ', 'onerror=', '![', '<img ', '```', '|', '-'];
  let seed = 42;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  for (let i = 0; i < 300; i++) {
    let s = '';
    for (let j = 0; j < 30; j++) s += pieces[Math.floor(rnd() * pieces.length)];
    assertSafe(renderMarkdown(s), JSON.stringify(s));
  }
});

test('escapeHtml', () => {
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
});

test('a bare file name is a file link, never http://main.py', () => {
  const html = renderMarkdown('Run main.py, then edit src/app.py:12 and `tests/test_app.py`.');
  assert.doesNotMatch(html, /href="http/);
  assert.match(html, /<a class="file-link" data-path="main.py" title="Open main.py">main.py<\/a>/);
  assert.match(html, /data-path="src\/app.py" data-line="12"/);
  assert.match(html, /<a class="file-link" data-path="tests\/test_app.py"[^>]*><code>tests\/test_app.py<\/code><\/a>/);
  assertSafe(html, 'file links');
  // not file names: dotted identifiers, versions, host names without a scheme, inside links
  for (const t of ['os.path.join', 'v1.2.3', 'example.com', 'e.g. this']) assert.doesNotMatch(renderMarkdown(t), /<a /, t);
  assert.doesNotMatch(renderMarkdown('[the docs](https://example.com/app.py)'), /file-link/);
  assert.match(renderMarkdown('see https://example.com/x'), /<a href="https:\/\/example.com\/x"/);
});

test('identifiers stay literal: no emphasis from underscores', () => {
  const html = renderMarkdown('if __name__ == "__main__": call __init__, end_turn and read_file; _private_ too. **bold** and *it* still work.');
  assert.doesNotMatch(html, /<strong>name<\/strong>|<strong>init<\/strong>|<em>private<\/em>/);
  assert.match(html, /__name__ == &quot;__main__&quot;: call __init__, end_turn and read_file; _private_ too/);
  assert.match(html, /<strong>bold<\/strong> and <em>it<\/em>/);
});

test('file names with odd characters are escaped in the attribute', () => {
  const refs = findFileRefs('a"b.py x.py');
  assert.deepEqual(refs.map((r) => r.path), ['b.py', 'x.py']);
  assertSafe(renderMarkdown('<x.py> "y.py" \'z.py\''), 'quotes around names');
});

test('fenced code of a known language is highlighted, and stays escaped text', () => {
  const html = renderMarkdown('```python\ndef f(x):\n    return "<b>" + x  # note\n```');
  assert.match(html, /<span class="hljs-keyword">def<\/span>/);
  assert.match(html, /<span class="hljs-comment"># note<\/span>/);
  assert.match(html, /&lt;b&gt;/);
  assert.doesNotMatch(html, /<b>/);
  const plain = renderMarkdown('```nosuchlang\n<i>x</i>\n```');
  assert.doesNotMatch(plain, /hljs/);
  assert.match(plain, /&lt;i&gt;x&lt;\/i&gt;/);
});
