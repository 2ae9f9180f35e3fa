import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { formatIPv6, isCIDRText, isFormattedIPv6, normalizeIP, readIP, readIPv4, readIPv6, textFamily } from '../../src/net/ip.ts';
import { canonicalValue, valueFromBytes } from '../../src/nft/values.ts';
import { isCanonical } from '../../src/nft/rule-checks.ts';

// One codec for the streams, the model and the nft values: the address the
// model writes is the text the nft layer accepts as canonical and prints when
// it reads the same bytes back, so nothing in between rewrites addresses.

describe('the IP codec: lenient and strict syntax', () => {
  it.each([
    ['10.0.0.1', undefined, undefined],
    ['010.0.0.1', undefined, 'leading zero in an octet'],
    ['0000000010.0.0.1', undefined, 'leading zero in an octet'],
    ['00000000010.0.0.1', 'expected a dotted quad', 'leading zero in an octet'],
    ['256.0.0.1', 'octet over 255', 'octet over 255'],
    ['1.2.3', 'expected a dotted quad', 'expected a dotted quad'],
  ])('%j: lenient %j, strict %j', (text, lenient, strict) => {
    expect(readIPv4(text, 0, text.length, null, 0, 'lenient')).toBe(lenient);
    expect(readIPv4(text, 0, text.length, null, 0, 'strict')).toBe(strict);
  });

  it.each([
    // Rows of the Go parser's tests that netutils.ParseIPSloppy keeps (leading zeros as decimal, zero-padded groups).
    ['127.001.002.003', '127.1.2.3'],
    ['::ffff:127.010.020.030', '127.10.20.30'],
    ['0:0:0:0:000000:ffff:127.1.2.3', '127.1.2.3'],
    ['2001:4860:0000:2001:0000:0000:0000:0068', '2001:4860:0:2001::68'],
  ])('lenient %j is %s, as ParseIPSloppy reads it; strict refuses zero padding', (text, address) => {
    expect(readIP(text, 'lenient')?.address).toBe(address);
    if (text !== '2001:4860:0000:2001:0000:0000:0000:0068') expect(readIP(text, 'strict')).toBeUndefined();
  });

  it.each(['0:0:0:0:00000000000:ffff:127.1.2.3', '1:0:0:0:0:0:0:10000', 'fe80::1%lo0', '-0.0.0.0', '127.0.0.256'])(
    '%j is no address in either syntax',
    (text) => {
      expect(readIP(text, 'lenient')).toBeUndefined();
      expect(readIP(text, 'strict')).toBeUndefined();
    },
  );

  it('reads exact texts: surrounding space and zone indexes are not addresses', () => {
    expect(readIP(' 10.0.0.1', 'lenient')).toBeUndefined();
    expect(readIP('fd00::1%eth0', 'lenient')).toBeUndefined();
    expect(textFamily('010.0.0.1', 'lenient')).toBe('IPv4');
    expect(textFamily('010.0.0.1', 'strict')).toBeUndefined();
    expect(textFamily('::ffff:10.0.0.1', 'lenient')).toBe('IPv6');
    expect(readIP('::ffff:10.0.0.1', 'lenient')?.family).toBe('IPv4');
    expect(isCIDRText('010.0.0.0/08', 'lenient')).toBe(true);
    expect(isCIDRText('fd00::/129', 'lenient')).toBe(false);
    expect(isCIDRText('10.0.0.0/', 'lenient')).toBe(false);
  });
});

describe('the IP codec: one canonical text for the model and the nft layer', () => {
  const word = fc.oneof(fc.constant(0), fc.constant(0), fc.constant(0xffff), fc.integer({ min: 0, max: 0xffff }));
  const v6bytes = fc.array(word, { minLength: 8, maxLength: 8 }).map((words) => {
    const b = new Uint8Array(16);
    words.forEach((w, k) => {
      b[2 * k] = w >>> 8;
      b[2 * k + 1] = w & 0xff;
    });
    return b;
  });

  it('IPv6: what the model writes is what the nft layer prints for the same bytes, and it is nft-canonical', () => {
    fc.assert(
      fc.property(v6bytes, fc.boolean(), (b, dotted) => {
        const text = formatIPv6(b);
        expect(valueFromBytes('ipv6_addr', b)).toBe(text);
        expect(canonicalValue('ipv6_addr', text)).toBe(text);
        // Any spelling the API may carry (full groups, a dotted tail with leading zeros) reads to the same address.
        const words = Array.from({ length: 8 }, (_, k) => ((b[2 * k]! << 8) | b[2 * k + 1]!).toString(16).padStart(4, '0'));
        const spelled = dotted
          ? `${words
              .slice(0, 6)
              .map((w) => w.replace(/^0+(?=.)/, ''))
              .join(':')}:${b[12]}.${b[13]}.0${b[14]}.${b[15]}`
          : words.join(':').toUpperCase();
        const parsed = readIP(spelled, 'lenient')!;
        if (parsed.family === 'IPv6') expect(parsed.address).toBe(text);
        else expect(`::ffff:${parsed.address}`).toBe(text); // mapped: the model's address is IPv4, as Go's To4()
        expect(isCanonical(parsed.family === 'IPv4' ? 'ipv4_addr' : 'ipv6_addr', parsed.address)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('IPv4: the model writes what the nft layer accepts as canonical, whatever the zero padding', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 4, maxLength: 4 }), fc.array(fc.nat(3), { minLength: 4, maxLength: 4 }), (b, pads) => {
        const spelled = [...b].map((x, i) => '0'.repeat(pads[i]!) + String(x)).join('.');
        const address = normalizeIP(spelled)!;
        expect(address).toBe(valueFromBytes('ipv4_addr', b));
        expect(isCanonical('ipv4_addr', address)).toBe(true);
      }),
    );
  });

  it('IPv6: isFormattedIPv6 tells the canonical spelling from every other one of the same bytes, as formatting them would', () => {
    // Spellings of the same bytes: canonical, full groups, upper case, a zero run left or a
    // shorter one compressed, a dotted tail; and the canonical one with a character changed or added.
    const spellings = (b: Uint8Array): string[] => {
      const groups = Array.from({ length: 8 }, (_, k) => ((b[2 * k]! << 8) | b[2 * k + 1]!).toString(16));
      const canonical = formatIPv6(b);
      const out = [canonical, groups.join(':'), groups.map((g) => g.padStart(4, '0')).join(':'), canonical.toUpperCase()];
      for (let from = 0; from < 8; from++)
        for (let to = from + 1; to <= 8; to++)
          if (groups.slice(from, to).every((g) => g === '0')) out.push(`${groups.slice(0, from).join(':')}::${groups.slice(to).join(':')}`);
      out.push(`${groups.slice(0, 6).join(':')}:${b[12]}.${b[13]}.${b[14]}.${b[15]}`);
      out.push(`${canonical}0`, `0${canonical}`, canonical.slice(0, -1), `${canonical.slice(0, -1)}g`);
      out.push(canonical.replace(/([0-9a-f]):([0-9a-f])/, '$1-$2'));
      return out;
    };
    fc.assert(
      fc.property(v6bytes, (b) => {
        for (const text of spellings(b)) {
          const read = new Uint8Array(16);
          const readable = readIPv6(text, 0, text.length, read, 'lenient') === undefined && read.every((x, i) => x === b[i]);
          if (readable) expect(isFormattedIPv6(text, b)).toBe(text === formatIPv6(b));
          else expect(isFormattedIPv6(text, b)).toBe(false);
        }
      }),
      { numRuns: 2000 },
    );
    expect(isFormattedIPv6('::', new Uint8Array(16))).toBe(true);
    expect(isFormattedIPv6('::0', new Uint8Array(16))).toBe(false);
  });

  it('the IPv4-compatible form (deprecated) is hex everywhere, as Go prints it', () => {
    expect(normalizeIP('::10.0.0.1')).toBe('::a00:1');
    expect(canonicalValue('ipv6_addr', '::10.0.0.1')).toBe('::a00:1');
    expect(valueFromBytes('ipv6_addr', Uint8Array.of(...Array(12).fill(0), 10, 0, 0, 1))).toBe('::a00:1');
  });
});
