// --help, grouped: kube-proxy's flags (same names and meanings), logging, ours,
// what to do, and the kube-proxy flags that are refused and why.

import { FLAGS, type FlagGroup, REFUSED_FLAGS } from './flag-table.ts';

const TITLES: Record<FlagGroup, string> = {
  'kube-proxy': "kube-proxy's flags (its names, meanings and defaults; --config wins over them):",
  logging: 'Logging (win over --config, as in kube-proxy):',
  ours: "kube-nft-proxy's own flags (fields of a KubeNftProxyConfiguration document in --config):",
  command: 'What to do:',
};

const COLUMN = 36;

function line(name: string, arg: string, help: string): string {
  const head = `  --${name}${arg === '' ? '' : ` ${arg}`}`;
  const [first, ...more] = help.split('\n');
  const pad = (s: string) => `${s.padEnd(COLUMN - 1)} `;
  const firstLine = head.length < COLUMN - 1 ? `${pad(head)}${first}` : `${head}\n${pad('')}${first}`;
  return [firstLine, ...more.map((m) => `${pad('')}${m}`)].join('\n');
}

/** Flag names are ASCII: compared by code unit, so that no ICU collator is loaded (~2 MiB of node's binary paged in). */
function byName([a]: [string, unknown], [b]: [string, unknown]): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The --help text: made when asked for (a bad flag, --help), not at every start. */
export function usage(): string {
  const parts = ['Usage: kube-nft-proxy [run] [flags]\n       kube-nft-proxy cleanup [--table NAME] [--netns NAME]\n'];
  for (const group of ['kube-proxy', 'logging', 'ours', 'command'] as const) {
    const lines = Object.entries(FLAGS)
      .filter(([, s]) => s.group === group)
      .sort(byName)
      .map(([name, s]) => line(name, s.arg, s.help));
    parts.push(`${TITLES[group]}\n${lines.join('\n')}\n`);
  }
  const refused = Object.entries(REFUSED_FLAGS).map(([name, why]) => line(name, '', why));
  parts.push(`kube-proxy flags refused here (they make no sense for this proxy):\n${refused.join('\n')}\n`);
  return parts.join('\n');
}
