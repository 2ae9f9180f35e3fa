import { describe, expect, it } from 'vitest';
import { assertNever, UnreachableError } from '../src/assert-never.ts';
import { renderOperations } from '../src/nft/render-text.ts';
import type { Operation, Statement } from '../src/nft/objects.ts';

type Shape = { kind: 'circle'; r: number } | { kind: 'square'; side: number };

function area(s: Shape): number {
  switch (s.kind) {
    case 'circle':
      return Math.PI * s.r * s.r;
    case 'square':
      return s.side * s.side;
    default:
      return assertNever(s);
  }
}

describe('assertNever', () => {
  it('throws UnreachableError, with a stable code and the value, when a value outside the union arrives', () => {
    expect(area({ kind: 'square', side: 2 })).toBe(4);
    const bogus = { kind: 'triangle' } as unknown as Shape;
    expect(() => area(bogus)).toThrow(UnreachableError);
    try {
      area(bogus);
    } catch (e) {
      expect((e as UnreachableError).code).toBe('ERR_UNREACHABLE');
      expect((e as UnreachableError).value).toEqual({ kind: 'triangle' });
      expect((e as Error).message).toContain('"triangle"');
    }
  });

  it("throws the caller's own error when given one", () => {
    class BadInput extends Error {}
    expect(() =>
      assertNever('x' as never, (v) => {
        throw new BadInput(`bad ${String(v)}`);
      }),
    ).toThrow(BadInput);
  });

  it('a statement kind outside the type stops the text renderer instead of printing "undefined"', () => {
    const rule = { kind: 'rule', family: 'ip', table: 't', chain: 'c', exprs: [{ kind: 'bogus' } as unknown as Statement] };
    const ops = [{ verb: 'add', object: rule }] as Operation[];
    expect(() => renderOperations(ops)).toThrow(UnreachableError);
  });
});
