#!/usr/bin/env node
// The command's entry point. It checks the Node version before importing
// anything: the dependencies (undici 8, @kubernetes/client-node 2) crash at
// import on an older Node with errors that do not say what is wrong. Written
// for any Node that runs ES modules, so that the check itself always runs.
//
// It runs the compiled dist/ (the installed package, the image) and falls back
// to src/ under Node's type stripping in a source checkout not built yet.

import { existsSync } from 'node:fs';
import * as nodeModule from 'node:module';

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

// V8's compiled code of our modules and the dependencies is kept on disk
// ($NODE_COMPILE_CACHE, else $TMPDIR/node-compile-cache), so that a restarted
// agent does not compile ~550 modules again: 30 ms less CPU and ~60 ms less
// start-up on a 2-core node. Where the directory cannot be written, Node
// carries on without it; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
nodeModule.enableCompileCache();

const compiled = new URL('../dist/src/cli.js', import.meta.url);
const source = new URL('../src/cli.ts', import.meta.url);
const entry = existsSync(compiled) ? compiled : existsSync(source) ? source : undefined;
if (entry === undefined) {
  process.stderr.write('kube-nft-proxy: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
import(entry.href).catch((e) => {
  console.error(e);
  process.exit(1);
});
