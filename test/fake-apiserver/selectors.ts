// Label and field selectors as the API server applies them to list and watch.

import { matchesLabels, parseLabelSelector, type Requirement } from '../../src/k8s/label-selector.ts';
import type { K8sObject } from './object-store.ts';

export interface FieldRequirement {
  field: string;
  value: string;
  negate: boolean;
}

const FIELDS = new Set(['metadata.name', 'metadata.namespace']);

export class SelectorError extends Error {}

export function parseFieldSelector(s: string): FieldRequirement[] {
  if (s.trim() === '') return [];
  return s.split(',').map((term) => {
    const m = /^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(term);
    if (!m || !FIELDS.has(m[1]!)) throw new SelectorError(`field selector ${JSON.stringify(term)} not supported`);
    return { field: m[1]!, value: m[3]!, negate: m[2] === '!=' };
  });
}

export class ObjectFilter {
  private readonly labels: Requirement[];
  private readonly fields: FieldRequirement[];
  private readonly namespace: string | undefined;

  constructor(labelSelector: string, fieldSelector: string, namespace: string | undefined) {
    try {
      this.labels = parseLabelSelector(labelSelector);
    } catch (e) {
      throw new SelectorError((e as Error).message);
    }
    this.fields = parseFieldSelector(fieldSelector);
    this.namespace = namespace;
  }

  matches(o: K8sObject): boolean {
    if (this.namespace !== undefined && o.metadata.namespace !== this.namespace) return false;
    for (const f of this.fields) {
      const v = f.field === 'metadata.name' ? o.metadata.name : (o.metadata.namespace ?? '');
      if ((v === f.value) === f.negate) return false;
    }
    return matchesLabels(this.labels, o.metadata.labels);
  }
}
