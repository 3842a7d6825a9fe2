// What the code-server e2e scripts (drive.js, install.js, multiroot.js) share: their checks and
// the line ci.sh adds up, the browser, scripting the model fake, waiting for the workbench,
// finding the chat webview, and running a command from the palette.

const { chromium } = require('playwright-core');
const fs = require('node:fs');
const path = require('node:path');

/**
 * A script's checks. `check(name, ok, detail)` prints PASS or FAIL with the seconds since the
 * start; `finish(out, extra)` writes them (and `extra`) to `out`/result-file and prints the
 * `e2e: N passed, N failed` line ci.sh adds up, then exits (non-zero on a failure or none).
 */
function checker({ detailChars = 200, resultFile = 'result.json' } = {}) {
  const t0 = Date.now();
  const checks = [];
  const ms = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
  function check(name, ok, detail = '') {
    detail = String(detail).replace(/\s+/g, ' ').trim().slice(0, detailChars);
    checks.push({ name, ok: !!ok, detail });
    console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? ` (${detail})` : ''} [${ms()}]`);
    return !!ok;
  }
  function finish(out, extra = {}) {
    const passed = checks.filter((c) => c.ok).length;
    const failed = checks.length - passed;
    fs.writeFileSync(path.join(out, resultFile), JSON.stringify({ checks, ...extra }, null, 2));
    console.log(`e2e: ${passed} passed, ${failed} failed`);
    process.exit(failed === 0 && passed > 0 ? 0 : 1);
  }
  return { check, checks, ms, finish };
}

/** Headless Debian Chromium on the profile folder `profile`, as every script opens it. */
function openBrowser(profile) {
  return chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
}

async function script(baseUrl, list) {
  const r = await fetch(`${new URL(baseUrl).origin}/_script`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(list),
  });
  if (!r.ok) throw new Error(`script ${baseUrl}: ${r.status}`);
}

async function until(fn, what, timeout = 30000, every = 100) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    try {
      last = await fn();
      if (last) return last;
    } catch {
      /* frame navigated / detached: try again */
    }
    await new Promise((r) => setTimeout(r, every));
  }
  throw new Error(`timeout (${timeout} ms) waiting for ${what}`);
}

/** The chat webview's document: a nested iframe that has our #input. */
async function chatFrame(page) {
  return until(async () => {
    for (const f of page.frames()) {
      if (await f.$('#input').catch(() => null)) return f;
    }
    return undefined;
  }, 'the milk chat webview', 60000);
}

async function runCommand(page, title) {
  const input = page.locator('.quick-input-widget input');
  // F1 goes to whatever has the focus: a webview that just took it (the chat, after a click)
  // keeps the key, so a palette that did not open is asked for again from the workbench
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press('F1');
    const opened = await input.waitFor({ timeout: 5000 }).then(() => true, () => false);
    if (opened) break;
    if (attempt === 3) throw new Error('the command palette did not open (F1, three times)');
    await page.evaluate(() => document.activeElement && document.activeElement.blur());
    await page.locator('.part.editor').first().click({ position: { x: 5, y: 5 } }).catch(() => {});
  }
  await input.fill(`>${title}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor({ timeout: 15000 });
  await page.keyboard.press('Enter');
}

module.exports = { checker, openBrowser, script, until, chatFrame, runCommand };
