// A test backend: answers every TCP connection and UDP datagram with
// "<name> <peer address>" so that a test can tell which endpoint a packet reached
// and what source address that endpoint saw. Runs inside a backend namespace.
// Usage: node backend.ts NAME PORT[,PORT...] [BIND_ADDRESS]

import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';

const [name, portList, bind = '::'] = process.argv.slice(2);
if (!name || !portList) {
  console.error('usage: backend.ts NAME PORT[,PORT...] [BIND_ADDRESS]');
  process.exit(2);
}

let pending = 0;
for (const port of portList.split(',').map(Number)) {
  pending += 2;
  const tcp = createServer((sock) => {
    sock.end(`${name} ${sock.remoteAddress?.replace(/^::ffff:/, '')}\n`);
    sock.on('error', () => {});
  });
  tcp.listen({ port, host: bind, ipv6Only: false }, () => ready());
  const udp = createSocket({ type: bind.includes(':') ? 'udp6' : 'udp4', ipv6Only: false });
  udp.on('message', (_msg, peer) => {
    udp.send(`${name} ${peer.address.replace(/^::ffff:/, '')}\n`, peer.port, peer.address);
  });
  udp.bind(port, bind, () => ready());
}

function ready() {
  if (--pending === 0) console.log('ready');
}
