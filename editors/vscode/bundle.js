// Bundles the client into dist/extension.js (esbuild), so the .vsix needs no node_modules at run time,
// and writes dist/THIRD_PARTY_NOTICES.txt: the licence of every npm package the bundle holds (found from
// esbuild's metafile, so the list follows what is really bundled). `npm run bundle`; vsce runs it too
// (vscode:prepublish).
'use strict';

const fs = require('fs');
const path = require('path');
const esbuild = require('esbuild');

const LICENSE_NAMES = ['LICENSE', 'LICENSE.md', 'LICENSE.txt', 'license', 'License.txt'];

function packageOf(input) {
  // "node_modules/a/lib/x.js" -> "a"; "node_modules/@s/b/x.js" -> "@s/b" (the innermost node_modules wins)
  const parts = input.split('/');
  const at = parts.lastIndexOf('node_modules');
  if (at < 0) return null;
  const name = parts[at + 1].startsWith('@') ? `${parts[at + 1]}/${parts[at + 2]}` : parts[at + 1];
  return { name, dir: parts.slice(0, at + 1 + name.split('/').length).join('/') };
}

function notices(inputs) {
  const seen = new Map();
  for (const input of inputs) {
    const pkg = packageOf(input);
    if (pkg && !seen.has(pkg.name)) seen.set(pkg.name, pkg.dir);
  }
  const blocks = [];
  for (const [name, dir] of [...seen].sort()) {
    const meta = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const file = LICENSE_NAMES.map((n) => path.join(dir, n)).find((p) => fs.existsSync(p));
    if (!file) throw new Error(`${name}: no licence file to bundle with it`);
    blocks.push(`${name} ${meta.version} (${meta.license})\n\n${fs.readFileSync(file, 'utf8').trim()}\n`);
  }
  return 'The scoreaudit extension bundles these npm packages (dist/extension.js):\n\n' +
    blocks.join('\n' + '-'.repeat(72) + '\n\n');
}

async function main() {
  const result = await esbuild.build({
    entryPoints: ['extension.js'],
    bundle: true,
    outfile: 'dist/extension.js',
    external: ['vscode'],
    format: 'cjs',
    platform: 'node',
    target: 'node18',
    minify: true,
    metafile: true,
    logLevel: 'warning',
  });
  fs.writeFileSync('dist/THIRD_PARTY_NOTICES.txt', notices(Object.keys(result.metafile.inputs)));
  const size = fs.statSync('dist/extension.js').size;
  console.log(`dist/extension.js: ${(size / 1024).toFixed(0)} KiB, ${Object.keys(result.metafile.inputs).length} inputs`);
}

main().catch((err) => {
  console.error(err.message || err);
  process.exit(1);
});
