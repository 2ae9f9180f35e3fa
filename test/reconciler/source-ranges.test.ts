import { describe, expect, it } from 'vitest';
import { outermostPrefixes } from '../../src/reconciler/source-ranges.ts';

describe('outermostPrefixes: what an interval set of the allowed sources holds', () => {
  it.each([
    [
      'nested ranges go, in any order',
      'ipv4_addr',
      ['10.1.2.0/24', '10.0.0.0/8', '192.0.2.7', '192.0.2.0/24', '10.1.0.0/16'],
      ['10.0.0.0/8', '192.0.2.0/24'],
    ],
    [
      'adjacent and equal ones: adjacent stay, the second of two equal goes',
      'ipv4_addr',
      ['192.0.2.0/25', '192.0.2.128/25', '192.0.2.0/25'],
      ['192.0.2.0/25', '192.0.2.128/25'],
    ],
    [
      'a range to the top of the space swallows what follows it',
      'ipv4_addr',
      ['255.255.255.255', '128.0.0.0/1', '10.0.0.0/8', '0.0.0.0/0'],
      ['0.0.0.0/0'],
    ],
    [
      'the last range up to the top keeps what comes before it',
      'ipv4_addr',
      ['10.0.0.0/8', '128.0.0.0/1', '200.0.0.1'],
      ['10.0.0.0/8', '128.0.0.0/1'],
    ],
    ['IPv6', 'ipv6_addr', ['2001:db8::/32', '2001:db8:1::/48', 'fd00::1', '::/1'], ['::/1', 'fd00::1']],
  ] as const)('%s', (_what, type, input, want) => {
    expect(outermostPrefixes(type, input)).toEqual(want);
  });
});
