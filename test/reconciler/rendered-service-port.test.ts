// A rendering holds its ServicePort only weakly when the model can derive it
// again (the change tracker's again()), and derives it when it is asked for
// after the collector took it; without that, it holds the port.

import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/agent/memory-release.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { type PortAgain, RenderedServicePort } from '../../src/reconciler/rendered-service-port.ts';
import { config, V4 } from './fixtures.ts';
import { GOLDENS } from './goldens.ts';

const original: ServicePort = GOLDENS.flatMap((g) => g.ports).find((p) => p.family === 'IPv4' && p.cluster.kind === 'endpoints')!;
const context = { fc: V4, config: config({ families: { IPv4: V4 } }) };
const NO_LABELS: ReadonlySet<string> = new Set();

/** A rendering of a copy of `original`, and a weak reference to that copy (no other reference is left). */
function rendered(again: PortAgain | undefined): { r: RenderedServicePort; weak: WeakRef<ServicePort> } {
  const port = structuredClone(original);
  return { r: RenderedServicePort.render(port, context, NO_LABELS, again), weak: new WeakRef(port) };
}

async function collect(): Promise<void> {
  // A WeakRef keeps its target until the job that made it ends.
  await new Promise((r) => setImmediate(r));
  collectGarbage();
}

describe('RenderedServicePort', () => {
  it('holds its port weakly when it can be derived again, and derives it (equal) when asked after it was collected', async () => {
    const asked: string[] = [];
    const { r, weak } = rendered({
      derive: (id) => {
        asked.push(id);
        return structuredClone(original);
      },
    });
    const fragment = r.fragment;
    await collect();
    expect(weak.deref()).toBeUndefined();
    expect(asked).toEqual([]);
    expect(r.port).toEqual(original);
    expect(r.port).toBe(r.port);
    expect(asked).toEqual([original.id]);
    expect({ id: r.id, family: r.family }).toEqual({ id: original.id, family: original.family });
    // Rendered again from the derived port, with the same labels: what the diff sees does not depend on GC.
    expect(RenderedServicePort.render(r.port, context, NO_LABELS).fragment).toEqual(fragment);
    expect(r.withLabels(context, NO_LABELS).port).toBe(r.port);
  });

  it('rendered for one walk (a full sync), keeps no rendering: each walk renders it again, equal', () => {
    const port = structuredClone(original);
    const { rendered: r, fragment } = RenderedServicePort.renderUnkept(port, context, NO_LABELS);
    const again = r.unkeptFragment();
    expect(again).not.toBe(fragment);
    expect(again).toEqual(fragment);
    expect(r.unkeptFragment()).not.toBe(again);
    // Asked for as such, it is kept (weakly) from then on, as a rendering made to be kept is.
    expect(r.fragment).toEqual(fragment);
    expect(r.unkeptFragment()).toBe(r.fragment);
    const kept = RenderedServicePort.render(port, context, NO_LABELS);
    expect(kept.unkeptFragment()).toBe(kept.fragment);
  });

  it('holds its port when it cannot be derived again', async () => {
    const { r, weak } = rendered(undefined);
    await collect();
    expect(weak.deref()).toBeDefined();
    expect(r.port).toBe(weak.deref());
  });
});
