// The agent in-process over the bundled example manifests as node-a, with no
// HTTP servers and no memory release unless the test gives its own: how the
// agent tests that need no hand-fed streams start it.

import { type Agent, type AgentDeps, startAgent } from '../../src/agent/agent.ts';
import { parseCommandLine } from '../../src/cli/flags.ts';
import { createLogger } from '../../src/observability/logger.ts';

const EXAMPLES = new URL('../../examples/', import.meta.url).pathname;

/** The agent over the examples on `deps.dataplane`, with these flags besides the manifests and the node's name. */
export function agentOnExamples(
  deps: Pick<AgentDeps, 'dataplane'> & Partial<AgentDeps>,
  flags: string[] = ['--min-sync-period=0'],
): Promise<Agent> {
  const command = parseCommandLine(['--manifests', EXAMPLES, '--hostname-override=node-a', ...flags]);
  if (command.command !== 'run') throw new Error('expected a run command');
  return startAgent(command.options, { logger: createLogger('silent'), serveHttp: false, releaseMemory: () => {}, ...deps });
}
