// Render the ruleset kube-nft-proxy would program for a directory of
// Kubernetes manifests, as nft text: no root, no kernel, no native addon.
//
//   node examples/library/render-text.mjs [MANIFEST_DIR] [NODE_NAME]
//
// dryRun runs the agent's own first sync (change tracker, config, renderer,
// reconciler, flowtable devices from /sys) against the kernel-modelling fake
// and prints what the fake then holds: exactly what the agent would commit.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger, dryRun, parseCommandLine } from 'kube-nft-proxy';

const manifests = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..');
const node = process.argv[3] ?? 'node-a';

// The same flags as the command line; parseCommandLine fills in every default.
const { options } = parseCommandLine(['--manifests', manifests, '--hostname-override', node, '--cluster-cidr', '10.244.0.0/16']);
// Logs go to stderr so that stdout is the ruleset alone.
const text = await dryRun(options, createLogger('warn', process.stderr));
process.stdout.write(text);
