// File URIs as people read them: relative to the workspace folder when inside it. No `vscode`
// import (used by the webview too).

/** `file:///w/src/a.py` → `/w/src/a.py`; anything else unchanged. */
export function uriToPath(uri: string): string {
  if (!uri.startsWith('file://')) return uri;
  let p = uri.slice('file://'.length);
  // file://host/path is not ours to shorten; only the empty authority
  if (!p.startsWith('/')) return uri;
  try {
    p = decodeURIComponent(p);
  } catch {
    /* keep it encoded */
  }
  // file:///c%3A/x on Windows
  if (/^\/[A-Za-z]:\//.test(p)) p = p.slice(1);
  return p;
}

/** The path relative to the workspace folder (a URI too) when the file is inside it. */
export function displayPath(uri: string, workspaceFolder?: string): string {
  const p = uriToPath(uri);
  if (workspaceFolder) {
    const root = uriToPath(workspaceFolder).replace(/\/+$/, '');
    if (root && p.startsWith(`${root}/`)) return p.slice(root.length + 1);
  }
  return p;
}

export function baseName(uri: string): string {
  const p = uriToPath(uri);
  return p.slice(p.lastIndexOf('/') + 1) || p;
}
