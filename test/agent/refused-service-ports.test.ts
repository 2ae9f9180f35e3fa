// The agent (in process, real manifest streams, the fake kernel behind a
// refusal) makes a set-aside Service port visible: one error line naming the
// Service and the reason, the refused-ports gauge, and refused$ for a Warning
// Event; /healthz stays healthy while the rest is programmed.

import { firstValueFrom, filter, take, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.ts';
import type { Dataplane } from '../../src/nft/dataplane.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { Family } from '../../src/nft/objects.ts';
import type { Transaction } from '../../src/nft/transaction.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { jsonLogLines } from './json-log.ts';
import { agentOnExamples } from './examples-agent.ts';

/** The fake kernel, failing (with an error that names no operation) any transaction that touches one endpoint address. */
class RefusingKernel implements Dataplane {
  readonly inner = new FakeKernel();
  readonly address: string;
  constructor(address: string) {
    this.address = address;
  }
  begin(): Transaction {
    return this.inner.begin();
  }
  async commit(tx: Transaction): Promise<void> {
    if (tx.ops().some((op) => op.verb === 'add' && JSON.stringify(op.object).includes(`"${this.address}"`)))
      throw new Error('netlink: refused for the test');
    await this.inner.commit(tx);
  }
  list(family: Family, table: string) {
    return this.inner.list(family, table);
  }
}

describe('a Service port the dataplane refuses, seen from the agent', () => {
  let agent: Agent | undefined;
  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
  });

  it(
    'is logged once with the Service and the reason, counted, and told on refused$; ' + 'the rest is programmed and /healthz is healthy',
    async () => {
      const { lines, sink } = jsonLogLines();
      const kernel = new RefusingKernel('10.244.1.11');
      agent = await agentOnExamples({ logger: createLogger('info', sink), dataplane: kernel });
      const refused = firstValueFrom(agent.refused$.pipe(take(2), toArray()));
      const first = await firstValueFrom(agent.syncs$.pipe(filter((r) => r.ok)));
      // demo/web's two IPv4 ports use the endpoint 10.244.1.11.
      expect((await refused).map((x) => [x.namespace, x.serviceName, x.portName, x.stage]).sort()).toEqual([
        ['demo', 'web', 'http', 'bisection'],
        ['demo', 'web', 'https', 'bisection'],
      ]);
      expect(first.report?.setAside).toBe(2);
      const errors = lines.filter((l) => Number(l.level) >= 50);
      expect(errors).toHaveLength(2);
      expect(errors[0]).toMatchObject({ service: 'demo/web', reason: 'netlink: refused for the test', keptLastApplied: false });
      expect(await agent.metrics.registry.getSingleMetricAsString('kube_nft_proxy_refused_service_ports')).toMatch(
        /^kube_nft_proxy_refused_service_ports 2$/m,
      );
      expect(agent.health.healthz(Date.now()).status).toBe(200);
      // The other Services are in: demo/dns's ClusterIP, and web's IPv6 ports.
      const v4 = JSON.stringify(kernel.inner.listSync('ip', 'kube-nft-proxy'));
      expect(v4).toContain('10.96.0.53');
      expect(v4).not.toContain('10.244.1.11');
      expect(JSON.stringify(kernel.inner.listSync('ip6', 'kube-nft-proxy'))).toContain('fd00:10:244:1::b');
    },
  );
});
