// Address parsing with kube-proxy's leniency and one canonical spelling.

export { formatIPv4, formatIPv6, ipFamilyOf, normalizeIP, parseIP, specialAddressKind } from './ip.ts';
export type { ParsedIP, SpecialAddressKind } from './ip.ts';
export { normalizeCIDR, parseCIDR } from './cidr.ts';
export type { ParsedCIDR } from './cidr.ts';
