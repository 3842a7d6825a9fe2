// Draws images/icon.png (128x128, the marketplace/extension-list icon) with headless Chromium:
//   node scripts/icon.js images/icon.png
const { chromium } = require('playwright-core');
(async () => {
  const b = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
  const p = await b.newPage({ viewport: { width: 128, height: 128 }, deviceScaleFactor: 1 });
  await p.setContent(`<html><body style="margin:0;background:transparent">
<svg xmlns="http://www.w3.org/2000/svg" width="128" height="128" viewBox="0 0 128 128">
  <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#3a6ea5"/><stop offset="1" stop-color="#b4532a"/></linearGradient></defs>
  <rect x="4" y="4" width="120" height="120" rx="26" fill="url(#g)"/>
  <g transform="translate(24 16) scale(3.333)" fill="none" stroke="#fff" stroke-width="1.5" stroke-linejoin="round" stroke-linecap="round">
    <path d="M9 2h6v3l2 3v12a2 2 0 0 1-2 2H9a2 2 0 0 1-2-2V8l2-3z" fill="#fff" fill-opacity="0.92"/>
    <path d="M9 5h6"/>
  </g>
  <path d="M48.5 52.5h31" stroke="#3a6ea5" stroke-width="4" stroke-linecap="round"/>
  <text x="64" y="88" font-family="DejaVu Sans, sans-serif" font-weight="bold" font-size="16" fill="#7a3a1e" text-anchor="middle">milk</text>
</svg></body></html>`);
  await p.screenshot({ path: process.argv[2], omitBackground: true, clip: { x: 0, y: 0, width: 128, height: 128 } });
  await b.close();
})();
