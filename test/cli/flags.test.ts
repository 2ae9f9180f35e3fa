import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FlagError, parseCommandLine, type RunCommand, usage } from '../../src/cli/flags.ts';
import { parseDuration } from '../../src/config/duration.ts';

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
      syncPeriodMs: 30_000,
      fullSyncPeriodMs: 3_600_000,
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
      '--hostname-override',
      'node-a',
      '--cluster-cidr=10.244.0.0/16,fd00:10:244::/64',
      '--service-cluster-ip-range',
      '10.96.0.0/16',
      '--nodeport-addresses=192.0.2.0/24',
      '--masquerade-all',
      '--min-sync-period=0',
      '--sync-period=1m',
      '--full-sync-period=2h',
      '--feature-gates=TopologyAwareProxying=true',
      '--service-proxy-name=ours',
      '--table=knp',
      '--offload-packet-threshold=0',
      '--offload-interfaces=eth0,eth1',
      '--endpoint-shape',
      'map',
      '--netns',
      'node',
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
      fullSyncPeriodMs: 7_200_000,
      featureGates: 'KubeProxyAcceleration=false,LoadBalancerIPMode=true,TopologyAwareProxying=true',
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
    expect(usage()).toMatch(
      new RegExp(
        '--endpoint-shape map\\|chains +ports without affinity DNAT through slot ranges of shared endpoint maps\\n +' +
          '\\(default\\) or a cascade of per-endpoint chains',
      ),
    );
  });

  it('knows the cleanup subcommand', () => {
    expect(parseCommandLine(['cleanup', '--table', 'x']).command).toBe('cleanup');
  });

  it.each([
    [['--cluster-cidr=10.244.0.0'], /clusterCIDR: "10.244.0.0" must be a valid CIDR block/],
    [['--cluster-cidr=10.244.0.0/33'], /must be a valid CIDR/],
    [['--service-cluster-ip-range=banana/8'], /not a CIDR/],
    [['--min-sync-period=fast'], /--min-sync-period: invalid duration/],
    [['--sync-period=0'], /nftables.syncPeriod: must be greater than 0/],
    [['--full-sync-period=0'], /fullSyncPeriod: must be greater than 0/],
    [['--table=has space'], /table: "has space"/],
    [[`--table=${'x'.repeat(300)}`], /table: /],
    [['--log-level=loud'], /logLevel: "loud"/],
    [['--offload-packet-threshold=-1'], /--offload-packet-threshold/],
    [['--offload-packet-threshold=ten'], /--offload-packet-threshold/],
    [['--endpoint-shape=maps'], /endpointShape: "maps" is not chains or map/],
    [['--endpoint-shape=chain'], /endpointShape/],
    [['--no-such-flag'], /Unknown option/],
    [['--manifests=x', '--kubeconfig=y'], /exclusive/],
    [['--metrics-bind-address=nope'], /metricsBindAddress: "nope" must be IP:port/],
    [['frobnicate'], /unexpected argument/],
    [['--service-proxy-name=-bad-'], /label value/],
    [['--cluster-cidr=10.244.0.0/16,10.245.0.0/16'], /clusterCIDR: only one CIDR allowed per IP family/],
    [['--proxy-mode=iptables'], /mode: "iptables": kube-nft-proxy is an nftables proxy/],
    [['--proxy-mode=userspace'], /mode: "userspace" must be nftables or blank/],
    [['--detect-local-mode=Magic'], /detectLocalMode: "Magic" must be one of/],
    [['--detect-local-mode=BridgeInterface'], /detectLocal.bridgeInterface: must not be empty/],
    [['--detect-local-mode=InterfaceNamePrefix'], /detectLocal.interfaceNamePrefix: must not be empty/],
    [['--oom-score-adj=-1001'], /--oom-score-adj: "-1001" is not a whole number in \[-1000, 1000\]/],
    [['--iptables-masquerade-bit=32'], /--iptables-masquerade-bit/],
    [['--logging-format=xml'], /logging.format: "xml" is not text or json/],
    [['--v=-1'], /--v: "-1"/],
    [['--feature-gates=NFTablesProxyMode=false'], /cannot be honoured: kube-nft-proxy is the nftables proxy mode/],
    [['--feature-gates=Nope=true'], /--feature-gates: unknown feature gate Nope/],
    [['--ipvs-scheduler=rr'], /--ipvs-scheduler is not supported: kube-nft-proxy is an nftables proxy, not IPVS/],
    [['--profiling'], /--profiling is not supported/],
    [['--masquerade-all=maybe'], /--masquerade-all: "maybe" is not true or false/],
    [['--kube-api-content-type=application/yaml'], /clientConnection.contentType/],
  ])('rejects %j with a clear message', (argv, message) => {
    expect(() => parseCommandLine(argv)).toThrow(FlagError);
    expect(() => parseCommandLine(argv)).toThrow(message);
  });
});

describe("kube-proxy's flags", () => {
  it('map onto the options with their kube-proxy meanings', () => {
    const o = run([
      '--proxy-mode=nftables',
      '--detect-local-mode=InterfaceNamePrefix',
      '--pod-interface-name-prefix=cali',
      '--iptables-masquerade-bit=13',
      '--masquerade-all=false',
      '--bind-address=192.0.2.10',
      '--healthz-bind-address=',
      '--metrics-bind-address=[::1]:9999',
      '--kube-api-qps=20.5',
      '--kube-api-burst=40',
      '--kube-api-content-type=application/json',
      '--master=https://192.0.2.1:6443',
      '--iptables-sync-period=45s',
      '--iptables-min-sync-period=2s',
      '--conntrack-max-per-core=0',
      '--show-hidden-metrics-for-version=1.31',
    ]);
    expect(o).toMatchObject({
      detectLocal: { mode: 'InterfaceNamePrefix', interfaceNamePrefix: 'cali' },
      masqueradeBit: 13,
      masqueradeAll: false,
      bindAddress: '192.0.2.10',
      healthzBindAddress: '',
      metricsBindAddress: '[::1]:9999',
      syncPeriodMs: 45_000,
      minSyncPeriodMs: 2000,
      apiClient: { qps: 20.5, burst: 40, contentType: 'application/json', server: 'https://192.0.2.1:6443' },
    });
  });

  it('takes NodeCIDR and BridgeInterface', () => {
    expect(run(['--detect-local-mode=NodeCIDR']).detectLocal).toEqual({ mode: 'NodeCIDR' });
    expect(run(['--detect-local-mode=BridgeInterface', '--pod-bridge-interface=cbr0']).detectLocal).toEqual({
      mode: 'BridgeInterface',
      bridgeInterface: 'cbr0',
    });
    expect(run([]).detectLocal).toEqual({ mode: 'ClusterCIDR' });
  });

  it.each([
    [[], 'info'],
    [['--v=2'], 'info'],
    [['-v', '3'], 'debug'],
    [['-v4'], 'debug'],
    [['-v=6'], 'trace'],
    [['--v', '4'], 'debug'],
    [['--v=5'], 'trace'],
    [['--v=9', '--log-level=warn'], 'warn'],
  ])('maps %j onto the pino level %s', (argv, level) => {
    expect(run(argv).logLevel).toBe(level);
  });

  it('takes --logging-format text or json (json by default)', () => {
    const c = (argv: string[]) => parseCommandLine(argv) as RunCommand;
    expect(c([]).logFormat).toBe('json');
    expect(c(['--logging-format=text']).logFormat).toBe('text');
  });

  it('takes --cleanup as kube-proxy does', () => {
    expect(parseCommandLine(['--cleanup']).command).toBe('cleanup');
    expect(parseCommandLine(['--cleanup=false']).command).toBe('run');
  });

  it('takes --init-only as kube-proxy does', () => {
    const c = (argv: string[]) => parseCommandLine(argv) as RunCommand;
    expect(c(['--init-only'])).toMatchObject({ command: 'run', initOnly: true });
    expect(c(['--init-only=false']).initOnly).toBe(false);
    expect(c([]).initOnly).toBe(false);
  });

  it('parses a good command line without making the --help text (no ICU collator paged in at start-up)', () => {
    // localeCompare is what would load a collator; in a child, so that this process's own stays as it is.
    const flags = new URL('../../src/cli/flags.ts', import.meta.url).href;
    const script = `String.prototype.localeCompare = () => { throw new Error('a collator at start-up'); };
      const { parseCommandLine } = await import(${JSON.stringify(flags)});
      if (parseCommandLine(['--kubeconfig=/dev/null']).command !== 'run') throw new Error('not parsed');`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
  });

  it('groups kube-proxy flags and ours in --help, and says why refused ones are refused', () => {
    const text = usage();
    const at = (s: string) => text.indexOf(s);
    expect(at("kube-proxy's flags")).toBeGreaterThan(-1);
    expect(at("kube-nft-proxy's own flags")).toBeGreaterThan(at("kube-proxy's flags"));
    expect(text.slice(at("kube-proxy's flags"), at('Logging'))).toMatch(/--detect-local-mode MODE/);
    expect(text.slice(at("kube-nft-proxy's own flags"), at('What to do'))).toMatch(/--full-sync-period DURATION/);
    expect(text).toMatch(/--ipvs-scheduler +kube-nft-proxy is an nftables proxy, not IPVS/);
  });
});

describe('--config and the flags', () => {
  const files: Record<string, string> = {
    '/kubeadm.conf': readFileSync(new URL('../config/fixtures/kubeadm-v1.32-config.conf', import.meta.url), 'utf8'),
    '/ours.conf': [
      'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
      'kind: KubeProxyConfiguration',
      'clusterCIDR: 10.100.0.0/16',
      '---',
      'apiVersion: kubenftproxy.io/v1alpha1',
      'kind: KubeNftProxyConfiguration',
      'table: from-file',
      '',
    ].join('\n'),
  };
  const read = (p: string) => {
    const t = files[p];
    if (t === undefined) throw Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' });
    return t;
  };
  const cmd = (argv: string[]) => parseCommandLine(argv, read) as RunCommand;

  it("runs kubeadm's file unchanged, with kube-proxy's defaults", () => {
    const c = cmd(['--config=/kubeadm.conf', '--hostname-override=node-a']);
    expect(c.options).toMatchObject({
      kubeconfig: '/var/lib/kube-proxy/kubeconfig.conf',
      hostnameOverride: 'node-a',
      clusterCIDRs: ['10.244.0.0/16'],
      nodePortAddresses: ['primary'],
      syncPeriodMs: 30_000,
      minSyncPeriodMs: 1000,
      masqueradeBit: 14,
      healthzBindAddress: '0.0.0.0:10256',
      metricsBindAddress: '127.0.0.1:10249',
      detectLocal: { mode: 'ClusterCIDR' },
      apiClient: { qps: 5, burst: 10, contentType: 'application/vnd.kubernetes.protobuf' },
    });
    expect(c.oomScoreAdj).toBe(-999);
    expect(c.conntrack).toMatchObject({
      maxPerCore: 32768,
      min: 131072,
      tcpEstablishedTimeout: 86_400_000,
      tcpCloseWaitTimeout: 3_600_000,
    });
  });

  it('lets the file win over kube-proxy flags, but not over logging flags and --hostname-override', () => {
    const c = cmd([
      '--config=/kubeadm.conf',
      '--cluster-cidr=10.1.0.0/16',
      '--min-sync-period=5s',
      '--v=4',
      '--logging-format=text',
      '--hostname-override=n1',
    ]);
    expect(c.options.clusterCIDRs).toEqual(['10.244.0.0/16']);
    expect(c.options.minSyncPeriodMs).toBe(1000);
    expect(c.ignoredFlags).toEqual(['--cluster-cidr', '--min-sync-period']);
    expect(c.options.logLevel).toBe('debug');
    expect(c.logFormat).toBe('text');
    expect(c.options.hostnameOverride).toBe('n1');
  });

  it('applies our flags when the file has no document of ours, and the file when it has one', () => {
    expect(cmd(['--config=/kubeadm.conf', '--table=flag-table']).options.table).toBe('flag-table');
    const c = cmd(['--config=/ours.conf', '--table=flag-table']);
    expect(c.options.table).toBe('from-file');
    expect(c.ignoredFlags).toEqual(['--table']);
    expect(c.options.clusterCIDRs).toEqual(['10.100.0.0/16']);
  });

  it('names the file and the field of a bad value', () => {
    files['/bad.conf'] = 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nnftables:\n  masqueradeBit: 40\n';
    expect(() => cmd(['--config=/bad.conf'])).toThrow(/--config \/bad.conf.*nftables.masqueradeBit: 40 must be within the range \[0, 31\]/);
    expect(() => cmd(['--config=/missing.conf'])).toThrow(/--config: cannot read \/missing.conf/);
  });

  it('carries what --write-config-to writes', () => {
    const c = cmd(['--config=/ours.conf', '--write-config-to=/tmp/out.yaml']);
    expect(c.writeConfigTo).toBe('/tmp/out.yaml');
    expect(c.configuration.own.table).toBe('from-file');
  });
});
