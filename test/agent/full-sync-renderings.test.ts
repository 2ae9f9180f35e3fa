// The agent tells the reconciler how many Services its model holds
// (ModelRead.services), so that a small cluster's full sync renders each port
// once and makes its operations from those renderings (SMALL_FULL_SYNC_SERVICES).
// In-process, real manifest streams, the fake kernel.

import { filter, firstValueFrom } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import { agentOnExamples } from './examples-agent.ts';

const rendered = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../src/reconciler/service-rules.ts', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/reconciler/service-rules.ts')>();
  return {
    ...original,
    renderServicePort: (...args: Parameters<typeof original.renderServicePort>) => {
      rendered.count++;
      return original.renderServicePort(...args);
    },
  };
});

describe("a small cluster's first sync", () => {
  it('renders each service port once', async () => {
    rendered.count = 0;
    const agent = await agentOnExamples({ dataplane: new FakeKernel() });
    try {
      const first = await firstValueFrom(agent.syncs$.pipe(filter((r) => r.ok)));
      expect(first.report?.kind).toBe('full');
      expect(first.report?.servicePorts).toBeGreaterThan(1);
      expect(rendered.count).toBe(first.report?.servicePorts);
    } finally {
      await agent.stop();
    }
  });
});
