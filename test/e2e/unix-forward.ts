// Forwards TCP connections made inside a network namespace to a Unix socket
// (a path in the file system, which every namespace shares): how an agent
// running inside the node namespace reaches the fake API server listening on
// the test's own loopback. Prints "ready" once listening.
// Usage: node unix-forward.ts HOST PORT SOCKET_PATH

import { connect, createServer } from 'node:net';

const [host, port, path] = process.argv.slice(2);
const server = createServer((client) => {
  const upstream = connect(path!);
  client.pipe(upstream).pipe(client);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
});
server.listen(Number(port), host, () => console.log('ready'));
