// Logs on stdout (pino), in either of kube-proxy's --logging-format values:
// - json (our default): one JSON object per line, as a DaemonSet's log collector expects;
// - text: one readable line per event with the same fields, in klog's shape
//   (`I1125 16:28:17.123456 4242 kube-nft-proxy] "message" key=value ...`), so
//   that kube-proxy's operators read it as they read kube-proxy.

import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };
export type LogFormat = 'text' | 'json';

const LEVEL_LETTER: Record<number, string> = { 10: 'I', 20: 'I', 30: 'I', 40: 'W', 50: 'E', 60: 'F' };
// Present in every JSON line; the text line's header carries them.
const HEADER_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg']);

function two(n: number): string {
  return String(n).padStart(2, '0');
}

function value(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
}

/** One JSON log line as klog's text format prints a structured entry. */
export function textLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const t = new Date(typeof entry.time === 'number' ? entry.time : Date.now());
  const micros = String(t.getUTCMilliseconds() * 1000).padStart(6, '0');
  const head =
    `${LEVEL_LETTER[entry.level as number] ?? 'I'}${two(t.getUTCMonth() + 1)}${two(t.getUTCDate())} ` +
    `${two(t.getUTCHours())}:${two(t.getUTCMinutes())}:${two(t.getUTCSeconds())}.${micros} ` +
    `${String(entry.pid ?? '')} ${String(entry.name ?? '')}]`;
  const fields = Object.entries(entry)
    .filter(([k]) => !HEADER_FIELDS.has(k))
    .map(([k, v]) => ` ${k}=${value(v)}`)
    .join('');
  return `${head} ${JSON.stringify(entry.msg ?? '')}${fields}\n`;
}

function textDestination(out: NodeJS.WritableStream): DestinationStream {
  return { write: (line: string) => void out.write(textLine(line)) };
}

export function createLogger(level: string, destination: NodeJS.WritableStream = process.stdout, format: LogFormat = 'json'): Logger {
  const options = { name: 'kube-nft-proxy', level, base: { pid: process.pid } };
  return format === 'text' ? pino(options, textDestination(destination)) : pino(options, destination);
}
