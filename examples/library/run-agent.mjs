// Run the agent inside a network namespace, fed from manifests, and stop after
// its first sync (a real embedder keeps it running until SIGTERM). Needs root
// (or CAP_NET_ADMIN in the namespace) and the native addon, which npm installs
// as the platform package @kube-nft-proxy/linux-<arch>-gnu.
//
//   ip netns add demo
//   node examples/library/run-agent.mjs demo [MANIFEST_DIR]
//   ip netns exec demo nft list table ip kube-nft-proxy
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger, NetlinkDataplane, netnsPath, parseCommandLine, startAgent } from 'kube-nft-proxy';

const netns = process.argv[2];
if (!netns) {
  console.error('usage: run-agent.mjs NETNS [MANIFEST_DIR]');
  process.exit(2);
}
const manifests = process.argv[3] ?? join(dirname(fileURLToPath(import.meta.url)), '..');
const { options } = parseCommandLine([
  '--manifests',
  manifests,
  '--netns',
  netns,
  '--hostname-override',
  'node-a',
  '--cluster-cidr',
  '10.244.0.0/16',
  '--min-sync-period',
  '0',
]);
const logger = createLogger('info', process.stderr);

let firstSync;
const synced = new Promise((resolve) => (firstSync = resolve));
const agent = await startAgent(options, {
  logger,
  // The dataplane is the one door to the kernel: here netlink in the namespace.
  dataplane: new NetlinkDataplane({ netns: netnsPath(options.netns) }),
  serveHttp: false,
  onSync: (result) => firstSync(result),
});
const result = await synced;
await agent.stop();
if (!result.ok) {
  console.error(`first sync failed: ${result.error?.message ?? result.error}`);
  process.exit(1);
}
console.log(`programmed ${result.report?.servicePorts} service ports with ${result.report?.ops} operations in ${netns}`);
