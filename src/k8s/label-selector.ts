import { assertNever } from '../assert-never.ts';
// Kubernetes label selectors in their string form (`a`, `!a`, `a=b`, `a==b`,
// `a!=b`, `a in (x,y)`, `a notin (x,y)`, comma-joined = AND).
//
// The API server applies them for a list/watch; the manifest source has no
// server, so it applies the same selector locally with this parser, and the
// fake API server uses it to be faithful. Parsing is strict: a selector the
// API server would reject must not silently match everything here.

export type Requirement = { op: 'exists' | 'notexists'; key: string } | { op: 'in' | 'notin'; key: string; values: string[] };

export class LabelSelectorError extends Error {
  readonly code = 'ERR_LABEL_SELECTOR';
  readonly selector: string;
  constructor(selector: string, reason: string) {
    super(`invalid label selector ${JSON.stringify(selector)}: ${reason}`);
    this.selector = selector;
    this.name = 'LabelSelectorError';
  }
}

// Qualified name: optional DNS-subdomain prefix + '/' + name of [A-Za-z0-9._-].
const KEY_RE = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE_RE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** Splits on commas that are not inside parentheses. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out;
}

export function parseLabelSelector(selector: string): Requirement[] {
  const s = selector.trim();
  if (s === '') return [];
  const reqs: Requirement[] = [];
  for (const raw of splitTerms(s)) {
    const term = raw.trim();
    if (term === '') throw new LabelSelectorError(selector, 'empty term');
    reqs.push(parseTerm(selector, term));
  }
  return reqs;
}

function checkKey(selector: string, key: string): string {
  if (!KEY_RE.test(key) || key.length > 317) throw new LabelSelectorError(selector, `bad key ${JSON.stringify(key)}`);
  return key;
}

function checkValue(selector: string, v: string): string {
  if (v.length > 63 || !VALUE_RE.test(v)) throw new LabelSelectorError(selector, `bad value ${JSON.stringify(v)}`);
  return v;
}

function parseTerm(selector: string, term: string): Requirement {
  if (term.startsWith('!')) return { op: 'notexists', key: checkKey(selector, term.slice(1).trim()) };
  const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(term);
  if (set) {
    const values = set[3]!.split(',').map((v) => checkValue(selector, v.trim()));
    return { op: set[2] as 'in' | 'notin', key: checkKey(selector, set[1]!), values };
  }
  const eq = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
  if (eq) {
    const key = checkKey(selector, eq[1]!);
    const value = checkValue(selector, eq[3]!.trim());
    return { op: eq[2] === '!=' ? 'notin' : 'in', key, values: [value] };
  }
  return { op: 'exists', key: checkKey(selector, term) };
}

export type Labels = Readonly<Record<string, string>> | undefined | null;

export function matchesLabels(reqs: readonly Requirement[], labels: Labels): boolean {
  for (const r of reqs) {
    const has = labels != null && Object.hasOwn(labels, r.key);
    switch (r.op) {
      case 'exists':
        if (!has) return false;
        break;
      case 'notexists':
        if (has) return false;
        break;
      case 'in':
        if (!has || !r.values.includes(labels![r.key]!)) return false;
        break;
      case 'notin':
        // As in Kubernetes: `k!=v` and `k notin (…)` match objects without the label.
        if (has && r.values.includes(labels![r.key]!)) return false;
        break;
      default:
        assertNever(r);
    }
  }
  return true;
}
