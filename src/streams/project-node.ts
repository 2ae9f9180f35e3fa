// Node → NodeInfo: the topology labels (KEP-2030), addresses and pod CIDRs.

import type { NodeInfo } from '../k8s/types.ts';
import { isCIDRText, textFamily } from '../net/ip.ts';
import { LABEL_REGION, LABEL_ZONE, TO_BE_DELETED_TAINT } from '../k8s/well-known.ts';
import type { StringPool } from './intern.ts';
import { asList, asObject, checkDnsSubdomain, fail, isObject, project, resourceVersionOf, type Projection } from './validate-common.ts';

function projectNodeUnchecked(raw: unknown, pool: StringPool): NodeInfo {
  const obj = asObject('object', raw);
  const meta = asObject('metadata', obj.metadata);
  const name = pool.intern(checkDnsSubdomain('metadata.name', meta.name));
  const labels = isObject(meta.labels) ? meta.labels : {};
  const spec = isObject(obj.spec) ? obj.spec : {};
  const status = isObject(obj.status) ? obj.status : {};
  const addresses: NodeInfo['addresses'] = [];
  for (const [i, a] of asList('status.addresses', status.addresses).entries()) {
    if (!isObject(a)) fail(`status.addresses[${i}] is not an object`);
    if (a.type !== 'InternalIP' && a.type !== 'ExternalIP') continue;
    if (typeof a.address !== 'string' || textFamily(a.address, 'lenient') === undefined) fail(`status.addresses[${i}] is not an IP`);
    addresses.push({ type: a.type, address: a.address });
  }
  let podCIDRs = asList('spec.podCIDRs', spec.podCIDRs);
  if (podCIDRs.length === 0 && typeof spec.podCIDR === 'string' && spec.podCIDR !== '') podCIDRs = [spec.podCIDR];
  for (const [i, c] of podCIDRs.entries()) {
    if (typeof c !== 'string' || !isCIDRText(c, 'lenient')) fail(`spec.podCIDRs[${i}] is not a CIDR`);
  }
  const info: NodeInfo = { name, resourceVersion: resourceVersionOf(meta), addresses, podCIDRs: podCIDRs as string[] };
  if (meta.deletionTimestamp !== undefined && meta.deletionTimestamp !== null) info.deleting = true;
  // Only the taint the health check reads: other taints (and their churn) are no change to us.
  const taints = Array.isArray(spec.taints) ? spec.taints : [];
  if (taints.some((t) => isObject(t) && t.key === TO_BE_DELETED_TAINT)) info.taints = [TO_BE_DELETED_TAINT];
  const zone = labels[LABEL_ZONE];
  if (typeof zone === 'string' && zone !== '') info.zone = pool.intern(zone);
  const region = labels[LABEL_REGION];
  if (typeof region === 'string' && region !== '') info.region = pool.intern(region);
  return info;
}

export function projectNode(raw: unknown, pool: StringPool): Projection<NodeInfo> {
  return project(() => projectNodeUnchecked(raw, pool));
}
