// V8 flags the agent sets on itself once its modules are loaded, rather than
// on node's command line: there they would keep V8 from taking the code cache
// node's own modules come with, as a flag changes the hash V8 checks that cache
// against (deploy/Containerfile has what that cost). Set here, they change it
// only after the command has loaded those modules.

import { setFlagsFromString } from 'node:v8';

/**
 * Sets the agent's V8 flags: the command calls it once its modules are
 * loaded, before the agent starts.
 *
 * --no-allocation-site-pretenuring: V8 now and then tenures many of the
 * render's allocation sites during a large first sync's plan (when its one
 * major collection there comes early), and their short-lived objects then pile
 * up in the old generation until the collection before the encoding: a cold
 * start's VmHWM at 30k Services x 10 endpoints was 383-391 MiB in 9 of 128
 * starts (278-311 otherwise), in none of 24 without pretenuring. V8 reads it
 * as it collects, so set now it holds from the first list on: the agent at
 * 30k x 10 made no tenuring decision in three cold starts, 68 without it
 * (--trace-pretenuring-statistics; test/cli/v8-flags.test.ts).
 */
export function setAgentV8Flags(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}
