// Runs inside the flowtable VM: OUR netlink dataplane (the addon, over the
// router's netns path) creates the flowtable and the KEP-4963 rule
//   ct original ip daddr @cluster-ips ct packets > 20 flow add @ft
// and then follows interfaces coming and going the way the reconciler does
// (add = `add flowtable` with more devices; removal = `delete flowtable` naming
// the device; a renamed device = flush the chain, delete and re-create the
// flowtable, re-add the rule, in one transaction).
// Prints one JSON object of observations; addon-offload.test.ts judges them.
// The nft CLI only reads (a second opinion next to our own list()).

import { probeFlowtables, type CapabilityAnswer } from '../../../src/nft/capabilities.ts';
import { NftCommitError } from '../../../src/nft/dataplane.ts';
import { NetlinkDataplane } from '../../../src/nft/netlink/netlink-dataplane.ts';
import type { Chain, Flowtable, Operation, Rule, Statement } from '../../../src/nft/objects.ts';
import { createRouterTopology } from './topology.ts';
import { conntrackTcp, fastPathLook, pollFor, startLongFlow, startShortFlow, startSink, type ConntrackEntry } from './traffic.ts';

const TABLE = 'knp-addon';
const LONG_PORT = 5201;
const SHORT_PORT = 5202;

const topo = createRouterTopology();
const dp = new NetlinkDataplane({ netns: topo.router.path });
const sinks = [startSink(topo.server, LONG_PORT), startSink(topo.server, SHORT_PORT)];

const flowtable = (devices: string[]): Flowtable => ({
  kind: 'flowtable',
  family: 'inet',
  table: TABLE,
  name: 'ft',
  hook: 'ingress',
  priority: 0,
  devices,
});
const forward: Chain = {
  kind: 'chain',
  family: 'inet',
  table: TABLE,
  name: 'forward',
  base: { type: 'filter', hook: 'forward', priority: 0, policy: 'accept' },
};
const offloadExprs: Statement[] = [
  { kind: 'lookup', keys: [{ kind: 'ct-addr', dir: 'original', field: 'ip daddr' }], set: 'cluster-ips' },
  { kind: 'match', left: { kind: 'ct', key: 'packets' }, op: '>', right: '20' },
  { kind: 'flow-offload', flowtable: 'ft' },
];
const offloadRule: Rule = { kind: 'rule', family: 'inet', table: TABLE, chain: 'forward', exprs: offloadExprs };

/** Our listing and the nft CLI's, of the flowtable's devices (both sorted). */
async function devices(): Promise<{ ours: string[]; nft: string[] }> {
  const listing = await dp.list('inet', TABLE);
  const nftText = topo.router.exec('nft', ['list', 'flowtable', 'inet', TABLE, 'ft']);
  const nftDevices =
    /devices = \{ ([^}]*) \}/
      .exec(nftText)?.[1]
      ?.split(',')
      .map((d) => d.trim()) ?? [];
  return { ours: [...(listing?.flowtables[0]?.devices ?? [])].sort(), nft: nftDevices.sort() };
}

async function commitOutcome(ops: Operation[]): Promise<{ ok: true } | { ok: false; code: string; index: number; message: string }> {
  try {
    await dp.commit(dp.begin().queueAll(ops));
    return { ok: true };
  } catch (e) {
    if (!(e instanceof NftCommitError)) throw e;
    const f = e.failures[0];
    return { ok: false, code: f?.code ?? '?', index: f?.index ?? -1, message: e.message };
  }
}

const longEntry = (port: number): ConntrackEntry | undefined => conntrackTcp(topo.router).find((e) => e.sport === port);

try {
  const probe: CapabilityAnswer = await probeFlowtables(dp);
  const [ifA, ifB] = [topo.routerClientIf, topo.routerServerIf];

  await dp.commit(
    dp.begin().queueAll([
      { verb: 'add', object: { kind: 'table', family: 'inet', name: TABLE } },
      { verb: 'add', object: { kind: 'set', family: 'inet', table: TABLE, name: 'cluster-ips', keyType: ['ipv4_addr'] } },
      { verb: 'add', object: { kind: 'element', family: 'inet', table: TABLE, set: 'cluster-ips', key: [topo.serverIp] } },
      { verb: 'add', object: flowtable([ifA, ifB]) },
      { verb: 'add', object: forward },
      { verb: 'add', object: offloadRule },
    ]),
  );
  const listing = await dp.list('inet', TABLE);
  const nftTable = topo.router.exec('nft', ['list', 'table', 'inet', TABLE]);

  const short = await startShortFlow(topo.client, topo.router, topo.serverIp, SHORT_PORT);
  const long = await startLongFlow(topo.client, topo.router, topo.serverIp, LONG_PORT);
  const longOffloaded = await pollFor(
    () => longEntry(long.port),
    (e) => !!e?.offloaded,
    10_000,
  );
  const shortWhileOpen = conntrackTcp(topo.router).find((e) => e.sport === short.port);

  // A pod's veth appears: add it to the live flowtable.
  topo.addRouterVeth('r-extra');
  const addExtra = await commitOutcome([{ verb: 'add', object: flowtable([ifA, ifB, 'r-extra']) }]);
  const afterAdd = await devices();

  // The reconciler's removal path: the device is taken out in place, and the long flow (through the
  // other two) stays on the fast path across the commit: conntrack counts none of its packets.
  let removeExtra: Awaited<ReturnType<typeof commitOutcome>> | undefined;
  const longAcrossRemove = await fastPathLook(topo.router, long.port, topo.routerServerIf, async () => {
    removeExtra = await commitOutcome([{ verb: 'delete', object: flowtable(['r-extra']) }]);
  });
  const afterRemove = await devices();

  // A renamed device's path: the flowtable re-created in one transaction. Offloaded by the new
  // flowtable, not only marked by the old one: until the old flowtable's deferred teardown the
  // connection keeps its [OFFLOAD] bit while every packet takes the slow path.
  const recreate = await commitOutcome([
    { verb: 'flush', object: forward },
    { verb: 'delete', object: flowtable([]) },
    { verb: 'add', object: flowtable([ifA, ifB]) },
    { verb: 'add', object: offloadRule },
  ]);
  const afterRecreate = await devices();
  const longAfterRecreate = await pollFor(
    () => fastPathLook(topo.router, long.port, topo.routerServerIf),
    (l) => l.onFastPath,
    10_000,
    0,
  );

  // The interface vanishes while it is in the flowtable: the kernel drops it.
  const readd = await commitOutcome([{ verb: 'add', object: flowtable([ifA, ifB, 'r-extra']) }]);
  const beforeDelete = await devices();
  topo.deleteRouterLink('r-extra');
  const afterLinkDelete = await pollFor(devices, (d) => !d.ours.includes('r-extra'), 3_000);
  // Naming it now fails the whole commit; leaving it out keeps committing.
  const namingMissing = await commitOutcome([{ verb: 'add', object: flowtable([ifA, ifB, 'r-extra']) }]);
  const withoutMissing = await commitOutcome([{ verb: 'add', object: flowtable([ifA, ifB]) }]);
  const longStillOpen = longEntry(long.port);

  await long.close();
  const longAfterClose = await pollFor(
    () => longEntry(long.port),
    (e) => !e?.offloaded,
    5_000,
  );
  await short.close();

  console.log(
    JSON.stringify({
      probe,
      committedRule: offloadExprs,
      listedRules: listing?.rules.map((r) => r.exprs),
      listedFlowtables: listing?.flowtables,
      unreadable: dp.lastUnreadable,
      nftTable,
      longOffloaded,
      shortWhileOpen,
      addExtra,
      afterAdd,
      removeExtra,
      afterRemove,
      longAcrossRemove,
      recreate,
      afterRecreate,
      longAfterRecreate,
      readd,
      beforeDelete,
      afterLinkDelete,
      namingMissing,
      withoutMissing,
      longStillOpen,
      longAfterClose,
    }),
  );
} finally {
  for (const s of sinks) s.kill('SIGKILL');
  topo.destroy();
}
