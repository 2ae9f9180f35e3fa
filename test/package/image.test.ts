// The agent's OCI image, built here (scripts/build-image.sh: mmdebstrap, Node
// from the npm registry, the release tarballs, umoci) and run the way a
// container runtime would: its unpacked root filesystem, read-only, as the
// root of a process in its own mount and PID namespaces inside a network
// namespace, with the entrypoint, user, environment and capabilities the image
// declares, and nothing else (no_new_privs, bounding set = the declared
// capabilities). podman 4.3 cannot start containers on these machines (see
// README, Container image), so this is that runtime's work done by hand.
// The agent watches the fake API server (reached through a socket bridge
// into the namespace) and programs the namespace; the test reads the rules.

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { packageRoot } from '../../src/package-root.ts';
import { eventually, serviceObject, sliceObject } from '../e2e/agent-process.ts';
import { FakeApiServer } from '../fake-apiserver/index.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { ensureRelease } from './release-tarballs.ts';
import { imageEnv } from '../../bench/agent-child.ts';
import { containerfileEntrypoint } from '../../scripts/containerfile.ts';

const version = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;

interface ImageConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  User?: string;
  Env?: string[];
  WorkingDir?: string;
  Labels?: Record<string, string>;
}

/** The image's config, read from the OCI layout: index → manifest → config. */
function imageConfig(layout: string, tag: string): ImageConfig {
  const blob = (digest: string) => JSON.parse(readFileSync(join(layout, 'blobs', ...digest.split(':')), 'utf8'));
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as {
    manifests: Array<{ digest: string; annotations?: Record<string, string> }>;
  };
  const entry = index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === tag);
  if (!entry) throw new Error(`no tag ${tag} in ${layout}`);
  return (blob(blob(entry.digest).config.digest) as { config: ImageConfig }).config;
}

/** A host tool's absolute path: the runtime's process gets the image's environment only. */
function tool(name: string): string {
  return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
}

/** Capability numbers by name, from capsh itself (so the names are the kernel's). */
function capabilityNumber(name: string): number {
  const out = execFileSync('capsh', [`--explain=${name}`], { encoding: 'utf8' });
  const m = /\((\d+)\)/.exec(out);
  if (!m) throw new Error(`capsh does not know ${name}: ${out}`);
  return Number(m[1]);
}

// What a runtime does before starting the entrypoint: mounts (/proc, this
// namespace's /sys (sysfs shows the network namespace it is mounted from), a minimal /dev, a tmpfs /tmp, the kubeconfig as a volume),
// the root made read-only, then chroot, the capability bounding set, the user,
// no_new_privs, exec. $1 capsh, $2 root, $3 volume, $4 uid, $5 gid, $6 capabilities to drop, $7.. argv.
const RUNTIME = `set -e
capsh=$1 root=$2 volume=$3 uid=$4 gid=$5 drop=$6; shift 6
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount -t tmpfs -o mode=0755 tmpfs "$root/dev"
for d in null zero random urandom; do touch "$root/dev/$d"; mount --bind "/dev/$d" "$root/dev/$d"; done
mount -t tmpfs tmpfs "$root/tmp"
mount --bind "$volume" "$root/etc/kube-nft-proxy"
mount -o remount,bind,ro "$root"
entry=$1; shift
exec "$capsh" --chroot="$root" --drop="$drop" --gid="$gid" --uid="$uid" --no-new-privs --shell="$entry" -- "$@"`;

describe('the container image', { timeout: 120_000 }, () => {
  const work = mkdtempSync(join(tmpdir(), 'knp-image-'));
  const layout = join(work, 'oci');
  const bundle = join(work, 'bundle');
  const volume = join(work, 'volume');
  let api: FakeApiServer;
  let bridge: Server;
  let ns: NetNs;
  let socat: ChildProcess | undefined;
  let agent: ChildProcess | undefined;
  let output = '';
  let agentPid: number | undefined;

  beforeAll(async () => {
    await ensureRelease();
    execFileSync('bash', ['scripts/build-image.sh', layout], { cwd: packageRoot, stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 });
    execFileSync('umoci', ['unpack', '--image', `${layout}:${version}`, bundle], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
    api = await FakeApiServer.start({ tls: true });
    api.create('services', serviceObject({ name: 'web', clusterIP: '10.96.0.10' }));
    api.create('endpointslices', sliceObject('web', 'web-1', [{ ip: '10.244.0.11' }, { ip: '10.244.0.12' }]));
    // The API server listens on the host's loopback; the agent is in its own
    // network namespace. A unix socket (a file, so visible from both) bridges them.
    const port = Number(new URL(api.url).port);
    const sock = join(work, 'api.sock');
    bridge = createServer((c) => c.pipe(createConnection(port, '127.0.0.1').on('error', () => c.destroy())).pipe(c));
    await new Promise<void>((r) => bridge.listen(sock, r));
    ns = createNetns('knp-image');
    // nsenter execs socat itself (ip netns exec would fork it), so killing the child stops it.
    socat = spawn(
      tool('nsenter'),
      [`--net=${ns.path}`, tool('socat'), `TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr`, `UNIX-CONNECT:${sock}`],
      { stdio: 'ignore' },
    );
    mkdirSync(volume);
    mkdirSync(join(bundle, 'rootfs', 'etc', 'kube-nft-proxy'));
    api.writeKubeconfig(join(volume, 'kubeconfig'));
  }, 900_000);

  afterAll(async () => {
    if (agent && agent.exitCode === null) {
      // SIGTERM to the agent itself (PID 1 of its PID namespace: it handles
      // SIGTERM); unshare ignores it while it waits, and exits when the agent has.
      const exited = once(agent, 'exit');
      if (agentPid !== undefined) process.kill(agentPid, 'SIGTERM');
      else agent.kill('SIGKILL');
      const timer = setTimeout(() => agentPid !== undefined && process.kill(agentPid, 'SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    socat?.kill();
    ns?.destroy();
    bridge?.close();
    await api?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('declares the entrypoint, root with NET_ADMIN only, and holds only runtime contents', () => {
    const config = imageConfig(layout, version);
    // The Containerfile's ENTRYPOINT (its node flags are argued there, and bench:sync runs the agent with them), carried
    // through the build: the image's node on the installed package's command.
    expect(config.Entrypoint).toEqual(containerfileEntrypoint());
    expect(config.Entrypoint![0]).toBe('/usr/local/bin/node');
    expect(config.Entrypoint!.at(-1)).toBe('/app/node_modules/kube-nft-proxy/bin/kube-nft-proxy.js');
    // The Containerfile's environment, as bench:sync runs the agent.
    for (const [k, v] of Object.entries(imageEnv())) expect(config.Env).toContain(`${k}=${v}`);
    expect(config.User).toBe('0:0');
    expect(config.Labels?.['io.containers.capabilities']).toBe('NET_ADMIN');
    // The DaemonSet grants the same, and nothing else.
    const docs = parseAllDocuments(readFileSync(join(packageRoot, 'deploy/kube-nft-proxy.yaml'), 'utf8')).map((d) => d.toJS());
    const security = docs.find((d) => d.kind === 'DaemonSet').spec.template.spec.containers[0].securityContext;
    expect(security.capabilities).toEqual({ add: ['NET_ADMIN'], drop: ['ALL'] });
    expect(security.runAsUser).toBe(Number(config.User!.split(':')[0]));
    const rootfs = join(bundle, 'rootfs');
    // No shell, no package manager, no sources, tests or build tools.
    for (const absent of [
      'bin/sh',
      'bin/bash',
      'usr/bin/apt',
      'usr/bin/dpkg',
      'usr/bin/npm',
      'app/node_modules/kube-nft-proxy/src',
      'app/node_modules/kube-nft-proxy/test',
      'app/node_modules/typescript',
      'app/node_modules/vitest',
    ]) {
      expect(() => readdirSync(join(rootfs, absent)), absent).toThrow();
    }
    const addonDir = join(rootfs, 'app/node_modules/@kube-nft-proxy/linux-x64-gnu');
    expect(readdirSync(addonDir).sort()).toContain('kube_nft_proxy.node');
    const size = Number(execFileSync('du', ['-sm', rootfs], { encoding: 'utf8' }).split('\t')[0]);
    console.log(`image root filesystem: ${size} MiB unpacked`);
  });

  it('runs the agent from the image against the API server and programs the namespace', async () => {
    const config = imageConfig(layout, version);
    const spec = JSON.parse(readFileSync(join(bundle, 'config.json'), 'utf8')) as {
      process: { args: string[]; user: { uid: number; gid: number }; env: string[] };
    };
    const rootfs = join(bundle, 'rootfs');
    const keep = (config.Labels?.['io.containers.capabilities'] ?? '').split(',').map((c) => capabilityNumber(`cap_${c.toLowerCase()}`));
    const last = Number(readFileSync('/proc/sys/kernel/cap_last_cap', 'utf8'));
    const drop = Array.from({ length: last + 1 }, (_, i) => i)
      .filter((i) => !keep.includes(i))
      .join(',');
    const args = [
      ...spec.process.args,
      '--kubeconfig=/etc/kube-nft-proxy/kubeconfig',
      '--hostname-override=node-a',
      '--min-sync-period=0',
      '--cluster-cidr=10.244.0.0/16',
      '--metrics-bind-address=127.0.0.1:0',
      '--healthz-bind-address=127.0.0.1:0',
    ];
    agent = spawn(
      tool('nsenter'),
      [
        `--net=${ns.path}`,
        tool('unshare'),
        '--mount',
        '--pid',
        '--fork',
        '--kill-child=SIGTERM',
        '--propagation',
        'private',
        '/bin/sh',
        '-c',
        RUNTIME,
        'runtime',
        tool('capsh'),
        rootfs,
        volume,
        String(spec.process.user.uid),
        String(spec.process.user.gid),
        drop,
        ...args,
      ],
      // The image's environment only, as a runtime sets it.
      {
        env: Object.fromEntries(spec.process.env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)])),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    agent.stdout!.on('data', (d) => (output += d));
    agent.stderr!.on('data', (d) => (output += d));

    const rules = await eventually(
      async () => ns.tryExec('nft', ['list', 'table', 'ip', 'kube-nft-proxy']).stdout,
      (t) => t.includes('10.96.0.10 . tcp . 80'),
      60_000,
      `the agent's table; its output:\n${output}`,
    );
    expect(rules).toMatch(/10\.244\.0\.11/);
    expect(rules).toMatch(/10\.244\.0\.12/);

    // The process is the image's entrypoint, in the image's root, with exactly the declared privileges.
    // unshare's one child is the runtime script, which became capsh and then the entrypoint (exec, same pid).
    const pid = readFileSync(`/proc/${agent.pid}/task/${agent.pid}/children`, 'utf8').trim();
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).toContain('kube-nft-proxy.js');
    // Its root directory is the image's root filesystem (compared by inode: paths differ across mount namespaces).
    const [inRoot, image] = [statSync(`/proc/${pid}/root/`), statSync(rootfs)];
    expect([inRoot.dev, inRoot.ino]).toEqual([image.dev, image.ino]);
    expect(pid, 'the agent process').toBeDefined();
    agentPid = Number(pid);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => new RegExp(`^${name}:\\s+(.*)$`, 'm').exec(status)![1]!.trim();
    const mask = keep.reduce((m, c) => m | (1n << BigInt(c)), 0n);
    expect(BigInt(`0x${field('CapEff')}`)).toBe(mask);
    expect(BigInt(`0x${field('CapBnd')}`)).toBe(mask);
    expect(field('NoNewPrivs')).toBe('1');
    expect(field('Uid').split(/\s+/)[0]).toBe(String(spec.process.user.uid));
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, config.Entrypoint!.length)).toEqual(config.Entrypoint);

    // Watches work through the image too: a new Service shows up.
    api.create('services', serviceObject({ name: 'api', clusterIP: '10.96.0.20' }));
    api.create('endpointslices', sliceObject('api', 'api-1', [{ ip: '10.244.0.13' }]));
    await eventually(
      async () => ns.tryExec('nft', ['list', 'table', 'ip', 'kube-nft-proxy']).stdout,
      (t) => t.includes('10.96.0.20 . tcp . 80'),
      30_000,
      `the second service; agent output:\n${output}`,
    );
    expect(output).not.toMatch(/ERR_NATIVE_LOAD|"level":50/);
  });
});
