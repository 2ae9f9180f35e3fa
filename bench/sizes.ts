// The cluster sizes bench:sync and bench:js-scaling run, by label: "10k" is
// 10,000 services x 10 endpoints (the label the JSON keys carry since the
// first bench), "5k50" 5,006 x 50 (kubernetes #135639's cluster), "44k1"
// 44,000 x 1 (#139513's). A label is <services>k with an optional endpoint
// count; "5k" means 5,006 only in "5k50", the anchor's exact figure. A "v6"
// after it ("10kv6") makes the cluster IPv6 single-stack (sync-cluster.ts).

import type { IPFamily } from '../src/k8s/types.ts';

export interface BenchSize {
  label: string;
  services: number;
  endpoints: number;
  family: IPFamily;
}

const ANCHORS: Readonly<Record<string, BenchSize>> = {
  '5k50': { label: '5k50', services: 5006, endpoints: 50, family: 'IPv4' },
  '44k1': { label: '44k1', services: 44_000, endpoints: 1, family: 'IPv4' },
};

/** One label (10k, 100k, 5k50, 44k1, 2k3, or a bare number of services x 10; any of them with "v6") as a size. */
export function parseSize(label: string): BenchSize {
  if (label.endsWith('v6')) {
    const v4 = parseSize(label.slice(0, -2));
    return { ...v4, label: `${v4.label}v6`, family: 'IPv6' };
  }
  const anchor = ANCHORS[label];
  if (anchor) return anchor;
  const m = /^(\d+(?:\.\d+)?)(k?)(?:x?(\d+))?$/.exec(label);
  if (!m) throw new Error(`bench size ${JSON.stringify(label)}: expected e.g. 10k, 100k, 5k50, 44k1`);
  const services = Math.round(Number(m[1]) * (m[2] ? 1000 : 1));
  const endpoints = m[3] === undefined ? 10 : Number(m[3]);
  if (services < 1 || endpoints < 1) throw new Error(`bench size ${JSON.stringify(label)}: services and endpoints must be at least 1`);
  const k = services % 1000 === 0 ? `${services / 1000}k` : String(services);
  return { label: endpoints === 10 ? k : `${k}${k.endsWith('k') ? '' : 'x'}${endpoints}`, services, endpoints, family: 'IPv4' };
}

/** A comma-separated list of labels. */
export function parseSizes(list: string): BenchSize[] {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(parseSize);
}
