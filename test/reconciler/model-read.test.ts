// One source of "what changed": the reconciler renders again exactly the
// ServicePorts the model read names (the change tracker's drain), and compares
// none itself. A port whose value differs but is not named keeps its rendering;
// the same port named is programmed.

import { describe, expect, it } from 'vitest';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import { type ModelRead, Reconciler } from '../../src/reconciler/reconciler.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { config, ep, sp, V4 } from './fixtures.ts';
import { afterFreshFullSync, listingWithoutHandles } from './kernel-listing.ts';

const cfg = config({ families: { IPv4: V4 } });
const web = sp({ endpoints: [ep('10.244.1.5')] });
const moved = sp({ endpoints: [ep('10.244.1.6')] });
const api = sp({ serviceName: 'api', clusterIP: '10.96.0.20', endpoints: [ep('10.244.3.3')] });

function setup(first: ModelRead) {
  const kernel = new FakeKernel();
  let read = first;
  let now = 0;
  const r = new Reconciler({ dataplane: kernel, config: cfg, servicePorts: () => read, now: () => now });
  /** The kernel once stale chains are deleted, after the stale-chain delay and a sync with nothing new. */
  const settled = async () => {
    now += 5000;
    read = { ports: read.ports, changed: new Set() };
    await r.sync({ kind: 'incremental' });
    return listingWithoutHandles(kernel);
  };
  return { kernel, r, next: (m: ModelRead) => (read = m), settled };
}

describe('the reconciler renders what the model read names as changed', () => {
  it('a port not named keeps its rendering; named, it is programmed', async () => {
    const t = setup({ ports: [web, api], changed: new Set([web.id, api.id]) });
    await t.r.sync({ kind: 'incremental' });
    expect(web.id).toBe(moved.id);
    t.next({ ports: [moved, api], changed: new Set() });
    expect((await t.r.sync({ kind: 'incremental' })).ops).toBe(0);
    t.next({ ports: [moved, api], changed: new Set([moved.id]) });
    const rep = await t.r.sync({ kind: 'incremental' });
    expect(rep.ops).toBeGreaterThan(0);
    expect(await t.settled()).toEqual(afterFreshFullSync([moved, api], cfg));
  });

  it('a change named in a read whose render threw is not lost: the next render takes it in', async () => {
    const t = setup({ ports: [web], changed: new Set([web.id]) });
    await t.r.sync({ kind: 'incremental' });
    // A port the renderer cannot even look at (not a ServicePortRenderError: the whole render throws).
    t.next({ ports: [{ ...moved, cluster: undefined } as unknown as ServicePort], changed: new Set([moved.id]) });
    await expect(t.r.sync({ kind: 'incremental' })).rejects.toThrow(TypeError);
    t.next({ ports: [moved], changed: new Set() });
    await t.r.sync({ kind: 'incremental' });
    expect(await t.settled()).toEqual(afterFreshFullSync([moved], cfg));
  });

  it("'all' renders every port again", async () => {
    const t = setup({ ports: [web, api], changed: 'all' });
    await t.r.sync({ kind: 'incremental' });
    t.next({ ports: [moved, api], changed: 'all' });
    await t.r.sync({ kind: 'incremental' });
    expect(await t.settled()).toEqual(afterFreshFullSync([moved, api], cfg));
  });

  it('a removed port is named too, and goes', async () => {
    const t = setup({ ports: [web, api], changed: new Set([web.id, api.id]) });
    await t.r.sync({ kind: 'incremental' });
    t.next({ ports: [api], changed: new Set([web.id]) });
    await t.r.sync({ kind: 'incremental' });
    expect(await t.settled()).toEqual(afterFreshFullSync([api], cfg));
  });
});
