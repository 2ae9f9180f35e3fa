// The node settings kube-proxy applies at start-up besides its rules: the
// conntrack sysctls of its `conntrack` section (pkg/proxy/conntrack/sysctls.go
// in kube-proxy 1.32) and its own oom_score_adj. Where this node does not allow
// a setting (a read-only /proc/sys in a container, no CAP_SYS_RESOURCE), the
// rest is still applied and the caller gets the failures for one clear warning.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeProxyConfiguration } from '../config/kube-proxy-config.ts';

/** kube-proxy's conntrack section; durations in ms, 0 leaves the kernel's value. */
export type ConntrackSettings = KubeProxyConfiguration['conntrack'];

export interface Sysctl {
  /** Under /proc/sys. */
  path: string;
  value: number;
}

/**
 * What kube-proxy sets, in its order: nf_conntrack_max = max(maxPerCore x CPUs,
 * min) unless maxPerCore is 0; each timeout given as more than 0, in seconds;
 * tcp_be_liberal only when asked for.
 */
export function conntrackSysctls(c: ConntrackSettings, cpus: number): Sysctl[] {
  const out: Sysctl[] = [];
  if (c.maxPerCore > 0) out.push({ path: 'net/netfilter/nf_conntrack_max', value: Math.max(c.maxPerCore * cpus, c.min) });
  const seconds = (ms: number) => Math.floor(ms / 1000);
  if (c.tcpEstablishedTimeout > 0)
    out.push({ path: 'net/netfilter/nf_conntrack_tcp_timeout_established', value: seconds(c.tcpEstablishedTimeout) });
  if (c.tcpCloseWaitTimeout > 0)
    out.push({ path: 'net/netfilter/nf_conntrack_tcp_timeout_close_wait', value: seconds(c.tcpCloseWaitTimeout) });
  if (c.tcpBeLiberal) out.push({ path: 'net/netfilter/nf_conntrack_tcp_be_liberal', value: 1 });
  if (c.udpTimeout > 0) out.push({ path: 'net/netfilter/nf_conntrack_udp_timeout', value: seconds(c.udpTimeout) });
  if (c.udpStreamTimeout > 0) out.push({ path: 'net/netfilter/nf_conntrack_udp_timeout_stream', value: seconds(c.udpStreamTimeout) });
  return out;
}

export interface SettingFailure {
  path: string;
  wanted: number;
  reason: string;
}

/** Writes each sysctl whose value differs (as kube-proxy does); returns what was changed and what could not be. */
export async function applySysctls(
  sysctls: readonly Sysctl[],
  procSys = '/proc/sys',
): Promise<{ changed: Sysctl[]; failed: SettingFailure[] }> {
  const changed: Sysctl[] = [];
  const failed: SettingFailure[] = [];
  for (const s of sysctls) {
    const file = join(procSys, s.path);
    try {
      const current = Number((await readFile(file, 'utf8')).trim());
      if (current === s.value) continue;
      await writeFile(file, `${s.value}\n`);
      changed.push(s);
    } catch (e) {
      failed.push({ path: s.path, wanted: s.value, reason: (e as NodeJS.ErrnoException).code ?? (e as Error).message });
    }
  }
  return { changed, failed };
}

/**
 * kube-proxy's companion to nf_conntrack_max: the hash table is grown to a
 * quarter of the maximum when it is smaller (never shrunk). A module parameter
 * under /sys, read-only in most containers: the failure is returned.
 */
export async function growConntrackHashsize(
  max: number,
  file = '/sys/module/nf_conntrack/parameters/hashsize',
): Promise<{ changed?: Sysctl; failed?: SettingFailure }> {
  const want = Math.floor(max / 4);
  try {
    const current = Number((await readFile(file, 'utf8')).trim());
    if (current >= want) return {};
    await writeFile(file, `${want}\n`);
    return { changed: { path: file, value: want } };
  } catch (e) {
    return { failed: { path: file, wanted: want, reason: (e as NodeJS.ErrnoException).code ?? (e as Error).message } };
  }
}

/** Sets this process's oom_score_adj; undefined on success, else the reason. */
export async function applyOomScoreAdj(value: number, file = '/proc/self/oom_score_adj'): Promise<string | undefined> {
  try {
    await writeFile(file, `${value}\n`);
    return undefined;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? (e as Error).message;
  }
}
