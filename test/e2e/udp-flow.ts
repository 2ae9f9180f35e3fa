// A long-lived UDP flow: one socket bound to a fixed source port sends a
// datagram to the target every INTERVAL_MS and prints each answer on its own
// line (the backend's "<name> <peer address>"). The same 5-tuple throughout,
// as a DNS client's or a game's long flow has. Runs inside a client namespace.
// Usage: node udp-flow.ts ADDRESS PORT SOURCE_PORT [INTERVAL_MS]

import { createSocket } from 'node:dgram';
import { isIPv6 } from 'node:net';

const [address, portText, sourceText, intervalText = '100'] = process.argv.slice(2);
if (!address || !portText || !sourceText) {
  console.error('usage: udp-flow.ts ADDRESS PORT SOURCE_PORT [INTERVAL_MS]');
  process.exit(2);
}
const sock = createSocket(isIPv6(address) ? 'udp6' : 'udp4');
sock.on('message', (msg) => process.stdout.write(`${msg.toString().trim()}\n`));
// ICMP errors (no route yet, port unreachable) surface here; the flow goes on.
sock.on('error', () => {});
sock.bind(Number(sourceText), () => {
  console.log('started');
  setInterval(() => sock.send('ping', Number(portText), address), Number(intervalText));
});
