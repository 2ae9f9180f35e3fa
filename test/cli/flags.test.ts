import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/config/duration.ts';
import { FlagError, parseCommandLine, USAGE } from '../../src/cli/flags.ts';

function run(argv: string[]) {
  const c = parseCommandLine(argv);
  if (c.command !== 'run' && c.command !== 'cleanup') throw new Error(`got ${c.command}`);
  return c.options;
}

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['1s', 1000],
    ['500ms', 500],
    ['1m30s', 90_000],
    ['1h', 3_600_000],
    ['1.5s', 1500],
  ])('%s → %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
  it.each(['', '10', 's', '1x', '1s 2s', '-1s'])('rejects %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/invalid duration/);
  });
});

describe('parseCommandLine', () => {
  it('has kube-proxy defaults', () => {
    const o = run([]);
    expect(o).toMatchObject({
      table: 'kube-nft-proxy',
      minSyncPeriodMs: 1000,
      syncPeriodMs: 3_600_000,
      nodePortAddresses: ['primary'],
      masqueradeAll: false,
      offloadPacketThreshold: 20,
      dryRun: false,
      logLevel: 'info',
      metricsBindAddress: '127.0.0.1:10249',
      healthzBindAddress: '0.0.0.0:10256',
      endpointShape: 'map',
    });
  });

  it('takes every flag in both --k=v and --k v forms', () => {
    const o = run([
      '--kubeconfig=/etc/k.conf',
      '--hostname-override', 'node-a',
      '--cluster-cidr=10.244.0.0/16,fd00:10:244::/64',
      '--service-cluster-ip-range', '10.96.0.0/16',
      '--nodeport-addresses=192.0.2.0/24',
      '--masquerade-all',
      '--min-sync-period=0',
      '--sync-period=1m',
      '--feature-gates=TopologyAwareProxying=true',
      '--service-proxy-name=ours',
      '--table=knp',
      '--offload-packet-threshold=0',
      '--offload-interfaces=eth0,eth1',
      '--endpoint-shape', 'map',
      '--netns', 'node',
      '--dry-run',
      '--log-level=debug',
    ]);
    expect(o).toMatchObject({
      kubeconfig: '/etc/k.conf',
      hostnameOverride: 'node-a',
      clusterCIDRs: ['10.244.0.0/16', 'fd00:10:244::/64'],
      serviceCIDRs: ['10.96.0.0/16'],
      nodePortAddresses: ['192.0.2.0/24'],
      masqueradeAll: true,
      minSyncPeriodMs: 0,
      syncPeriodMs: 60_000,
      featureGates: 'TopologyAwareProxying=true',
      serviceProxyName: 'ours',
      table: 'knp',
      offloadPacketThreshold: 0,
      offloadInterfaces: ['eth0', 'eth1'],
      endpointShape: 'map',
      netns: 'node',
      dryRun: true,
      logLevel: 'debug',
    });
  });

  it('takes --endpoint-shape=chains and documents both shapes and the default in the usage text', () => {
    expect(run(['--endpoint-shape=chains']).endpointShape).toBe('chains');
    expect(USAGE).toMatch(/--endpoint-shape map\|chains .*shared endpoint maps\n.*\(default\) or .*per-endpoint chains/);
  });

  it('knows the cleanup subcommand', () => {
    expect(parseCommandLine(['cleanup', '--table', 'x']).command).toBe('cleanup');
  });

  it.each([
    [['--cluster-cidr=10.244.0.0'], /--cluster-cidr: "10.244.0.0" is not a CIDR/],
    [['--cluster-cidr=10.244.0.0/33'], /not a CIDR/],
    [['--service-cluster-ip-range=banana/8'], /not a CIDR/],
    [['--min-sync-period=fast'], /--min-sync-period: invalid duration/],
    [['--sync-period=0'], /--sync-period must be greater than 0/],
    [['--table=has space'], /--table/],
    [['--table=' + 'x'.repeat(300)], /--table/],
    [['--log-level=loud'], /--log-level/],
    [['--offload-packet-threshold=-1'], /--offload-packet-threshold/],
    [['--offload-packet-threshold=ten'], /--offload-packet-threshold/],
    [['--endpoint-shape=maps'], /--endpoint-shape: "maps" is not chains or map/],
    [['--endpoint-shape='], /--endpoint-shape/],
    [['--no-such-flag'], /Unknown option/],
    [['--manifests=x', '--kubeconfig=y'], /exclusive/],
    [['--metrics-bind-address=nope'], /ADDRESS:PORT/],
    [['frobnicate'], /unexpected argument/],
    [['--service-proxy-name=-bad-'], /label value/],
  ])('rejects %j with a clear message', (argv, message) => {
    expect(() => parseCommandLine(argv)).toThrow(FlagError);
    expect(() => parseCommandLine(argv)).toThrow(message);
  });
});
