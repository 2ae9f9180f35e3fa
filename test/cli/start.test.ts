// `npm start`: the agent on its bundled example manifests, in a dry run. What
// it prints must be what the examples ask for, KEPs included.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseConfigFile } from '../../src/config/config-file.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

function cli(args: string[]): string {
  return execFileSync(process.execPath, ['src/cli.ts', ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 20_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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

  it('renders the offload flowtable and rule (KEP-4963) once its alpha gate is on, and none with threshold 0', () => {
    expect(text).not.toMatch(/flowtable service-flowtable|flow add/);
    const on = cli([
      '--manifests',
      'examples/',
      '--dry-run',
      '--hostname-override',
      'node-a',
      '--feature-gates=KubeProxyAcceleration=true',
    ]);
    expect(on).toMatch(/flowtable service-flowtable \{/);
    expect(on).toMatch(/ct original ip daddr @cluster-ips ct packets > 20 flow add @service-flowtable/);
    const off = cli([
      '--manifests',
      'examples/',
      '--dry-run',
      '--hostname-override',
      'node-a',
      '--feature-gates=KubeProxyAcceleration=true',
      '--offload-packet-threshold=0',
    ]);
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
      expect(String(e.stderr)).toMatch(/clusterCIDR: "nope" must be a valid CIDR block/);
    }
  });
});

describe('first run', () => {
  const run = (args: string[]) => spawnSync(process.execPath, ['src/cli.ts', ...args], { cwd: root, encoding: 'utf8', timeout: 20_000 });

  it('`npm start` renders for the example node, without a warning about it', () => {
    const script = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
    const args = script.split(' ').slice(2);
    const r = run(args);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^# kube-nft-proxy --dry-run for node node-a:/);
    expect(r.stderr).not.toMatch(/Node object was not found/);
  });

  it('says once, at warn level, when this node has no Node object', () => {
    const r = run(['--manifests', 'examples/', '--dry-run', '--hostname-override', 'ghost']);
    const warnings = r.stderr.split('\n').filter((l) => l.includes('Node object was not found'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 40, nodeName: 'ghost' });
  });

  it('logs one readable line per event with --logging-format=text', () => {
    const r = run(['--manifests', 'examples/', '--dry-run', '--hostname-override', 'ghost', '--logging-format=text']);
    const line = r.stderr.split('\n').find((l) => l.includes('Node object was not found'))!;
    expect(line).toMatch(
      /^W\d{4} \d\d:\d\d:\d\d\.\d{6} \d+ kube-nft-proxy\] "this node's Node object was not found.*" dryRun=true nodeName="ghost"$/,
    );
  });
});

describe('--config through the command line', () => {
  const fixture = join(root, 'test/config/fixtures/kubeadm-v1.32-config.conf');

  it("writes the effective configuration of kubeadm's file with --write-config-to, which reads back the same", () => {
    const dir = mkdtempSync(join(tmpdir(), 'knp-config-'));
    try {
      const out = join(dir, 'effective.yaml');
      execFileSync(process.execPath, ['src/cli.ts', `--config=${fixture}`, `--write-config-to=${out}`, '--v=3'], { cwd: root });
      const text = readFileSync(out, 'utf8');
      const c = parseConfigFile(text);
      expect(c.kubeProxy.nftables).toEqual({ masqueradeAll: false, masqueradeBit: 14, syncPeriod: 30_000, minSyncPeriod: 1000 });
      expect(c.kubeProxy.logging.verbosity).toBe(3);
      expect(c.kubeProxy.clusterCIDR).toBe('10.244.0.0/16');
      expect(c.own.table).toBe('kube-nft-proxy');
      expect(text).toContain('kind: KubeNftProxyConfiguration');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits 2 naming the field of a bad value', () => {
    const dir = mkdtempSync(join(tmpdir(), 'knp-config-'));
    try {
      const bad = join(dir, 'bad.conf');
      execFileSync('sh', ['-c', `sed 's/^mode: ""/mode: ipvs/' ${fixture} > ${bad}`]);
      const r = spawnSync(process.execPath, ['src/cli.ts', `--config=${bad}`, '--dry-run'], { cwd: root, encoding: 'utf8' });
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/mode: "ipvs": kube-nft-proxy is an nftables proxy/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the library entry point', () => {
  it('exports every layer', async () => {
    const lib = await import('../../src/index.ts');
    for (const name of [
      'startAgent',
      'NetlinkDataplane',
      'FakeKernel',
      'createClusterStreams',
      'buildServicePorts',
      'ServiceChangeTracker',
      'Reconciler',
      'syncRunner',
      'renderRuleset',
      'renderOperations',
      'LinkMonitor',
      'probeFlowtables',
    ]) {
      expect(typeof (lib as Record<string, unknown>)[name], name).toBe('function');
    }
  });
});
