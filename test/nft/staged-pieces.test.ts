// Where stagedPieces cuts a generated transaction into transactions: only
// once a stage holds its bytes, only where the operations so far are all
// stageable ones, never after the last operation; and nowhere when none is
// stageable. The kernel's side is test/native/staged-commit.test.ts.

import { describe, expect, it } from 'vitest';
import { stagedPieces } from '../../src/nft/netlink/netlink-dataplane.ts';

function recorded(stageable: number, count: number, pushes: Array<[bytes: number, encoded: number]>): string[] {
  const log: string[] = [];
  const stream = {
    push: (p: Uint8Array) => log.push(`${p.length}`),
    cut: () => log.push('cut'),
  };
  const sink = stagedPieces(stream, { pieceBytes: 4, stageBytes: 10, stageable, count });
  for (const [bytes, encoded] of pushes) sink.push(new Uint8Array(bytes), encoded);
  return log;
}

describe('stagedPieces', () => {
  it('cuts once a stage holds its bytes, where every operation so far is stageable', () => {
    expect(
      recorded(100, 120, [
        [6, 10],
        [6, 30],
        [20, 100],
        [20, 110],
        [20, 120],
      ]),
    ).toEqual(['6', '6', 'cut', '20', 'cut', '20', '20']);
  });

  it('cuts nowhere when nothing is stageable, nor after the last operation', () => {
    expect(
      recorded(0, 50, [
        [30, 20],
        [30, 50],
      ]),
    ).toEqual(['30', '30']);
    expect(
      recorded(50, 50, [
        [30, 20],
        [30, 50],
      ]),
    ).toEqual(['30', 'cut', '30']);
  });

  it('counts a piece’s bytes before the stream takes them (a taken piece reads as empty)', () => {
    const log: string[] = [];
    const sink = stagedPieces(
      {
        push: (p: Uint8Array) => {
          log.push(`${p.length}`);
          // As the addon takes a piece in its own memory: the buffer is detached.
          structuredClone(p.buffer, { transfer: [p.buffer as ArrayBuffer] });
        },
        cut: () => log.push('cut'),
      },
      { pieceBytes: 4, stageBytes: 10, stageable: 100, count: 120 },
    );
    const taken = new Uint8Array(12);
    sink.push(taken, 10);
    expect(taken.length).toBe(0);
    expect(log).toEqual(['12', 'cut']);
  });
});
