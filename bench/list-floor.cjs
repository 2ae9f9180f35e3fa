// bench:sync's floor child: what a cold start costs before any work of ours.
// Spawned with the agent's own node flags, it opens the agent's three
// WatchList streams (the same paths, selectors and query), reads their bytes
// to each one's initial-events-end bookmark without parsing them, prints the
// moment it began and the moment all three were read (Date.now(), one JSON
// line), and exits. Spawn → that last moment is node's boot plus the lists'
// transfer: with the kernel's own commit time added, the least a cold sync
// could take, whatever the agent does with the objects.
//
// Plain CommonJS on node's built-ins only, so that it loads nothing the
// figure would then include.
//
// Usage: node list-floor.cjs KUBECONFIG_JSON NODE_NAME LABEL_SELECTOR

const startedAt = Date.now();
const { readFileSync, writeSync } = require('node:fs');
const http = require('node:http');
const https = require('node:https');

const [kubeconfigPath, nodeName, labelSelector] = process.argv.slice(2);
const kubeconfig = JSON.parse(readFileSync(kubeconfigPath, 'utf8'));
const cluster = kubeconfig.clusters[0].cluster;
const token = kubeconfig.users[0].user.token;
const server = new URL(cluster.server);
const tls = server.protocol === 'https:';
const ca = cluster['certificate-authority-data'];
const END = Buffer.from('"k8s.io/initial-events-end"');

const watchList = { watch: '1', allowWatchBookmarks: 'true', sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan' };
const streams = [
  ['/api/v1/services', { labelSelector }],
  ['/apis/discovery.k8s.io/v1/endpointslices', { labelSelector }],
  ['/api/v1/nodes', { fieldSelector: `metadata.name=${nodeName}` }],
];

/** Each stream's bytes so far, and whether its end was found: what a stalled child says when stopped. */
const progress = new Map();
process.on('SIGTERM', () => {
  const state = [...progress].map(([path, p]) => `${path} ${p.bytes} bytes${p.done ? ', read' : ', waiting'}`);
  // Written at once: process.exit() right after would drop a write still queued on the pipe.
  writeSync(2, `list-floor: stopped: ${state.join('; ')}\n`);
  process.exit(2);
});

/** Resolves once the stream's bytes hold the bookmark that ends its initial events. */
function readToInitialEnd(path, selector) {
  const seen = { bytes: 0, done: false };
  progress.set(path, seen);
  const url = new URL(path, server);
  for (const [k, v] of Object.entries({ ...selector, ...watchList })) url.searchParams.set(k, v);
  const options = {
    headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(tls ? (ca ? { ca: Buffer.from(ca, 'base64') } : { rejectUnauthorized: false }) : {}),
  };
  return new Promise((resolve, reject) => {
    const req = (tls ? https : http).get(url, options, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`${path}: HTTP ${res.statusCode}`));
      // The marker may straddle chunks (several, if some are tiny): keep the
      // stream's last bytes, one fewer than the marker has.
      const keep = END.length - 1;
      let tail = Buffer.alloc(0);
      res.on('data', (chunk) => {
        seen.bytes += chunk.length;
        const seam = Buffer.concat([tail, chunk.subarray(0, keep)]);
        if (seam.includes(END) || chunk.includes(END)) {
          seen.done = true;
          res.destroy();
          resolve(seen.bytes);
          return;
        }
        tail = chunk.length >= keep ? chunk.subarray(chunk.length - keep) : seam.subarray(Math.max(0, seam.length - keep));
      });
      res.on('end', () => reject(new Error(`${path}: ended before its initial-events-end bookmark`)));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

Promise.all(streams.map(([path, selector]) => readToInitialEnd(path, selector))).then(
  (bytes) => {
    process.stdout.write(`${JSON.stringify({ startedAt, listedAt: Date.now(), bytes: bytes.reduce((a, b) => a + b, 0) })}\n`);
    process.exit(0);
  },
  (e) => {
    process.stderr.write(`list-floor: ${e.message}\n`);
    process.exit(1);
  },
);
