// Go-style durations as kube-proxy's flags take them: "1s", "500ms", "1m30s", "0".

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export class DurationError extends Error {
  readonly code = 'ERR_BAD_DURATION';
}

/** Milliseconds of a Go duration string; a bare "0" is allowed, other bare numbers are not (ambiguous). */
export function parseDuration(text: string): number {
  const s = text.trim();
  if (s === '0') return 0;
  const part = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let pos = 0;
  for (let m = part.exec(s); m !== null; m = part.exec(s)) {
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    pos = part.lastIndex;
  }
  if (pos === 0 || pos !== s.length) {
    throw new DurationError(`invalid duration ${JSON.stringify(text)}: expected forms like 1s, 500ms, 1m30s`);
  }
  return total;
}

/** Go's time.Duration.String() of a whole number of milliseconds: "0s", "500ms", "30s", "15m0s", "24h0m0s". */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  if (rest < 1000) return `${sign}${rest}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = `${rest / 1000}s`;
  if (h > 0) return `${sign}${h}h${m}m${s}`;
  if (m > 0) return `${sign}${m}m${s}`;
  return `${sign}${s}`;
}
