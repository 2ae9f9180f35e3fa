import { describe, expect, it } from 'vitest';
import { LabelSelectorError, matchesLabels, parseLabelSelector } from '../../src/k8s/label-selector.ts';
import { serviceProxySelector } from '../../src/k8s/well-known.ts';

describe('label selectors', () => {
  const cases: [string, Record<string, string> | undefined, boolean][] = [
    ['', {}, true],
    ['a', { a: '' }, true],
    ['a', {}, false],
    ['!a', {}, true],
    ['!a', { a: 'x' }, false],
    ['a=x', { a: 'x' }, true],
    ['a==x', { a: 'y' }, false],
    ['a!=x', {}, true],
    ['a!=x', { a: 'x' }, false],
    ['a in (x, y)', { a: 'y' }, true],
    ['a in (x,y)', { a: 'z' }, false],
    ['a notin (x,y)', {}, true],
    ['a notin (x,y)', { a: 'x' }, false],
    ['a=x,b in (1,2),!c', { a: 'x', b: '2' }, true],
    ['a=x,b in (1,2),!c', { a: 'x', b: '2', c: '' }, false],
    [serviceProxySelector(), undefined, true],
    [serviceProxySelector(), { 'service.kubernetes.io/service-proxy-name': 'x' }, false],
    [serviceProxySelector(), { 'service.kubernetes.io/headless': '' }, false],
    [serviceProxySelector('mine'), { 'service.kubernetes.io/service-proxy-name': 'mine' }, true],
    [serviceProxySelector('mine'), { 'service.kubernetes.io/service-proxy-name': 'other' }, false],
    [serviceProxySelector('mine'), {}, false],
    [serviceProxySelector('mine'), { 'service.kubernetes.io/service-proxy-name': 'mine', 'service.kubernetes.io/headless': '' }, false],
  ];
  it.each(cases)('%j on %j → %s', (sel, labels, want) => {
    expect(matchesLabels(parseLabelSelector(sel), labels)).toBe(want);
  });

  it('builds the KEP-31 selectors exactly', () => {
    expect(serviceProxySelector()).toBe('!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless');
    expect(serviceProxySelector('NAME')).toBe('service.kubernetes.io/service-proxy-name=NAME,!service.kubernetes.io/headless');
  });

  it.each(['a=b=c', '!', 'a in x', 'a,,b', `a=${'x'.repeat(64)}`, '-a'])('rejects %j', (sel) => {
    expect(() => parseLabelSelector(sel)).toThrow(LabelSelectorError);
  });
});
