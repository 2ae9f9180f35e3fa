// The fake kernel's commit-time check of everything reachable from base
// chains, as nf_tables validates a table when jumps change: no cycles, fewer
// than 16 nested jumps (both EMLINK on kernel 6.18), and statements only in
// chains whose type and hook allow them (EOPNOTSUPP).

import { isVerdictValue, type ChainHook, type ChainType, type Rule, type Statement } from '../objects.ts';
import { KernelError, type ChainState, type TableState } from './state.ts';

const MAX_DEPTH = 16;

/** Hooks (and the chain type, where one is required) each restricted statement may run in. */
const ALLOWED: Partial<Record<Statement['kind'], { type?: ChainType; hooks: readonly ChainHook[] }>> = {
  dnat: { type: 'nat', hooks: ['prerouting', 'output'] },
  'dnat-map': { type: 'nat', hooks: ['prerouting', 'output'] },
  snat: { type: 'nat', hooks: ['postrouting', 'input'] },
  masquerade: { type: 'nat', hooks: ['postrouting'] },
  'flow-offload': { hooks: ['forward'] },
  reject: { hooks: ['prerouting', 'input', 'forward', 'output'] },
};

/**
 * Walks every path from every base chain of the given tables. `origin` maps
 * rules and elements added by this transaction to their operation index, so
 * that a failure is blamed on the newest operation on the offending path.
 */
export function validateBaseChainPaths(tables: readonly TableState[], origin: ReadonlyMap<object, number>, opCount: number): void {
  for (const ts of tables) {
    for (const base of ts.chains.values()) {
      const b = base.chain.base;
      if (!b) continue;
      const walk = new Walk(ts, origin, b.type, b.hook, opCount);
      walk.visit(base, 0, -1);
    }
  }
}

class Walk {
  readonly #ts: TableState;
  readonly #origin: ReadonlyMap<object, number>;
  readonly #type: ChainType;
  readonly #hook: ChainHook;
  readonly #opCount: number;
  readonly #onPath = new Set<string>();
  /** Deepest depth each chain was checked at; a shallower visit adds nothing. */
  readonly #seenAt = new Map<string, number>();

  constructor(ts: TableState, origin: ReadonlyMap<object, number>, type: ChainType, hook: ChainHook, opCount: number) {
    this.#ts = ts;
    this.#origin = origin;
    this.#type = type;
    this.#hook = hook;
    this.#opCount = opCount;
  }

  #fail(code: string, message: string, blame: number): never {
    throw new KernelError(code, message, blame >= 0 ? blame : this.#opCount - 1);
  }

  visit(cs: ChainState, depth: number, blame: number): void {
    const name = cs.chain.name;
    if (this.#onPath.has(name)) this.#fail('EMLINK', `jump loop through chain ${name}`, blame);
    if (depth >= MAX_DEPTH) this.#fail('EMLINK', `${MAX_DEPTH} or more nested jumps to reach chain ${name}`, blame);
    const seen = this.#seenAt.get(name);
    if (seen !== undefined && seen >= depth) return;
    this.#seenAt.set(name, depth);
    this.#onPath.add(name);
    for (const r of cs.rules) this.#rule(r, depth, Math.max(blame, this.#origin.get(r) ?? -1));
    this.#onPath.delete(name);
  }

  #rule(r: Rule, depth: number, blame: number): void {
    for (const st of r.exprs) {
      const allowed = ALLOWED[st.kind];
      if (allowed && ((allowed.type && allowed.type !== this.#type) || !allowed.hooks.includes(this.#hook))) {
        this.#fail('EOPNOTSUPP', `${st.kind} cannot run in a ${this.#type} chain on hook ${this.#hook} (rule in chain ${r.chain})`, blame);
      }
      if (st.kind === 'verdict' && (st.verdict === 'jump' || st.verdict === 'goto')) this.#follow(st.chain, depth, blame);
      if (st.kind === 'vmap') {
        const ss = this.#ts.sets.get(st.map);
        if (!ss) continue;
        for (const e of ss.elements.values()) {
          const v = e.value;
          if (isVerdictValue(v) && (v.verdict === 'jump' || v.verdict === 'goto')) {
            this.#follow(v.chain, depth, Math.max(blame, this.#origin.get(e) ?? -1));
          }
        }
      }
    }
  }

  #follow(chain: string, depth: number, blame: number): void {
    const target = this.#ts.chains.get(chain);
    if (target) this.visit(target, depth + 1, blame);
  }
}
