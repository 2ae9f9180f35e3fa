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
});
