// The shipped DaemonSet must start the agent with flags it accepts and grant
// exactly the API access the streams use.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseCommandLine } from '../../src/cli/flags.ts';

const docs = parseAllDocuments(readFileSync(new URL('../../deploy/kube-nft-proxy.yaml', import.meta.url), 'utf8')).map((d) => d.toJS());

describe('deploy/kube-nft-proxy.yaml', () => {
  it('passes flags the agent accepts', () => {
    const ds = docs.find((d) => d.kind === 'DaemonSet');
    const args: string[] = ds.spec.template.spec.containers[0].args.map((a: string) => a.replace('$(NODE_NAME)', 'node-a'));
    const cmd = parseCommandLine(args);
    expect(cmd.command).toBe('run');
  });

  it("shows, commented out, an init container of the agent's image that sets the conntrack sysctls (--init-only)", () => {
    const text = readFileSync(new URL('../../deploy/kube-nft-proxy.yaml', import.meta.url), 'utf8');
    const lines = text.split('\n');
    const from = lines.findIndex((l) => l.trim() === '# initContainers:');
    expect(from).toBeGreaterThan(0);
    const block: string[] = [];
    for (const l of lines.slice(from)) {
      if (!l.trim().startsWith('#')) break;
      block.push(l.replace(/^(\s*)# ?/, '$1'));
    }
    const init = parseAllDocuments(block.join('\n'))[0]!.toJS().initContainers[0];
    const agent = docs.find((d) => d.kind === 'DaemonSet').spec.template.spec.containers[0];
    expect(init.image).toBe(agent.image);
    expect(init.securityContext).toEqual({ privileged: true });
    expect(parseCommandLine(init.args)).toMatchObject({ command: 'run', initOnly: true });
  });

  it('grants list and watch on what the agent watches, and nothing it does not use', () => {
    const role = docs.find((d) => d.kind === 'ClusterRole');
    const grants = new Map<string, string[]>();
    for (const r of role.rules) for (const res of r.resources) grants.set(res, r.verbs);
    for (const res of ['services', 'nodes', 'endpointslices']) expect(grants.get(res)).toEqual(['list', 'watch']);
    expect([...grants.keys()].sort()).toEqual(['endpointslices', 'events', 'nodes', 'services']);
    // Events: only created (src/streams/api/post-event.ts), only through events.k8s.io.
    const events = role.rules.filter((r: { resources: string[] }) => r.resources.includes('events'));
    expect(events).toEqual([{ apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] }]);
  });

  it('keeps /metrics on loopback unless the operator asks, and gives a slow start a startupProbe', () => {
    const ds = docs.find((d) => d.kind === 'DaemonSet');
    const c = ds.spec.template.spec.containers[0];
    const cmd = parseCommandLine(c.args.map((a: string) => a.replace('$(NODE_NAME)', 'node-a')));
    if (cmd.command !== 'run') throw new Error('not a run command');
    expect(cmd.options.metricsBindAddress).toMatch(/^127\.0\.0\.1:/);
    expect(c.startupProbe.httpGet).toEqual({ path: '/livez', port: 10256 });
    expect(c.startupProbe.periodSeconds * c.startupProbe.failureThreshold).toBeGreaterThanOrEqual(120);
  });

  it("requests memory for the idle agent and limits it above a start's peak, a restart's included", () => {
    const c = docs.find((d) => d.kind === 'DaemonSet').spec.template.spec.containers[0];
    const mib = (q: string) => Number(/^(\d+)Mi$/.exec(q)![1]);
    // bench:sync (bench/RESULTS.md: the two full runs at 6027bd1): idle 112-113 MiB at 10k
    // Services x 10 endpoints; the highest peak the manifest claims to cover, a restart's at
    // 44k x 1, 500-506 MiB.
    expect(mib(c.resources.requests.memory)).toBeGreaterThanOrEqual(113);
    expect(mib(c.resources.limits.memory)).toBeGreaterThanOrEqual(506);
    expect(c.resources.limits.cpu).toBeUndefined();
  });
});

describe('deploy/kubeadm/kube-nft-proxy.yaml', () => {
  const kubeadm = parseAllDocuments(readFileSync(new URL('../../deploy/kubeadm/kube-nft-proxy.yaml', import.meta.url), 'utf8')).map((d) =>
    d.toJS(),
  );
  const ds = kubeadm.find((d) => d.kind === 'DaemonSet');
  const pod = ds.spec.template.spec;

  it("runs on kube-proxy's own ServiceAccount and ConfigMap, as kubeadm runs kube-proxy", () => {
    expect(kubeadm.map((d) => d.kind)).toEqual(['DaemonSet']);
    expect(pod.serviceAccountName).toBe('kube-proxy');
    expect(pod.volumes.find((v: { name: string }) => v.name === 'kube-proxy').configMap.name).toBe('kube-proxy');
    expect(pod.containers[0].volumeMounts.find((m: { name: string }) => m.name === 'kube-proxy').mountPath).toBe('/var/lib/kube-proxy');
    // The same memory request and limit as the plain DaemonSet.
    expect(pod.containers[0].resources).toEqual(docs.find((d) => d.kind === 'DaemonSet').spec.template.spec.containers[0].resources);
  });

  it("starts with kubeadm's generated config.conf unchanged", () => {
    const fixture = readFileSync(new URL('../config/fixtures/kubeadm-v1.32-config.conf', import.meta.url), 'utf8');
    const args: string[] = pod.containers[0].args.map((a: string) => a.replace('$(NODE_NAME)', 'node-a'));
    const cmd = parseCommandLine(args, (path) => {
      expect(path).toBe('/var/lib/kube-proxy/config.conf');
      return fixture;
    });
    if (cmd.command !== 'run') throw new Error(cmd.command);
    expect(cmd.options).toMatchObject({
      hostnameOverride: 'node-a',
      kubeconfig: '/var/lib/kube-proxy/kubeconfig.conf',
      healthzBindAddress: '0.0.0.0:10256',
    });
    expect(cmd.ignoredFlags).toEqual([]);
    expect(pod.containers[0].livenessProbe.httpGet.port).toBe(10256);
  });
});
