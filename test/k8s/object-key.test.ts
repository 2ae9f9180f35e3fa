// Joined keys are held as Map keys for every Service and slice: they must be
// flat strings, not V8's pairs of their parts (two more objects each).

import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { joinKey, splitKey } from '../../src/k8s/object-key.ts';
import { packageRoot } from '../../src/package-root.ts';

/**
 * Joined strings (V8's cons strings) alive in a child holding 5,000 keys made
 * by joinKey (as the interpreter runs it, or optimised by Turbofan first, as
 * the agent's hot paths run it), or by a plain template, or none.
 */
function joinedStringsHolding(make: 'joinKey' | 'joinKey optimised' | 'template' | 'none'): number {
  const script = `
    import { readFileSync, rmSync } from 'node:fs';
    import { join } from 'node:path';
    import { writeHeapSnapshot } from 'node:v8';
    import { joinKey } from ${JSON.stringify(join(packageRoot, 'src/k8s/object-key.ts'))};
    const make = ${JSON.stringify(make)}.startsWith('joinKey') ? joinKey : (ns, name) => \`\${ns}/\${name}\`;
    if (${JSON.stringify(make)} === 'joinKey optimised') {
      %PrepareFunctionForOptimization(joinKey);
      joinKey('namespace-a', 'service-a');
      %OptimizeFunctionOnNextCall(joinKey);
      joinKey('namespace-b', 'service-b');
      // V8's status bits: 1 << 6 is "Turbofan-compiled".
      if ((%GetOptimizationStatus(joinKey) & (1 << 6)) === 0) throw new Error('joinKey was not optimised');
    }
    const count = ${make === 'none' ? 0 : 5000};
    globalThis.keys = Array.from({ length: count }, (_, i) => make('namespace-' + (i % 7), 'service-' + i));
    // A flattened pair is dropped by the young generation's collector, which the agent runs all the time.
    gc({ type: 'minor' });
    gc();
    const file = writeHeapSnapshot(join(${JSON.stringify(tmpdir())}, 'object-key-' + process.pid + '.heapsnapshot'));
    const s = JSON.parse(readFileSync(file, 'utf8'));
    rmSync(file);
    const { node_fields: fields, node_types: [types] } = s.snapshot.meta;
    const type = fields.indexOf('type');
    let joined = 0;
    for (let i = 0; i < s.nodes.length; i += fields.length) if (types[s.nodes[i + type]] === 'concatenated string') joined++;
    process.stdout.write(String(joined));`;
  return Number(
    execFileSync(process.execPath, ['--expose-gc', '--allow-natives-syntax', '--input-type=module', '-e', script], { encoding: 'utf8' }),
  );
}

describe('joinKey', () => {
  it('joins and splits namespaced and cluster-scoped keys', () => {
    expect(joinKey('default', 'web')).toBe('default/web');
    expect(joinKey('', 'node-a')).toBe('node-a');
    expect(splitKey('default/web')).toEqual(['default', 'web']);
    expect(splitKey('node-a')).toEqual(['', 'node-a']);
  });

  it('gives flat strings: none of the 5,000 keys it made is held as a pair of its parts', () => {
    const none = joinedStringsHolding('none');
    // The same keys made by a template are held as pairs (most of them: V8 makes short joins flat).
    expect(joinedStringsHolding('template') - none).toBeGreaterThan(3000);
    expect(joinedStringsHolding('joinKey') - none).toBeLessThan(50);
    expect(joinedStringsHolding('joinKey optimised') - none).toBeLessThan(50);
  });
});
