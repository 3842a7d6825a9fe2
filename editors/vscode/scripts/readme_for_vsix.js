// The README packaged in the .vsix: its images inlined as data: URIs. VS Code's extension page
// shows a README in a webview that loads images only over https: or data: (a relative
// `images/chat.png` shows broken there; the repository's README keeps the files).
//   node scripts/readme_for_vsix.js [out]   (default dist/README.md)
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const out = path.resolve(root, process.argv[2] || 'dist/README.md');
const types = { '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif' };
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
let inlined = 0;
const text = readme.replace(/!\[([^\]]*)\]\((?!https?:|data:)([^)\s]+)\)/g, (all, alt, rel) => {
  const type = types[path.extname(rel).toLowerCase()];
  if (!type) throw new Error(`README image ${rel}: not a PNG, JPEG or GIF`);
  const data = fs.readFileSync(path.join(root, rel)).toString('base64');
  inlined++;
  return `![${alt}](data:${type};base64,${data})`;
});
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, text);
console.log(`${path.relative(root, out)}: ${inlined} image(s) inlined, ${Math.round(text.length / 1024)} KB`);
