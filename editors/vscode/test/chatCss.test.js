// Issue 31 item 7: code in the chat is coloured with theme colours that differ from the text
// colour. VS Code's symbolIcon.keywordForeground (and .string/.number/... ) default to the
// foreground in Dark+ and Light+, so keywords looked like plain text.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const css = fs.readFileSync(path.join(__dirname, '..', 'media', 'chat.css'), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');

/** Colours whose default in VS Code's Dark+ and Light+ is the foreground (src/vs/editor/contrib/symbolIcons). */
const FOREGROUND_DEFAULT = new Set([
  '--vscode-foreground',
  '--vscode-editor-foreground',
  ...['array', 'boolean', 'color', 'constant', 'file', 'folder', 'key', 'keyword', 'module', 'namespace', 'null', 'number', 'object',
    'operator', 'package', 'property', 'reference', 'snippet', 'string', 'struct', 'text', 'typeParameter', 'unit'].map((k) => `--vscode-symbolIcon-${k}Foreground`),
]);
/** Colours with a value of their own in Dark+ and Light+ (the defaults in VS Code's colour registry). */
const THEMED = {
  '--vscode-debugTokenExpression-boolean': ['#4e94ce', '#0000ff'],
  '--vscode-debugTokenExpression-name': ['#c586c0', '#9b46b0'],
  '--vscode-debugTokenExpression-string': ['#ce9178', '#a31515'],
  '--vscode-debugTokenExpression-number': ['#b5cea8', '#098658'],
  '--vscode-debugTokenExpression-error': ['#f48771', '#e51400'],
  '--vscode-symbolIcon-functionForeground': ['#b180d7', '#652d90'],
  '--vscode-symbolIcon-classForeground': ['#ee9d28', '#d67e00'],
  '--vscode-symbolIcon-variableForeground': ['#75beff', '#007acc'],
};

/** The colour variable of the rule whose selector list has `cls`. */
function colourOf(cls) {
  for (const m of css.matchAll(/([^{}]+)\{([^}]*)\}/g)) {
    const selectors = m[1].split(',').map((s) => s.trim());
    if (!selectors.includes(cls)) continue;
    const colour = /(?:^|;)\s*color:\s*var\((--[\w-]+)(?:,\s*(#[0-9a-fA-F]{3,8}))?\)/.exec(m[2]);
    if (colour) return { variable: colour[1], fallback: colour[2] };
  }
  return undefined;
}

test('keywords, strings, numbers and functions have a colour of their own in Dark+ and Light+ (with a fallback)', () => {
  for (const cls of ['.hljs-keyword', '.hljs-literal', '.hljs-built_in', '.hljs-string', '.hljs-number', '.hljs-title.function_', '.hljs-title.class_']) {
    const c = colourOf(cls);
    assert.ok(c, `${cls} is coloured`);
    assert.ok(!FOREGROUND_DEFAULT.has(c.variable), `${cls} uses ${c.variable}, the text colour in both themes`);
    assert.ok(c.variable in THEMED, `${cls}: ${c.variable} is a colour VS Code defines in Dark+ and Light+`);
    assert.ok(c.fallback, `${cls} has a fallback colour`);
  }
  assert.notEqual(colourOf('.hljs-keyword').variable, colourOf('.hljs-string').variable);
});

test('no highlight.js class is mapped to a colour that is the foreground in both themes', () => {
  for (const m of css.matchAll(/([^{}]*\.hljs-[^{}]*)\{([^}]*)\}/g)) {
    for (const v of m[2].matchAll(/var\((--[\w-]+)/g)) {
      // comments are dimmed (descriptionForeground is the foreground at 70%) and italic
      if (v[1] === '--vscode-descriptionForeground') continue;
      assert.ok(!FOREGROUND_DEFAULT.has(v[1]), `${m[1].trim()} uses ${v[1]}`);
    }
  }
});
