// The "Sources (checked by milk):" block a local answer milk verified ends with (and the
// "Proposed, not in the workspace yet:" block after it): found in the answer's text, so a
// reloaded chat (whose history has only the text) shows it as the live one does, and rendered
// in place as file links the chat opens at the cited lines. The `citations` update only adds
// each quote as its link's tooltip. No `vscode` import, no DOM: HTML strings, as markdown.ts.

import type { AgentName, Citation } from './methods';
import { escapeHtml, renderMarkdown } from './markdown';

export const SOURCES_HEADING = 'Sources (checked by milk):';
export const PROPOSED_HEADING = 'Proposed, not in the workspace yet:';

/** A cited place: a path relative to the chat's folder (POSIX), its 1-based lines. */
export interface SourceRef {
  path: string;
  line: number;
  endLine?: number;
  /** the line as written after `- ` (what the link shows) */
  text: string;
}

export interface SourcesBlock {
  /** the answer before the block */
  body: string;
  /** the Sources lines: a cited place, or (a string) a line that is not one, kept as text */
  sources: (SourceRef | string)[];
  /** the paths of the Proposed block */
  proposed: string[];
}

/** `path:line` or `path:line-endLine`: the path is all before the last `:digits(-digits)`. */
const SOURCE_LINE = /^(.+):(\d+)(?:-(\d+))?$/;

/**
 * A Sources line (after `- `) as a place inside the folder; undefined for anything else (an
 * absolute or Windows path, one that climbs out with `..`, lines out of order): such a line is
 * left as text, never a link that would open a file outside the chat's folder.
 */
export function parseSourceLine(item: string): SourceRef | undefined {
  const text = item.trim();
  const m = SOURCE_LINE.exec(text);
  if (!m) return undefined;
  const path = m[1];
  const line = Number(m[2]);
  const endLine = m[3] === undefined ? undefined : Number(m[3]);
  if (line < 1 || (endLine !== undefined && endLine < line)) return undefined;
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path) || path.includes('\\')) return undefined;
  if (path.split('/').some((seg) => seg === '..')) return undefined;
  return { path, line, endLine, text };
}

/**
 * The block at the end of `text`: its heading on a line of its own, first in the text or after
 * a blank line, then only `- ` lines (and the Proposed heading with its own) to the end.
 * Undefined when the text does not end so (the heading quoted mid-answer is text).
 */
export function splitSources(text: string): SourcesBlock | undefined {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
  let heading = lines.length - 1;
  while (heading >= 0 && lines[heading].trim() !== SOURCES_HEADING) heading--;
  if (heading < 0 || (heading > 0 && lines[heading - 1].trim() !== '')) return undefined;
  const block: SourcesBlock = { body: lines.slice(0, heading).join('\n').replace(/\s+$/, ''), sources: [], proposed: [] };
  let inProposed = false;
  for (const line of lines.slice(heading + 1)) {
    if (!line.trim()) continue;
    if (line.trim() === PROPOSED_HEADING && !inProposed) {
      inProposed = true;
    } else if (line.startsWith('- ')) {
      const item = line.slice(2);
      if (inProposed) block.proposed.push(item.trim());
      else block.sources.push(parseSourceLine(item) ?? item.trim());
    } else {
      return undefined;
    }
  }
  return block;
}

/** How the live `citations` update's entries are matched to the lines of the text. */
function placeKey(path: string, line: number, endLine?: number): string {
  return `${path}:${line}-${endLine ?? line}`;
}

function sourceItem(s: SourceRef | string, quotes: Map<string, string>): string {
  if (typeof s === 'string') return `<li class="source-text">${escapeHtml(s)}</li>`;
  const quote = quotes.get(placeKey(s.path, s.line, s.endLine));
  const attrs = [
    'class="file-link source-link"',
    `data-path="${escapeHtml(s.path)}"`,
    `data-line="${s.line}"`,
    // always a range: the click selects the cited lines (a plain file name only moves the caret)
    `data-end-line="${s.endLine ?? s.line}"`,
    `title="${escapeHtml(quote ?? `Open ${s.text}`)}"`,
  ];
  return `<li><a ${attrs.join(' ')}>${escapeHtml(s.text)}</a></li>`;
}

/** The block as HTML: the Sources lines as file links (the quote as tooltip), Proposed marked. */
export function renderSources(block: SourcesBlock, citations: readonly Citation[] = []): string {
  const quotes = new Map(citations.map((c) => [placeKey(c.path, c.line, c.endLine), c.quote]));
  let html = `<div class="sources"><div class="sources-title">${escapeHtml(SOURCES_HEADING)}</div>`;
  if (block.sources.length) html += `<ul class="sources-list">${block.sources.map((s) => sourceItem(s, quotes)).join('')}</ul>`;
  if (block.proposed.length) {
    html += `<div class="sources-title proposed-title">${escapeHtml(PROPOSED_HEADING)}</div><ul class="sources-list proposed-list">`;
    for (const p of block.proposed) {
      html += `<li class="source-proposed" title="milk proposes this file; it does not exist yet"><span class="source-path">${escapeHtml(p)}</span> <span class="source-note">not in the workspace yet</span></li>`;
    }
    html += '</ul>';
  }
  return `${html}</div>`;
}

/**
 * An answer's text as HTML: Markdown, and for a local answer that ends with the Sources block,
 * the block as links (Claude's answers are milk's to check only when local: left as written).
 */
export function renderAnswer(text: string, agent: AgentName, citations?: readonly Citation[]): string {
  const block = agent === 'local' ? splitSources(text) : undefined;
  if (!block) return renderMarkdown(text);
  return (block.body ? renderMarkdown(block.body) : '') + renderSources(block, citations);
}
