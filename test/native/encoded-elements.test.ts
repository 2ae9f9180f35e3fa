// Elements listed encoded (ListOptions.elementsEncodedOf) against the real
// kernel: kept by their bytes as a commit writes them
// (test/helpers/encoded-elements-scenario.ts has the checks).

import { describe, it } from 'vitest';
import { holdsEmptySets, keepsWantedElementsOnce } from '../helpers/encoded-elements-scenario.ts';
import { kernel } from './kernel-helpers.ts';

describe('elements listed encoded', () => {
  it('keeps each wanted element by its bytes once, and decodes only those nothing kept', () => keepsWantedElementsOnce(kernel().dp));
  it('holds a set listed with no elements, and nothing for a listing asked for none', () => holdsEmptySets(kernel().dp));
});
