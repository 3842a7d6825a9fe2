// A multi-root window in code-server (issue 31): the chat shows the folder it works on, the
// user picks the other folder from the chat's folder button, a question about a file that only
// the second folder has is answered from it (its path resolved in that folder, not rejected as
// outside the workspace), and each folder keeps its own sessions.
//   URL=...?workspace=<file>.code-workspace OUT=... PROFILE=... OPENAI_URL=... node e2e/multiroot.js
const fs = require('node:fs');
const path = require('node:path');
const { checker, openBrowser, script, until, chatFrame, runCommand } = require('./workbench');

const { URL: WORKBENCH, OUT = '.', PROFILE, OPENAI_URL } = process.env;
const { check, ms, finish } = checker({ resultFile: 'multiroot.json' });

/** The folder button's text once it reads `want` (or what it read last). */
async function folderShown(chat, want) {
  let last = '';
  return until(async () => {
    last = await chat.$eval('#folder', (b) => (b.hidden ? '' : b.textContent.trim()));
    return last === want ? last : undefined;
  }, `the folder button to read ${want}`, 20000).catch(() => last);
}

/** Pick `name` in the chat's folder quick pick. */
async function pickFolder(page, name) {
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first();
  await row.waitFor({ timeout: 15000 });
  const rows = await page.locator('.quick-input-list .monaco-list-row').allInnerTexts();
  await row.click();
  return rows;
}

(async () => {
  fs.mkdirSync(OUT, { recursive: true });
  const ctx = await openBrowser(PROFILE);
  let page;
  try {
    page = ctx.pages()[0] || (await ctx.newPage());
    await page.goto(WORKBENCH, { waitUntil: 'domcontentloaded', timeout: 60000 });
    await page.waitForSelector('.monaco-workbench', { timeout: 60000 });
    const status = page.locator('.statusbar-item[id$="milk.status"]').first();
    await status.waitFor({ timeout: 60000 });
    await until(async () => /fake-model/.test(await status.innerText()), 'status bar "milk · fake-model"', 60000);
    console.log(`workbench loaded with two folders [${ms()}]`);

    await runCommand(page, 'milk: Open Chat');
    const chat = await chatFrame(page);
    await until(async () => /idle/.test(await chat.innerText('#state')), 'chat idle');
    const first = await folderShown(chat, 'alpha ▾');
    check('a multi-root chat shows the folder it works on (the first)', first === 'alpha ▾', first);

    // the folder button asks which folder, in a quick pick of the window's folders
    await chat.click('#folder');
    const rows = await pickFolder(page, 'beta');
    check('the folder button offers the window\'s folders', rows.some((r) => /alpha/.test(r) && /works on it now/.test(r)) && rows.some((r) => /beta/.test(r)), rows.join(' | '));
    const picked = await folderShown(chat, 'beta ▾');
    check('the chosen folder is shown', picked === 'beta ▾', picked);
    await page.screenshot({ path: path.join(OUT, 'multiroot-folder.png') });

    // a question about a file only beta has: its relative path resolves in beta
    await script(OPENAI_URL, [
      { tool_calls: [{ name: 'read_file', arguments: { path: 'orchid.txt' } }] },
      { text: 'orchid.txt sets the codename to ORCHID-7.', chunk_chars: 10 },
    ]);
    await chat.fill('#input', 'Welcher Codename steht in orchid.txt?');
    await chat.press('#input', 'Enter');
    const ended = await until(async () => {
      const s = await chat.getAttribute('.turn:last-of-type', 'data-status');
      return s && s !== 'running' ? s : undefined;
    }, 'the turn on beta to end', 60000).catch(() => 'running');
    const tool = await chat.$eval('.turn:last-of-type details.tool', (d) => ({ status: d.dataset.status, text: d.innerText })).catch(() => ({ status: 'none', text: '' }));
    check('a file of the second folder is read there, not rejected as outside the workspace',
      tool.status === 'completed' && !/not in the workspace|outside/i.test(tool.text), `${tool.status}: ${tool.text}`);
    const answer = await chat.innerText('.turn:last-of-type').catch(() => '');
    check('the answer from the second folder\'s file ends right', ended === 'ok' && /ORCHID-7/.test(answer), `${ended}: ${answer.slice(0, 160)}`);
    await page.screenshot({ path: path.join(OUT, 'multiroot-answer.png') });
    const betaSessions = await chat.$$eval('#sessions option', (o) => o.map((x) => x.textContent));

    // each folder has its own sessions: alpha has none, beta's comes back with its turn
    await runCommand(page, "milk: Choose the Chat's Folder");
    await pickFolder(page, 'alpha');
    const back = await folderShown(chat, 'alpha ▾');
    const emptied = await until(async () => (await chat.$$('.turn')).length === 0, 'alpha\'s empty chat', 15000).catch(() => false);
    const alphaSessions = await chat.$$eval('#sessions option', (o) => o.map((x) => x.textContent));
    check('the palette command moves the chat to the other folder, with that folder\'s sessions', back === 'alpha ▾' && emptied && !alphaSessions.some((o) => betaSessions.includes(o) && /codename/i.test(o)), `${back}; alpha: ${alphaSessions.join(' | ')}; beta: ${betaSessions.join(' | ')}`);
    await chat.click('#folder');
    await pickFolder(page, 'beta');
    const again = await until(async () => /ORCHID-7/.test(await chat.innerText('.turn:last-of-type').catch(() => '')), 'beta\'s session again', 20000).catch(() => false);
    check('back on the second folder its session and turn are shown again', again);
  } catch (e) {
    check('multi-root e2e ran to the end', false, String(e && e.stack ? e.stack.split('\n').slice(0, 3).join(' / ') : e));
    try {
      await page.screenshot({ path: path.join(OUT, 'multiroot-failure.png') });
    } catch {}
  } finally {
    await ctx.close().catch(() => undefined);
  }
  finish(OUT);
})();
