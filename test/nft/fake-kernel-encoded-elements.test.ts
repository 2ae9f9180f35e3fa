// The fake kernel answers ListOptions.elementsEncodedOf as the kernel does
// (test/helpers/encoded-elements-scenario.ts has the checks, which
// test/native/encoded-elements.test.ts runs against the kernel), so that an
// adoption against the fake takes the same path.

import { describe, it } from 'vitest';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import { holdsEmptySets, keepsWantedElementsOnce } from '../helpers/encoded-elements-scenario.ts';

describe('the fake kernel, elements listed encoded', () => {
  it('keeps each wanted element once, and gives back those nothing kept', () => keepsWantedElementsOnce(new FakeKernel()));
  it('holds a set listed with no elements, and nothing for a listing asked for none', () => holdsEmptySets(new FakeKernel()));
});
