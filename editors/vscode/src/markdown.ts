// Safe Markdown for model output: markdown-it with raw HTML off (tags are shown as text),
// links restricted to http(s)/mailto, and images not rendered (no remote loads, and the
// webview's CSP would block them anyway). No `vscode` import, no DOM: returns an HTML string
// whose only tags are the ones markdown-it itself emits.

import MarkdownIt from 'markdown-it';

const SAFE_LINK = /^(https?:|mailto:)/i;

let md: MarkdownIt | undefined;

function renderer(): MarkdownIt {
  if (md) return md;
  md = new MarkdownIt({ html: false, linkify: true, typographer: false, breaks: false });
  md.disable(['image']);
  md.validateLink = (url: string) => SAFE_LINK.test(url.trim());
  md.normalizeLinkText = (s: string) => s;
  const defaultLinkOpen =
    md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
  md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    const token = tokens[idx];
    token.attrSet('rel', 'noopener noreferrer');
    token.attrSet('title', token.attrGet('href') ?? '');
    return defaultLinkOpen(tokens, idx, options, env, self);
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
