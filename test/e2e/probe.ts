// A test client: makes COUNT connections (TCP) or exchanges (UDP) to a target and
// prints one JSON array of outcomes: the backend's answer ("b1 192.0.2.10"),
// "refused", "timeout", "unreachable" or another error code.
// Usage: node probe.ts tcp|udp ADDRESS PORT [COUNT] [TIMEOUT_MS] [SOURCE_ADDRESS]

import { createSocket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import { connect } from 'node:net';

const [proto, address, portText, countText = '1', timeoutText = '1000', source] = process.argv.slice(2);
const port = Number(portText);
const count = Number(countText);
const timeoutMs = Number(timeoutText);

function tcpOnce(): Promise<string> {
  return new Promise((resolve) => {
    let data = '';
    const sock = connect({ host: address!, port, ...(source ? { localAddress: source } : {}) });
    const timer = setTimeout(() => {
      sock.destroy();
      resolve('timeout');
    }, timeoutMs);
    sock.on('data', (d) => (data += d));
    sock.on('end', () => {
      clearTimeout(timer);
      resolve(data.trim());
    });
    sock.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(
        e.code === 'ECONNREFUSED'
          ? 'refused'
          : e.code === 'EHOSTUNREACH' || e.code === 'ENETUNREACH'
            ? 'unreachable'
            : (e.code ?? e.message),
      );
    });
  });
}

function udpOnce(): Promise<string> {
  return new Promise((resolve) => {
    const sock = createSocket(isIPv6(address!) ? 'udp6' : 'udp4');
    const timer = setTimeout(() => {
      sock.close();
      resolve('timeout');
    }, timeoutMs);
    sock.on('message', (msg) => {
      clearTimeout(timer);
      sock.close();
      resolve(msg.toString().trim());
    });
    // An ICMP port-unreachable surfaces as ECONNREFUSED on a connected socket.
    sock.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      sock.close();
      resolve(e.code === 'ECONNREFUSED' ? 'refused' : (e.code ?? e.message));
    });
    sock.connect(port, address, () => sock.send('ping'));
  });
}

const outcomes: string[] = [];
for (let i = 0; i < count; i++) outcomes.push(await (proto === 'udp' ? udpOnce() : tcpOnce()));
console.log(JSON.stringify(outcomes));
