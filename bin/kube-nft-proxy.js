#!/usr/bin/env node
// Installed entry point: the compiled CLI (npm run build makes dist/).
import('../dist/src/cli.js').catch((e) => {
  console.error(e?.code === 'ERR_MODULE_NOT_FOUND' ? 'kube-nft-proxy: dist/ is missing; run `npm run build` first' : e);
  process.exit(1);
});
