// The flowtable VM harness, proven: the guest boots, reports its command's
// output and exit code, is killed on timeout, and its kernel offloads a long
// TCP flow through a flowtable (nft CLI as the oracle programming the router
// namespace, the KEP-4963 rule) while a short flow is left alone.
//
// Never skipped: a VM that cannot boot fails these tests with its console log.

import { beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, runInVm, VmError, type VmRunResult } from './vm.ts';

interface Entry {
  line: string;
  sport: number;
  dport: number;
  offloaded: boolean;
}

interface CliOffloadObservations {
  ruleset: string;
  longPort: number;
  shortPort: number;
  longWhileOpen: Entry[];
  shortWhileOpen: Entry[];
  longAfterClose: Entry[];
}

describe('flowtable VM harness', () => {
  it('runs a command in the guest kernel and returns its output and exit code', { timeout: 120_000 }, async () => {
    const r = await runInVm({
      script:
        'uname -r; pwd; echo "$KNP_GREETING"; echo to-stderr >&2; [ -e /proc/sys/net/netfilter ] && lsmod | grep -c ' +
        '"^nf_flow_table"; exit 3',
      env: { KNP_GREETING: "it's here" },
      timeoutMs: 90_000,
    });
    const [release, cwd, greeting, flowModules] = r.stdout.trim().split('\n');
    expect(release).toMatch(/^6\.1\.\d+-\d+-amd64$/);
    expect(cwd).toBe(REPO_ROOT);
    expect(greeting).toBe("it's here");
    // nf_flow_table and nf_flow_table_inet, loaded by stage 2.
    expect(Number(flowModules)).toBe(2);
    expect(r.stderr).toBe('to-stderr\n');
    expect(r.exitCode).toBe(3);
    expect(r.consoleLog).toContain('knp-stage2: command exited with 3');
    expect(r.bootMs).toBeGreaterThan(0);
    console.log(`VM boot ${r.bootMs} ms, whole run ${r.totalMs} ms`);
  });

  it('kills a VM that runs past its time and says so with the console log', { timeout: 60_000 }, async () => {
    const started = Date.now();
    const err = await runInVm({ command: ['sleep', '600'], timeoutMs: 4_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VmError);
    expect((err as VmError).code).toBe('ERR_VM_TIMEOUT');
    expect((err as VmError).message).toContain('guest console');
    // Well short of the 600 s the command wanted (slack for preparation on a busy host).
    expect(Date.now() - started).toBeLessThan(40_000);
  });
});

describe('flowtables in the guest kernel (nft CLI oracle)', () => {
  let run: VmRunResult;
  let obs: CliOffloadObservations;

  beforeAll(async () => {
    run = await runInVm({ command: ['node', 'test/vm/scenarios/nft-cli-offload.ts'], timeoutMs: 150_000 });
    if (run.exitCode !== 0) {
      throw new Error(`scenario failed with exit code ${run.exitCode}\n${run.stderr}\n--- console ---\n${run.consoleLog.slice(-4000)}`);
    }
    obs = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as CliOffloadObservations;
    console.log(`offload scenario: boot ${run.bootMs} ms, scenario ${run.commandMs} ms, whole VM ${run.totalMs} ms`);
  }, 180_000);

  it('accepts the flowtable and the KEP-4963 rule (which lists back as flow add)', () => {
    expect(obs.ruleset).toMatch(/flowtable ft \{\s*hook ingress priority filter\s*devices = \{ r-client, r-server \}/);
    expect(obs.ruleset).toContain('ct original ip daddr @cluster-ips ct packets > 20 flow add @ft');
  });

  it('offloads a long TCP flow while it is open', () => {
    expect(obs.longWhileOpen).toHaveLength(1);
    expect(obs.longWhileOpen[0]!.offloaded).toBe(true);
    expect(obs.longWhileOpen[0]!.line).toContain('[OFFLOAD]');
  });

  it('does not offload a flow under the packet threshold', () => {
    expect(obs.shortWhileOpen).toHaveLength(1);
    expect(obs.shortWhileOpen[0]!.line).toContain('ESTABLISHED');
    expect(obs.shortWhileOpen[0]!.offloaded).toBe(false);
  });

  it('takes the flow out of the flowtable when it is closed (FIN)', () => {
    expect(obs.longAfterClose).toHaveLength(1);
    expect(obs.longAfterClose[0]!.offloaded).toBe(false);
  });
});
