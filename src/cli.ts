// kube-nft-proxy's command line: run the agent, print a dry run, or remove our tables.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { netnsPath, startAgent } from './agent/agent.ts';
import { dryRun } from './agent/dry-run.ts';
import { removeOurTables } from './agent/table-ownership.ts';
import type { AgentOptions } from './agent/options.ts';
import { FlagError, parseCommandLine, USAGE } from './cli/flags.ts';
import { FeatureGateError, parseFeatureGates } from './config/feature-gates.ts';
import { loadNative } from './native/addon.ts';
import { NetlinkDataplane } from './nft/netlink/netlink-dataplane.ts';
import { createLogger, type Logger } from './observability/logger.ts';
import { ForeignTableError } from './reconciler/ownership.ts';
import { packageRoot } from './package-root.ts';

async function cleanup(options: AgentOptions, logger: Logger): Promise<void> {
  const dataplane = new NetlinkDataplane({ netns: netnsPath(options.netns) });
  // Only tables bearing our mark; absent ones are fine, so cleanup is idempotent.
  const { removed, foreign } = await removeOurTables(dataplane, options.table);
  for (const f of foreign) logger.warn({ table: options.table, family: f.family, comment: f.comment }, 'left a table of this name alone: it was not created by kube-nft-proxy');
  logger.info({ table: options.table, families: removed }, 'removed our nftables tables');
}

async function main(argv: string[]): Promise<number> {
  let command;
  try {
    command = parseCommandLine(argv);
    if (command.command === 'run' || command.command === 'cleanup') parseFeatureGates(command.options.featureGates);
  } catch (e) {
    if (e instanceof FlagError || e instanceof FeatureGateError) {
      process.stderr.write(`kube-nft-proxy: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  if (command.command === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command.command === 'version') {
    const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string };
    process.stdout.write(`kube-nft-proxy ${pkg.version}\n`);
    return 0;
  }
  const { options } = command;
  // In a dry run stdout carries the ruleset; logs go to stderr.
  const logger = createLogger(options.logLevel, options.dryRun ? process.stderr : process.stdout);
  if (command.command === 'cleanup') {
    await cleanup(options, logger);
    return 0;
  }
  if (options.dryRun) {
    process.stdout.write(await dryRun(options, logger));
    return 0;
  }
  const addon = loadNative();
  let agent;
  try {
    agent = await startAgent(options, { logger, dataplane: new NetlinkDataplane({ netns: netnsPath(options.netns), addon }), conntrack: addon });
  } catch (e) {
    if (!(e instanceof ForeignTableError)) throw e;
    logger.error({ err: e, table: e.table, family: e.family }, 'refusing to start');
    process.stderr.write(`kube-nft-proxy: ${e.message}\n`);
    return 2;
  }
  await new Promise<void>((resolve) => {
    // SIGTERM leaves the rules in place: a restarting agent adopts or replaces them atomically.
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await agent.stop();
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: Error & { code?: string }) => {
    process.stderr.write(`kube-nft-proxy: ${e.code ? `[${e.code}] ` : ''}${e.message}\n`);
    process.exit(1);
  },
);
