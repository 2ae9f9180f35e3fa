// The --config file as kube-proxy 1.32 reads it: kubeadm's file unchanged, and
// every class of bad value refused with the field's path.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatConfigFile, parseConfigFile } from '../../src/config/config-file.ts';
import { ENDPOINT_SHAPES as OWN_SHAPES } from '../../src/config/own-config.ts';
import { ConfigError } from '../../src/config/schema.ts';
import { ENDPOINT_SHAPES } from '../../src/reconciler/config.ts';

const KUBEADM = readFileSync(new URL('./fixtures/kubeadm-v1.32-config.conf', import.meta.url), 'utf8');
const HEAD = 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n';

function refused(text: string): ConfigError {
  try {
    parseConfigFile(text);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('accepted');
}

describe("kubeadm's generated config.conf (Kubernetes 1.32)", () => {
  const c = parseConfigFile(KUBEADM);

  it("decodes unchanged, with kube-proxy's defaults where kubeadm writes zeros and nulls", () => {
    expect(c.kubeProxy).toMatchObject({
      bindAddress: '0.0.0.0',
      healthzBindAddress: '0.0.0.0:10256',
      metricsBindAddress: '127.0.0.1:10249',
      clusterCIDR: '10.244.0.0/16',
      configSyncPeriod: 900_000,
      oomScoreAdj: -999,
      mode: '',
      nftables: { masqueradeBit: 14, masqueradeAll: false, syncPeriod: 30_000, minSyncPeriod: 1000 },
      clientConnection: {
        kubeconfig: '/var/lib/kube-proxy/kubeconfig.conf',
        qps: 5,
        burst: 10,
        contentType: 'application/vnd.kubernetes.protobuf',
      },
      conntrack: { maxPerCore: 32768, min: 131072, tcpEstablishedTimeout: 86_400_000, tcpCloseWaitTimeout: 3_600_000, udpTimeout: 0 },
      logging: { format: 'json', flushFrequency: 5000, verbosity: 0 },
    });
    expect(c.hasOwnDocument).toBe(false);
    expect(c.own.table).toBe('kube-nft-proxy');
  });

  it('writes back (--write-config-to) what reads back the same', () => {
    const again = parseConfigFile(formatConfigFile(c));
    expect(again.kubeProxy).toEqual(c.kubeProxy);
    expect(again.own).toEqual(c.own);
    expect(again.hasOwnDocument).toBe(true);
  });

  it('defaults the healthz and metrics addresses to IPv6 ones for an IPv6 bindAddress, and appends ports', () => {
    const v6 = parseConfigFile(`${HEAD}bindAddress: "::"\n`).kubeProxy;
    expect([v6.healthzBindAddress, v6.metricsBindAddress]).toEqual(['[::]:10256', '[::1]:10249']);
    const bare = parseConfigFile(`${HEAD}healthzBindAddress: 127.0.0.1\nmetricsBindAddress: "::1"\n`).kubeProxy;
    expect([bare.healthzBindAddress, bare.metricsBindAddress]).toEqual(['127.0.0.1:10256', '[::1]:10249']);
  });
});

describe('our own document', () => {
  it('follows the KubeProxyConfiguration in the same file', () => {
    const c = parseConfigFile(
      `${HEAD}---\napiVersion: kubenftproxy.io/v1alpha1\nkind: KubeNftProxyConfiguration\ntable: knp\nfullSyncPeriod: ` +
        `2h\noffload:\n  packetThreshold: 0\n`,
    );
    expect(c.own).toMatchObject({ table: 'knp', fullSyncPeriod: 7_200_000, offload: { packetThreshold: 0, interfaces: [] } });
    expect(c.hasOwnDocument).toBe(true);
  });

  it('knows the same endpoint shapes as the reconciler', () => {
    expect([...OWN_SHAPES].sort()).toEqual([...ENDPOINT_SHAPES].sort());
  });
});

describe('strict decoding: every class of bad value is refused with its path', () => {
  it.each([
    ['an unknown top-level field', `${HEAD}udpIdleTimeout: 250ms\n`, 'udpIdleTimeout', /unknown field/],
    ['an unknown nested field', `${HEAD}nftables:\n  masqueradeBits: 14\n`, 'nftables.masqueradeBits', /unknown field/],
    ['a field in the wrong case', `${HEAD}ClusterCIDR: 10.0.0.0/8\n`, 'ClusterCIDR', /unknown field/],
    ['a duplicate field', `${HEAD}mode: nftables\nmode: nftables\n`, '', /not valid YAML/],
    ['a string for a number', `${HEAD}oomScoreAdj: low\n`, 'oomScoreAdj', /expected a whole number/],
    ['a number for a string', `${HEAD}clusterCIDR: 10\n`, 'clusterCIDR', /expected a string/],
    ['a string for a boolean', `${HEAD}nftables:\n  masqueradeAll: "yes"\n`, 'nftables.masqueradeAll', /expected true or false/],
    ['a number for a duration', `${HEAD}nftables:\n  syncPeriod: 30\n`, 'nftables.syncPeriod', /expected a duration/],
    ['a malformed duration', `${HEAD}configSyncPeriod: 15 minutes\n`, 'configSyncPeriod', /invalid duration/],
    ['a scalar for a section', `${HEAD}conntrack: 5\n`, 'conntrack', /expected an object/],
    ['a scalar for a list', `${HEAD}nodePortAddresses: 10.0.0.0/8\n`, 'nodePortAddresses', /expected a list/],
    [
      'a non-boolean feature gate',
      `${HEAD}featureGates:\n  LoadBalancerIPMode: "on"\n`,
      'featureGates.LoadBalancerIPMode',
      /expected true or false/,
    ],
    ['an out-of-range int32', `${HEAD}oomScoreAdj: 3000000000\n`, 'oomScoreAdj', /out of range/],
    ['an out-of-range masquerade bit', `${HEAD}nftables:\n  masqueradeBit: 32\n`, 'nftables.masqueradeBit', /within the range \[0, 31\]/],
    [
      'a zero sync period after defaults? no: a negative one',
      `${HEAD}nftables:\n  syncPeriod: -1s\n`,
      'nftables.syncPeriod',
      /greater than 0/,
    ],
    ['a negative min sync period', `${HEAD}nftables:\n  minSyncPeriod: -1s\n`, 'nftables.minSyncPeriod', /greater than or equal to 0/],
    ['an oomScoreAdj out of range', `${HEAD}oomScoreAdj: 1001\n`, 'oomScoreAdj', /\[-1000, 1000\]/],
    ['a negative conntrack value', `${HEAD}conntrack:\n  min: -1\n`, 'conntrack.min', /greater than or equal to 0/],
    ['a negative burst', `${HEAD}clientConnection:\n  burst: -1\n`, 'clientConnection.burst', /non-negative/],
    [
      'an unknown content type',
      `${HEAD}clientConnection:\n  contentType: text/plain\n`,
      'clientConnection.contentType',
      /application\/json/,
    ],
    ['a bad bind address', `${HEAD}bindAddress: localhost\n`, 'bindAddress', /valid IP address/],
    ['a bad healthz address', `${HEAD}healthzBindAddress: "0.0.0.0:99999"\n`, 'healthzBindAddress', /IP:port/],
    ['a bad cluster CIDR', `${HEAD}clusterCIDR: 10.0.0.0/33\n`, 'clusterCIDR', /valid CIDR block/],
    ['two cluster CIDRs of one family', `${HEAD}clusterCIDR: 10.0.0.0/8,10.1.0.0/16\n`, 'clusterCIDR', /one CIDR allowed per IP family/],
    ['a bad NodePort address', `${HEAD}nodePortAddresses: [primary, nope]\n`, 'nodePortAddresses[1]', /valid CIDR or "primary"/],
    ['an iptables mode', `${HEAD}mode: iptables\n`, 'mode', /nftables proxy; set mode to nftables/],
    ['an unknown mode', `${HEAD}mode: userspace\n`, 'mode', /nftables or blank/],
    ['an unknown detect-local mode', `${HEAD}detectLocalMode: PodCIDR\n`, 'detectLocalMode', /must be one of ClusterCIDR, NodeCIDR/],
    ['BridgeInterface without a bridge', `${HEAD}detectLocalMode: BridgeInterface\n`, 'detectLocal.bridgeInterface', /must not be empty/],
    [
      'InterfaceNamePrefix without a prefix',
      `${HEAD}detectLocalMode: InterfaceNamePrefix\n`,
      'detectLocal.interfaceNamePrefix',
      /must not be empty/,
    ],
    [
      'an interface name too long',
      `${HEAD}detectLocal:\n  bridgeInterface: abcdefghijklmnop\n`,
      'detectLocal.bridgeInterface',
      /at most 15 bytes/,
    ],
    [
      'an iptables setting off its default',
      `${HEAD}iptables:\n  masqueradeAll: true\n`,
      'iptables.masqueradeAll',
      /does not apply.*set nftables.masqueradeAll instead/,
    ],
    ['an ipvs setting off its default', `${HEAD}ipvs:\n  scheduler: rr\n`, 'ipvs.scheduler', /the ipvs section does not apply/],
    [
      'a winkernel setting off its default',
      `${HEAD}winkernel:\n  enableDSR: true\n`,
      'winkernel.enableDSR',
      /the winkernel section does not apply/,
    ],
    ['a logging format', `${HEAD}logging:\n  format: xml\n`, 'logging.format', /not text or json/],
    ['a vmodule', `${HEAD}logging:\n  vmodule: [{filePattern: "proxier*", verbosity: 4}]\n`, 'logging.vmodule', /per-file verbosity/],
    [
      'a split stream',
      `${HEAD}logging:\n  options:\n    json:\n      splitStream: true\n`,
      'logging.options.json.splitStream',
      /not supported/,
    ],
    ['profiling', `${HEAD}enableProfiling: true\n`, 'enableProfiling', /profiler/],
    ['a port range', `${HEAD}portRange: 30000-31000\n`, 'portRange', /userspace/],
    ['a hidden-metrics version', `${HEAD}showHiddenMetricsForVersion: latest\n`, 'showHiddenMetricsForVersion', /version such as 1.31/],
    ['another kind', 'apiVersion: v1\nkind: ConfigMap\n', 'kind', /is not kubeproxy.config.k8s.io\/v1alpha1 KubeProxyConfiguration/],
    ['no kind at all', 'mode: nftables\n', 'apiVersion', /is not/],
    ['two KubeProxyConfigurations', `${HEAD}---\n${HEAD}`, 'document 2: kind', /a second KubeProxyConfiguration/],
    [
      'only our document',
      'apiVersion: kubenftproxy.io/v1alpha1\nkind: KubeNftProxyConfiguration\n',
      'kind',
      /holds no kubeproxy.config.k8s.io\/v1alpha1 KubeProxyConfiguration/,
    ],
    [
      'an unknown field of ours',
      `${HEAD}---\napiVersion: kubenftproxy.io/v1alpha1\nkind: KubeNftProxyConfiguration\ntables: x\n`,
      'document 2: tables',
      /unknown field/,
    ],
    [
      'a bad value of ours',
      `${HEAD}---\napiVersion: kubenftproxy.io/v1alpha1\nkind: KubeNftProxyConfiguration\noffload:\n  packetThreshold: -1\n`,
      'document 2: offload.packetThreshold',
      /out of range/,
    ],
    [
      'a bad table name of ours',
      `${HEAD}---\napiVersion: kubenftproxy.io/v1alpha1\nkind: KubeNftProxyConfiguration\ntable: "a b"\n`,
      'document 2: table',
      /must start with a letter/,
    ],
  ])('%s', (_what, text, path, message) => {
    const e = refused(text);
    expect(e.path).toBe(path);
    expect(e.message).toMatch(message);
    if (path !== '') expect(e.message.startsWith(`${path}: `)).toBe(true);
  });

  it('lists every problem, not only the first', () => {
    const e = refused(`${HEAD}oomScoreAdj: 5000\nnftables:\n  masqueradeBit: 99\n`);
    expect(e.message).toMatch(/nftables.masqueradeBit.*\n.*oomScoreAdj/s);
  });
});
