// Bundle with esbuild: the extension (node, cjs, `vscode` external), the chat webview
// (browser, iife) and the vscode-free modules one by one for the node tests (out/lib);
// --production also builds the milk-lsp wheel the .vsix carries (scripts/wheel.js).
const esbuild = require('esbuild');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const production = process.argv.includes('--production');

async function main() {
  const started = Date.now();
  await esbuild.build({
    entryPoints: [path.join(root, 'src/extension.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    external: ['vscode'],
    outfile: path.join(root, 'dist/extension.js'),
    sourcemap: production ? false : 'linked',
    minify: production,
    logLevel: 'warning',
  });
  await esbuild.build({
    entryPoints: [path.join(root, 'webview/main.ts')],
    bundle: true,
    platform: 'browser',
    format: 'iife',
    target: 'es2020',
    outfile: path.join(root, 'dist/webview.js'),
    sourcemap: false,
    minify: production,
    logLevel: 'warning',
  });
  const libs = fs
    .readdirSync(path.join(root, 'src'))
    .filter((f) => f.endsWith('.ts') && f !== 'extension.ts')
    .map((f) => path.join(root, 'src', f));
  await esbuild.build({
    entryPoints: libs,
    bundle: false,
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    outdir: path.join(root, 'out/lib'),
    logLevel: 'warning',
  });
  console.log(`build: dist/extension.js, dist/webview.js, out/lib/*.js in ${Date.now() - started} ms`);
  if (production) require('./wheel').buildWheel();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
