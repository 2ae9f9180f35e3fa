// `npm start`: the agent on its bundled example manifests, in a dry run. What
// it prints must be what the examples ask for, KEPs included.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

function cli(args: string[]): string {
  return execFileSync(process.execPath, ['src/cli.ts', ...args], { cwd: root, encoding: 'utf8', timeout: 20_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

describe('the dry run on the bundled examples', () => {
  const text = cli(['--manifests', 'examples/', '--dry-run', '--hostname-override', 'node-a']);

  it('programs the example services in both families', () => {
    expect(text).toMatch(/^table ip kube-nft-proxy \{/m);
    expect(text).toMatch(/^table ip6 kube-nft-proxy \{/m);
    expect(text).toContain('10.96.0.10 . tcp . 80 : goto service-');
    expect(text).toContain('10.96.0.53 . udp . 53');
    expect(text).toContain('fd00:10:96::5c . sctp . 3868');
  });

  it('leaves out the headless service and the one labelled for another proxy (KEP-31)', () => {
    expect(text).not.toContain('demo/db/');
    expect(text).not.toContain('10.96.3.40');
  });

  it('programs the VIP load-balancer IP but not the Proxy one (KEP-1860)', () => {
    expect(text).toContain('198.51.100.10 . tcp . 80');
    expect(text).not.toContain('198.51.100.11');
  });

  it('renders the offload flowtable and rule (KEP-4963), and none with threshold 0', () => {
    expect(text).toMatch(/flowtable service-flowtable \{/);
    expect(text).toMatch(/ct original ip daddr @cluster-ips ct packets > 20 flow add @service-flowtable/);
    const off = cli(['--manifests', 'examples/', '--dry-run', '--hostname-override', 'node-a', '--offload-packet-threshold=0']);
    expect(off).not.toMatch(/flowtable service-flowtable|flow add/);
    expect(off).toContain('# flowtable offload off');
  });

  it('serves only its own services with --service-proxy-name', () => {
    const other = cli(['--manifests', 'examples/', '--dry-run', '--hostname-override', 'node-a', '--service-proxy-name=other-proxy']);
    expect(other).toContain('10.96.3.40');
    expect(other).not.toContain('10.96.0.10 ');
  });

  it('rejects a bad flag with a clear message and exit code 2', () => {
    try {
      cli(['--cluster-cidr=nope']);
      expect.unreachable();
    } catch (e: any) {
      expect(e.status).toBe(2);
      expect(String(e.stderr)).toMatch(/--cluster-cidr: "nope" is not a CIDR/);
    }
  });
});

describe('the library entry point', () => {
  it('exports every layer', async () => {
    const lib = await import('../../src/index.ts');
    for (const name of ['startAgent', 'NetlinkDataplane', 'FakeKernel', 'createClusterStreams', 'buildServicePorts', 'ServiceChangeTracker', 'Reconciler', 'syncRunner', 'renderRuleset', 'renderOperations', 'LinkMonitor', 'probeFlowtables']) {
      expect(typeof (lib as Record<string, unknown>)[name], name).toBe('function');
    }
  });
});
