// The agent run as kubeadm runs kube-proxy: `--config` with a
// KubeProxyConfiguration (from a ConfigMap volume) and `--hostname-override`.
// The file is the configuration; the process exits when the file changes, so
// that the DaemonSet restarts it on the new one.

import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeApiServer } from '../fake-apiserver/index.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { eventually, nodeObject, serviceObject, sliceObject, startAgentProcess, type AgentProcess } from './agent-process.ts';

const KUBEADM = readFileSync(new URL('../config/fixtures/kubeadm-v1.32-config.conf', import.meta.url), 'utf8');

describe('--config from a ConfigMap volume', { timeout: 60_000 }, () => {
  let dir: string;
  let ns: NetNs;
  let api: FakeApiServer;
  let agent: AgentProcess;
  let configPath: string;

  /**
   * As the kubelet lays out a ConfigMap volume: config.conf -> ..data/config.conf, ..data -> a timestamped directory swapped atomically.
   */
  const publish = (version: string, text: string) => {
    const target = join(dir, `..${version}`);
    mkdirSync(target);
    writeFileSync(join(target, 'config.conf'), text);
    symlinkSync(`..${version}`, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'knp-configmap-'));
    ns = createNetns('knp-cfg');
    api = await FakeApiServer.start();
    api.create('nodes', nodeObject('node-a', 'zone-a', 'region-1', '192.0.2.10'));
    api.create('services', serviceObject({ name: 'web', clusterIP: '10.96.0.10' }));
    api.create('endpointslices', sliceObject('web', 'web-1', [{ ip: '10.244.0.11' }]));
    const kubeconfig = join(dir, 'kubeconfig.conf');
    api.writeKubeconfig(kubeconfig);
    const text = KUBEADM.replace('/var/lib/kube-proxy/kubeconfig.conf', kubeconfig)
      .replace('healthzBindAddress: ""', 'healthzBindAddress: 127.0.0.1:0')
      .replace('metricsBindAddress: ""', 'metricsBindAddress: 127.0.0.1:0')
      .replace(
        '  masqueradeBit: null\n  minSyncPeriod: 0s\n  syncPeriod: 0s\nnodePortAddresses',
        '  masqueradeBit: 13\n  minSyncPeriod: 0s\n  syncPeriod: 0s\nnodePortAddresses',
      );
    publish('v1', text);
    symlinkSync('..data/config.conf', join(dir, 'config.conf'));
    configPath = join(dir, 'config.conf');
    // startAgentProcess also passes its usual flags (--kubeconfig, --cluster-cidr...): the file wins over them.
    agent = await startAgentProcess(api, ns.name, [`--config=${configPath}`]);
  }, 60_000);

  afterAll(async () => {
    await agent?.stop();
    await api?.close();
    ns?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('programs what the file says, and says which flags it ignored', async () => {
    await eventually(
      async () => agent.entries().some((e) => e.msg === 'synced nftables rules'),
      (ok) => ok,
      20_000,
      'a first sync',
    );
    const table = ns.exec('nft', ['list', 'table', 'ip', 'kube-nft-proxy']);
    expect(table).toContain('meta mark set meta mark | 0x00002000'); // masqueradeBit 13 from the file
    expect(table).toContain('ip saddr != 10.244.0.0/16 jump mark-for-masquerade'); // clusterCIDR from the file
    const ignored = agent.entries().find((e) => typeof e.msg === 'string' && e.msg.startsWith('these flags are ignored'));
    expect(ignored?.flags).toEqual(expect.arrayContaining(['--kubeconfig', '--cluster-cidr', '--min-sync-period']));
    expect(ignored?.flags).not.toContain('--hostname-override');
  });

  it('exits when the ConfigMap is updated, so that the DaemonSet restarts it', async () => {
    const exited = once(agent.child, 'exit');
    publish('v2', readFileSync(configPath, 'utf8').replace('masqueradeBit: 13', 'masqueradeBit: 12'));
    const [code] = (await exited) as [number];
    expect(code).toBe(1);
    expect(agent.entries().some((e) => e.msg === 'the configuration file changed; exiting so that the new one is read on restart')).toBe(
      true,
    );
    // The rules stay in place for the next run to adopt.
    expect(ns.exec('nft', ['list', 'table', 'ip', 'kube-nft-proxy'])).toContain('0x00002000');
  });
});
