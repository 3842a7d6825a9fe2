// Safe, code-aware Markdown for model output: markdown-it with raw HTML off (tags are shown
// as text), links restricted to http(s)/mailto, images not rendered (no remote loads, and the
// webview's CSP would block them anyway). For code: only links written with a scheme become
// links (a bare `main.py` is a file, not http://main.py), underscores are literal (`__init__`
// stays `__init__`, never bold), and file names (`src/app.py`, `main.py:12`) become file links
// the chat opens in the editor. Fenced code of a known language is highlighted (highlight.js).
// No `vscode` import, no DOM: returns an HTML string whose only tags are the ones markdown-it
// emits, plus `<a class="file-link" data-path data-line>` and highlight.js's `<span class>`.

import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import ini from 'highlight.js/lib/languages/ini';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import lua from 'highlight.js/lib/languages/lua';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import MarkdownIt from 'markdown-it';

// derived from the instance types: the same under node16 (CJS types) and bundler (ESM types)
type Token = ReturnType<MarkdownIt['parse']>[number];
type StateCore = Parameters<Parameters<MarkdownIt['core']['ruler']['push']>[1]>[0];
type StateInline = Parameters<Parameters<MarkdownIt['inline']['ruler']['before']>[2]>[0];

const SAFE_LINK = /^(https?:|mailto:)/i;

/** Extensions that make a word a file name (without a slash in it, nothing else does). */
const FILE_EXTENSIONS = [
  'py', 'pyi', 'ipynb', 'ts', 'tsx', 'js', 'jsx', 'mjs', 'cjs', 'json', 'jsonc', 'md', 'rst', 'txt', 'toml', 'yaml', 'yml',
  'ini', 'cfg', 'conf', 'lock', 'rs', 'go', 'c', 'h', 'cc', 'cpp', 'hpp', 'cs', 'java', 'kt', 'kts', 'scala', 'swift',
  'rb', 'php', 'pl', 'lua', 'vim', 'sh', 'bash', 'zsh', 'fish', 'ps1', 'html', 'htm', 'css', 'scss', 'less', 'vue',
  'svelte', 'sql', 'xml', 'gradle', 'dart', 'ex', 'exs', 'erl', 'hs', 'ml', 'r', 'jl', 'zig', 'nim', 'proto', 'graphql',
  'tf', 'env', 'csv', 'tsv', 'svg', 'dockerfile', 'mk', 'cmake',
];
const NAME = String.raw`[A-Za-z0-9_][A-Za-z0-9_.\-]*`;
/** `a/b/c.py`, `./x.ts`, `main.py`, optionally `:line` or `:line:col`. */
const FILE_RE = new RegExp(
  String.raw`(?<![\w./\-@:])((?:\.{1,2}/)?(?:${NAME}/)*${NAME}\.(?:${FILE_EXTENSIONS.join('|')}))(?::(\d+)(?::\d+)?)?(?![\w/\-]|\.\w)`,
  'g',
);

export interface FileRef {
  path: string;
  line?: number;
  start: number;
  end: number;
}

/** File names in a piece of text. */
export function findFileRefs(text: string): FileRef[] {
  const out: FileRef[] = [];
  FILE_RE.lastIndex = 0;
  for (let m = FILE_RE.exec(text); m; m = FILE_RE.exec(text)) {
    out.push({ path: m[1], line: m[2] ? Number(m[2]) : undefined, start: m.index, end: m.index + m[0].length });
  }
  return out;
}

/** The whole text is one file name (an inline code span like `src/app.py:3`). */
export function wholeFileRef(text: string): FileRef | undefined {
  const refs = findFileRefs(text.trim());
  return refs.length === 1 && refs[0].start === 0 && refs[0].end === text.trim().length ? refs[0] : undefined;
}

/** Underscores are text: `__init__`, `snake_case`, `_private` never start emphasis. */
function literalUnderscore(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x5f /* _ */) return false;
  let end = state.pos;
  while (end < state.posMax && state.src.charCodeAt(end) === 0x5f) end++;
  if (!silent) state.pending += state.src.slice(state.pos, end);
  state.pos = end;
  return true;
}

/** Text tokens (outside links) split around file names into `milk_file` tokens. */
function fileLinks(state: StateCore): void {
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) continue;
    const out: Token[] = [];
    let inLink = 0;
    for (const tok of block.children) {
      if (tok.type === 'link_open') inLink++;
      if (tok.type === 'link_close') inLink--;
      if (tok.type === 'code_inline' && !inLink) {
        const ref = wholeFileRef(tok.content);
        if (ref) tok.meta = { ...(tok.meta ?? {}), file: ref };
      }
      if (tok.type !== 'text' || inLink) {
        out.push(tok);
        continue;
      }
      const refs = findFileRefs(tok.content);
      if (!refs.length) {
        out.push(tok);
        continue;
      }
      let pos = 0;
      for (const ref of refs) {
        if (ref.start > pos) {
          const t = new state.Token('text', '', 0);
          t.content = tok.content.slice(pos, ref.start);
          out.push(t);
        }
        const f = new state.Token('milk_file', '', 0);
        f.content = tok.content.slice(ref.start, ref.end);
        f.meta = { file: ref };
        out.push(f);
        pos = ref.end;
      }
      if (pos < tok.content.length) {
        const t = new state.Token('text', '', 0);
        t.content = tok.content.slice(pos);
        out.push(t);
      }
    }
    block.children = out;
  }
}

function fileAttrs(ref: FileRef): string {
  return `class="file-link" data-path="${escapeHtml(ref.path)}"${ref.line ? ` data-line="${ref.line}"` : ''} title="Open ${escapeHtml(ref.path)}"`;
}

// the languages answers mostly show (highlight.js core with these only keeps the bundle small)
const LANGUAGES = { bash, c, cpp, css, diff, go, ini, java, javascript, json, lua, markdown, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, lang] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, lang);

/**
 * A fenced block's code, highlighted: highlight.js escapes the text and adds only
 * `<span class="hljs-…">`. A fence without a known language stays plain ('' = markdown-it's
 * own escaping).
 */
export function highlightCode(code: string, lang: string): string {
  const name = (lang || '').trim().split(/\s+/)[0].toLowerCase();
  if (!name || !hljs.getLanguage(name)) return '';
  try {
    return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  } catch {
    return '';
  }
}

let md: MarkdownIt | undefined;

function renderer(): MarkdownIt {
  if (md) return md;
  md = new MarkdownIt({ html: false, linkify: true, typographer: false, breaks: false, highlight: highlightCode });
  md.disable(['image']);
  // only links written with their scheme (https://…, mailto:…); `main.py` is not a host name
  md.linkify.set({ fuzzyLink: false, fuzzyEmail: false, fuzzyIP: false });
  md.validateLink = (url: string) => SAFE_LINK.test(url.trim());
  md.normalizeLinkText = (s: string) => s;
  md.inline.ruler.before('emphasis', 'milk_literal_underscore', literalUnderscore);
  md.core.ruler.push('milk_file_links', fileLinks);
  const defaultLinkOpen =
    md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
  md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    const token = tokens[idx];
    token.attrSet('rel', 'noopener noreferrer');
    token.attrSet('title', token.attrGet('href') ?? '');
    return defaultLinkOpen(tokens, idx, options, env, self);
  };
  md.renderer.rules.milk_file = (tokens, idx) => `<a ${fileAttrs(tokens[idx].meta.file as FileRef)}>${escapeHtml(tokens[idx].content)}</a>`;
  const defaultCode = md.renderer.rules.code_inline!;
  md.renderer.rules.code_inline = (tokens, idx, options, env, self) => {
    const ref = tokens[idx].meta?.file as FileRef | undefined;
    const html = defaultCode(tokens, idx, options, env, self);
    return ref ? `<a ${fileAttrs(ref)}>${html}</a>` : html;
  };
  return md;
}

export function renderMarkdown(text: string): string {
  return renderer().render(text ?? '');
}

/** Escape text for an HTML text node or a double-quoted attribute. */
export function escapeHtml(s: string): string {
  return String(s ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

export function isSafeLink(url: string): boolean {
  return SAFE_LINK.test(url.trim());
}
