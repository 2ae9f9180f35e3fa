// A run of element additions into one set, standing for that many 'add element'
// operations of a generated transaction (Transaction.queueGenerated). A full
// sync's endpoint slots and hairpin addresses are two million elements at 100k
// Services x 10 endpoints: made one operation object at a time, each checked
// on its own and then encoded, they were ~40% of the cold start's encoding. A
// run is checked once against its set (the types of its texts are the set's),
// and a streamed encoder writes its elements from their values without making
// them (encode.ts); what wants operations gets them from runOperations.
//
// A run's values are valid by construction: whoever makes a run vouches that
// each text is a canonical value text of its type (the render checked every
// endpoint address it takes, see service-rules.ts). The encoder still parses
// each strictly and checks each number's range, so a value that is not one
// stops the batch before anything is sent.

import type { DataType, Element, Family, Operation } from './objects.ts';

export interface ElementRun {
  readonly kind: 'element-run';
  readonly family: Family;
  readonly table: string;
  readonly set: string;
  readonly length: number;
  /** The types of an element's key parts: the set's key type. */
  readonly keyType: readonly DataType[];
  /** The types of a map element's data parts (a concatenation); undefined for a set's elements. */
  readonly dataType: readonly DataType[] | undefined;
  /**
   * Element i's value of part `part` (its key's parts first, then its
   * data's): a text, or for a part of a numeric type (integer, inet_service)
   * the number its text is.
   */
  value(i: number, part: number): string | number;
  /** Element i as an operation's object: the element its texts are. */
  element(i: number): Element;
}

/** What a generated transaction's source makes: operations, and runs standing for element additions. */
export type GeneratedItem = Operation | ElementRun;

export function isElementRun(item: GeneratedItem): item is ElementRun {
  return (item as ElementRun).kind === 'element-run';
}

/** The operations the items stand for, runs made into their element additions one at a time. */
export function* runOperations(items: Iterable<GeneratedItem>): Generator<Operation> {
  for (const item of items) {
    if (!isElementRun(item)) {
      yield item;
      continue;
    }
    for (let i = 0; i < item.length; i++) yield { verb: 'add', object: item.element(i) };
  }
}
