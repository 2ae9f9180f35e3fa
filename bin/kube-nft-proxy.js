#!/usr/bin/env node
// The command's entry point. It checks the Node version before importing
// anything: the dependencies (undici 8, @kubernetes/client-node 2) crash at
// import on an older Node with errors that do not say what is wrong. Written
// for any Node that runs ES modules, so that the check itself always runs.
//
// It runs the bundle `npm run build` makes (dist/bundle/: the installed
// package, the image) and falls back to src/ under Node's type stripping in a
// source checkout not built yet.

import { existsSync } from 'node:fs';

const NEED = [22, 19];
const have = process.versions.node.split('.').map(Number);
if (have[0] < NEED[0] || (have[0] === NEED[0] && have[1] < NEED[1])) {
  process.stderr.write(
    'kube-nft-proxy: needs Node.js ' +
      NEED.join('.') +
      ' or newer (Node 24 LTS recommended); this is Node ' +
      process.versions.node +
      ' at ' +
      process.execPath +
      '.\n' +
      'Install Node 24 (https://nodejs.org, or from the npm registry: npx -y node@24 ...), or in a source checkout run `npm ci`: ' +
      'its npm scripts run on the Node 24 it installs.\n',
  );
  process.exit(1);
}

// Node's on-disk compile cache stays off, and so does any code cache: Node
// checks its cache file's CRC, but V8 does not verify what it deserialises
// (its checksum check is a debug-build default): caches it could not read
// back have aborted Node at start-up elsewhere (Check failed: ... in its code
// cache deserializer, marcoroth/herb#1977), and a stale one it accepted has
// crashed Node later (nodejs/node#62781). ~30 ms of module loading (~70 ms of
// a start-up with the first sync's functions cached too, README) is not worth
// an agent that cannot start.

const bundled = new URL('../dist/bundle/cli.js', import.meta.url);
const source = new URL('../src/cli.ts', import.meta.url);
const entry = existsSync(bundled) ? bundled : existsSync(source) ? source : undefined;
if (entry === undefined) {
  process.stderr.write('kube-nft-proxy: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
// The module only exports the command (an import of it runs nothing): called here.
import(entry.href)
  .then((cli) => cli.runCommandLine(process.argv.slice(2)))
  .catch((e) => {
    console.error(e);
    process.exit(1);
  });
