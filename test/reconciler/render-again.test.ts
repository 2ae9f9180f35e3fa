// A port rendered again (RenderedServicePort's renders after the first) skips
// its endpoints' address checks, which the first render made: what it renders
// must not depend on that. And a port's hairpin addresses, collected from its
// policy chains' sorted endpoints, name each address once.

import { describe, expect, it } from 'vitest';
import { NO_LABELS } from '../../src/reconciler/endpoint-slots.ts';
import { renderServicePort, ServicePortRenderError } from '../../src/reconciler/service-rules.ts';
import { config, ep, local, sel, sp, V4, V6 } from './fixtures.ts';
import { GOLDENS } from './goldens.ts';

describe('rendering a port again', () => {
  for (const g of GOLDENS) {
    it(`renders every port of ${g.name} as its first render did`, () => {
      for (const port of g.ports) {
        const fc = port.family === 'IPv4' ? V4 : V6;
        const first = renderServicePort(port, fc, g.config, NO_LABELS);
        expect(renderServicePort(port, fc, g.config, NO_LABELS, true)).toEqual(first);
      }
    });
  }

  it('checks the endpoint addresses the first time only', () => {
    const port = sp({ endpoints: [ep('10.244.1.5'), ep('10.244.01.6')] });
    const c = config({ families: { IPv4: V4 } });
    expect(() => renderServicePort(port, V4, c, NO_LABELS)).toThrow(ServicePortRenderError);
    expect(() => renderServicePort(port, V4, c, NO_LABELS, true)).not.toThrow();
  });
});

describe("a port's hairpin addresses (endpoint shape map)", () => {
  const c = config({ families: { IPv4: V4 }, endpointShape: 'map' });

  it('name an address with several ports once', () => {
    const port = sp({ endpoints: [ep('10.244.1.5', 8080), ep('10.244.1.10', 8080), ep('10.244.1.5', 9090), ep('10.244.1.1', 80)] });
    expect(renderServicePort(port, V4, c, NO_LABELS).hairpin).toEqual(['10.244.1.1', '10.244.1.10', '10.244.1.5']);
  });

  it('name an address both policy chains use once, in the order they were first met', () => {
    // Internal policy Local, external Cluster: the local chain and the service chain both hold 10.244.1.7.
    const port = sp({
      nodePort: 30080,
      internalPolicyLocal: true,
      cluster: sel(local('10.244.1.7')),
      external: sel(ep('10.244.2.9'), local('10.244.1.7')),
    });
    const f = renderServicePort(port, V4, c, NO_LABELS);
    expect(f.chains.map((s) => s.chain.name).filter((n) => n.startsWith('service-') || n.startsWith('local-'))).toHaveLength(2);
    expect(f.hairpin).toEqual(['10.244.1.7', '10.244.2.9']);
  });
});
