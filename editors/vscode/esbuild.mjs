// Bundles the extension (dist/extension.js) or, with --tests, the node unit tests (out/test/).
import { build } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';


const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests');

if (tests) {
  rmSync('out', { recursive: true, force: true });
  const entryPoints = readdirSync('test')
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => `test/${name}`);
  await build({
    entryPoints,
    outdir: 'out/test',
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    sourcemap: 'inline',
    // The unit-tested modules never import vscode; fail loudly if one starts to.
    logLevel: 'warning',
  });
} else {
  rmSync('dist/extension.js.map', { force: true });
  await build({
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    bundle: true,
    external: ['vscode'],
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    minify: production,
    sourcemap: !production,
    logLevel: 'warning',
  });
}
