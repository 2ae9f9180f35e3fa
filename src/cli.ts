// kube-nft-proxy's command line: run the agent, print a dry run, remove our tables, or
// set the node's conntrack sysctls and exit (--init-only).

import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { apiConnectionOptions, netnsPath, startAgent } from './agent/agent.ts';
import { dryRun } from './agent/dry-run.ts';
import type { AgentOptions } from './agent/options.ts';
import { removeOurTables } from './agent/table-ownership.ts';
import { applyOomScoreAdj, applySysctls, conntrackSysctls, growConntrackHashsize } from './agent/node-settings.ts';
import { watchConfigFile } from './cli/config-watch.ts';
import { FlagError, parseCommandLine, type RunCommand, usage } from './cli/flags.ts';
import { setAgentV8Flags } from './cli/v8-flags.ts';
import { formatConfigFile } from './config/config-file.ts';
import { FeatureGateError } from './config/feature-gates.ts';
import { loadedAddon, loadNative } from './native/addon.ts';
import { NetlinkDataplane } from './nft/netlink/netlink-dataplane.ts';
import { createLogger, type Logger } from './observability/logger.ts';
import { packageRoot } from './package-root.ts';
import { ForeignTableError } from './reconciler/ownership.ts';
import { connect } from './streams/api/api-connection.ts';

async function cleanup(options: AgentOptions, logger: Logger): Promise<void> {
  const dataplane = new NetlinkDataplane({ netns: netnsPath(options.netns) });
  // Only tables bearing our mark; absent ones are fine, so cleanup is idempotent.
  const { removed, foreign } = await removeOurTables(dataplane, options.table);
  for (const f of foreign)
    logger.warn(
      { table: options.table, family: f.family, comment: f.comment },
      'left a table of this name alone: it was not created by kube-nft-proxy',
    );
  logger.info({ table: options.table, families: removed }, 'removed our nftables tables');
}

async function main(argv: string[]): Promise<number> {
  let command: ReturnType<typeof parseCommandLine>;
  try {
    command = parseCommandLine(argv);
  } catch (e) {
    if (e instanceof FlagError || e instanceof FeatureGateError) {
      process.stderr.write(`kube-nft-proxy: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  if (command.command === 'help') {
    process.stdout.write(usage());
    return 0;
  }
  if (command.command === 'version') {
    const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string };
    process.stdout.write(`kube-nft-proxy ${pkg.version}\n`);
    return 0;
  }
  const { options } = command;
  if (command.writeConfigTo !== undefined) {
    // As kube-proxy: write the effective configuration and exit.
    writeFileSync(command.writeConfigTo, formatConfigFile(command.configuration));
    return 0;
  }
  // In a dry run stdout carries the ruleset; logs go to stderr.
  const logger = createLogger(options.logLevel, options.dryRun ? process.stderr : process.stdout, command.logFormat);
  if (command.ignoredFlags.length > 0) {
    logger.warn(
      { flags: command.ignoredFlags, config: command.configFile },
      'these flags are ignored: --config wins over them (as in kube-proxy; only the logging flags and ' +
        '--hostname-override win over the file)',
    );
  }
  if (command.command === 'cleanup') {
    await cleanup(options, logger);
    return 0;
  }
  if (options.dryRun) {
    process.stdout.write(await dryRun(options, logger));
    return 0;
  }
  if (command.initOnly) return initOnly(command, logger);
  // Watched from before the start, which can take long on a big cluster: a fix
  // to the file must restart us even then.
  const configChanged = new Promise<number>((resolve) => {
    const file = command.configFile;
    if (file === undefined) return;
    watchConfigFile(file, command.configText ?? '', (reason) => {
      // kube-proxy exits likewise, so that the DaemonSet restarts it on the new file.
      logger.error({ config: file, reason }, 'the configuration file changed; exiting so that the new one is read on restart');
      resolve(1);
    });
  });
  const stopped = new Promise<number>((resolve) => {
    // SIGTERM leaves the rules in place: a restarting agent adopts or replaces them atomically.
    process.once('SIGTERM', () => resolve(0));
    process.once('SIGINT', () => resolve(0));
  });
  setAgentV8Flags();
  const addon = loadNative();
  const started = startAgent(options, {
    logger,
    dataplane: new NetlinkDataplane({ netns: netnsPath(options.netns), addon }),
    conntrack: addon,
    applyNodeSettings: () => applyNodeSettings(command, logger),
  });
  let agent: Awaited<typeof started>;
  try {
    const early = await Promise.race([started.then(() => undefined), configChanged]);
    if (early !== undefined) return early;
    agent = await started;
  } catch (e) {
    if (!(e instanceof ForeignTableError)) throw e;
    logger.error({ err: e, table: e.table, family: e.family }, 'refusing to start');
    process.stderr.write(`kube-nft-proxy: ${e.message}\n`);
    return 2;
  }
  const code = await Promise.race([stopped, configChanged]);
  await agent.stop();
  return code;
}

/** kube-proxy's conntrack sysctls and oom_score_adj: applied where this node allows, one warning otherwise. */
async function applyNodeSettings(command: RunCommand, logger: Logger): Promise<void> {
  const oom = await applyOomScoreAdj(command.oomScoreAdj);
  // kube-proxy logs this at V(2), not as a warning: a pod without CAP_SYS_RESOURCE cannot lower it, and that is fine.
  if (oom !== undefined) logger.info({ oomScoreAdj: command.oomScoreAdj, reason: oom }, 'cannot set our oom_score_adj');
  await applyConntrackSettings(command, logger);
}

/**
 * kube-proxy's --init-only: what needs full root privileges, then exit, so that the agent itself can run with
 * NET_ADMIN alone (it then finds the sysctls set and writes nothing). In kube-proxy's order: the kubeconfig read,
 * the conntrack sysctls, a check that the kernel's nftables answers. Not oom_score_adj: that is the running agent's own.
 * A sysctl it cannot set fails it, as in kube-proxy: setting them is all it is for (the running agent only warns).
 */
async function initOnly(command: RunCommand, logger: Logger): Promise<number> {
  const { options } = command;
  if (options.manifests === undefined) await (await connect(options.kubeconfig, apiConnectionOptions(options))).close();
  if (!(await applyConntrackSettings(command, logger))) {
    logger.error('--init-only could not set the conntrack sysctls above');
    return 1;
  }
  await new NetlinkDataplane({ netns: netnsPath(options.netns) }).generation();
  logger.info('node initialised (--init-only); exiting');
  return 0;
}

/** Whether every conntrack sysctl this node's /proc/sys was asked for is set (the hash size under /sys may stay, as in kube-proxy). */
async function applyConntrackSettings(command: RunCommand, logger: Logger): Promise<boolean> {
  if (command.options.netns !== undefined) {
    logger.info({ netns: command.options.netns }, 'conntrack sysctls are left alone: we program another network namespace');
    return true;
  }
  const plan = conntrackSysctls(command.conntrack, availableParallelism());
  const { changed, failed } = await applySysctls(plan);
  const everySysctlSet = failed.length === 0;
  const max = plan.find((s) => s.path.endsWith('nf_conntrack_max'));
  // Only where the maximum itself could be set (the host's network namespace): the hash size is host-wide.
  if (max !== undefined && !failed.some((f) => f.path === max.path)) {
    const hash = await growConntrackHashsize(max.value);
    if (hash.changed) changed.push(hash.changed);
    if (hash.failed) failed.push(hash.failed);
  }
  if (changed.length > 0) logger.info({ sysctls: changed }, 'set conntrack sysctls');
  if (failed.length > 0)
    logger.warn({ failed }, 'this node does not let us set these conntrack sysctls (read-only /proc/sys?); the kernel keeps its values');
  return everySysctlSet;
}

/** How long process.exit() may take before the addon's watchdog ends the process; a normal exit takes milliseconds. */
const EXIT_WATCHDOG_MS = 2_000;

/**
 * process.exit(code), guarded where the addon is loaded: Node can deadlock in
 * it (nodejs/node#54918, seen in a bench child), which would leave a stopped
 * agent holding its ports until the kubelet's SIGKILL.
 */
function exit(code: number): never {
  loadedAddon()?.exitWatchdog?.(code, EXIT_WATCHDOG_MS);
  process.exit(code);
}

/**
 * Runs the command line `argv` and exits the process with its outcome. The
 * package's bin calls it; importing this module alone runs nothing (below).
 */
export function runCommandLine(argv: string[]): void {
  main(argv).then(
    (code) => exit(code),
    (e: Error & { code?: string }) => {
      process.stderr.write(`kube-nft-proxy: ${e.code ? `[${e.code}] ` : ''}${e.message}\n`);
      exit(1);
    },
  );
}

// Run as a script (`node src/cli.ts`, `node dist/bundle/cli.js`) it is the command. Imported, it
// must not be: without arguments the command is the agent, on the host's own network namespace.
if (import.meta.main) runCommandLine(process.argv.slice(2));
