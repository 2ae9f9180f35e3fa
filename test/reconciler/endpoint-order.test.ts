// A policy chain's endpoints: distinct, sorted by their `ip/port` text
// ('/' sorts before a digit: an address before the longer one it begins).

import { describe, expect, it } from 'vitest';
import type { Endpoint } from '../../src/model/service-port.ts';
import { distinctSorted } from '../../src/reconciler/endpoint-order.ts';
import { ep } from './fixtures.ts';

const texts = (eps: readonly Endpoint[]) => eps.map((e) => `${e.ip}/${e.port}`);
const WANT = ['10.244.1.1/8080', '10.244.1.1/9090', '10.244.1.10/8080', '10.244.1.5/8080'];

describe('distinctSorted', () => {
  it('hands back the very list when it is distinct and in order already', () => {
    const eps = [ep('10.244.1.1'), ep('10.244.1.1', 9090), ep('10.244.1.10'), ep('10.244.1.5')];
    expect(distinctSorted(eps, undefined)).toBe(eps);
    expect(texts(eps)).toEqual(WANT);
  });

  it('sorts and drops duplicates otherwise, whatever order they came in', () => {
    const orders = [
      [ep('10.244.1.10'), ep('10.244.1.1')],
      [ep('10.244.1.1'), ep('10.244.1.1'), ep('10.244.1.1', 9090), ep('10.244.1.10'), ep('10.244.1.5')],
      [ep('10.244.1.5'), ep('10.244.1.10'), ep('10.244.1.1', 9090), ep('10.244.1.1')],
      [ep('10.244.1.1', 9090), ep('10.244.1.1')],
    ];
    for (const eps of orders) {
      const wanted = WANT.filter((t) => eps.some((e) => `${e.ip}/${e.port}` === t));
      expect(texts(distinctSorted(eps, undefined))).toEqual(wanted);
    }
  });

  it('orders IPv6 texts the same way', () => {
    expect(texts(distinctSorted([ep('fd00::1:2'), ep('fd00::1')], undefined))).toEqual(['fd00::1/8080', 'fd00::1:2/8080']);
    expect(texts(distinctSorted([ep('fd00::1'), ep('fd00::1:2')], undefined))).toEqual(['fd00::1/8080', 'fd00::1:2/8080']);
  });

  it("sorts by the text even where a '.' follows the shorter (no address does: the order stays the sort's)", () => {
    expect(texts(distinctSorted([ep('a'), ep('a.b')], undefined))).toEqual(['a.b/8080', 'a/8080']);
  });

  it('checks each address with `address` when given', () => {
    const seen: string[] = [];
    distinctSorted([ep('10.244.1.5'), ep('10.244.1.1')], (ip) => {
      seen.push(ip);
      return ip;
    });
    expect(seen).toEqual(['10.244.1.5', '10.244.1.1']);
  });
});
