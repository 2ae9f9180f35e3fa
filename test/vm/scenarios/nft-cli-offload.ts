// Runs inside the flowtable VM: the harness's own proof that the guest kernel
// offloads, with the nft CLI (a test oracle) programming the router namespace
// with the KEP-4963 rule. Prints one JSON object of observations on stdout;
// the host-side test (flowtable-kernel.test.ts) judges them.

import { createRouterTopology } from './topology.ts';
import { conntrackTcp, pollFor, startLongFlow, startShortFlow, startSink } from './traffic.ts';

const LONG_PORT = 5201;
const SHORT_PORT = 5202;

const topo = createRouterTopology();
const sink = startSink(topo.server, LONG_PORT);
const shortSink = startSink(topo.server, SHORT_PORT);
try {
  topo.router.exec('nft', ['-f', '-'], {
    input: `
table inet knp-vm {
  set cluster-ips { type ipv4_addr; elements = { ${topo.serverIp} } }
  flowtable ft { hook ingress priority filter; devices = { ${topo.routerClientIf}, ${topo.routerServerIf} }; }
  chain forward {
    type filter hook forward priority filter; policy accept;
    ct original ip daddr @cluster-ips ct packets > 20 flow offload @ft
  }
}
`,
  });
  const ruleset = topo.router.exec('nft', ['list', 'ruleset']);

  // Both flows open at once: the long one passes 20 packets, the short one never does.
  const short = await startShortFlow(topo.client, topo.router, topo.serverIp, SHORT_PORT);
  const long = await startLongFlow(topo.client, topo.router, topo.serverIp, LONG_PORT);
  const whileOpen = await pollFor(
    () => conntrackTcp(topo.router),
    (es) => es.some((e) => e.sport === long.port && e.offloaded),
    10_000,
  );
  // Let the short flow's entry be read after the long one is offloaded, so it
  // had every chance to be offloaded too if the rule were wrong.
  const shortWhileOpen = conntrackTcp(topo.router).filter((e) => e.sport === short.port);

  await long.close();
  const afterClose = await pollFor(
    () => conntrackTcp(topo.router).filter((e) => e.sport === long.port),
    (es) => es.every((e) => !e.offloaded),
    5_000,
  );
  await short.close();

  console.log(
    JSON.stringify({
      ruleset,
      longPort: long.port,
      shortPort: short.port,
      longWhileOpen: whileOpen.filter((e) => e.sport === long.port),
      shortWhileOpen,
      longAfterClose: afterClose,
    }),
  );
} finally {
  sink.kill('SIGKILL');
  shortSink.kill('SIGKILL');
  topo.destroy();
}
