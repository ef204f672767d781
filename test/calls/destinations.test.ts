// shared/calls/destinations.ts: the one place that decides whether a number may be dialed. Every number of the
// toll-fraud defect, ordinary numbers per country, short codes, and every sandbox number.
import t from 'tap';
import { BLOCK_MESSAGES, classifyDestination, isDemoDestination } from '../../shared/calls/destinations.ts';
import { SANDBOX_AREA_CODES, sandboxNumber } from '../../shared/numbers/inventory.ts';

const verdict = (n: string, allow: string[] = []) => {
  const r = classifyDestination(n, allow);
  return r.ok ? `ok ${r.country}` : r.code === 'destination_invalid' ? 'invalid' : r.reason;
};

// Every country that appears below, allowed: the allowlist must never open a premium or special range.
const ALL = ['AT', 'CH', 'NL', 'BE', 'GB', 'DE', 'FR', 'RU', 'KZ', 'AU', 'IT', 'ES', 'JM'];

t.test('premium and shared-cost ranges stay closed whatever the allowlist', async (t) => {
  const premium: [string, string][] = [
    ['+43930123456', 'AT 0930'], ['+43900123456', 'AT 0900'], ['+41906123456', 'CH 0906'], ['+31909123456', 'NL 0909'],
    ['+3290012345', 'BE 0900'], ['+3290212345', 'BE 0902'], ['+449012345678', 'GB 09'], ['+448712345678', 'GB 087'],
    ['+611900123456', 'AU 1900'], ['+19005550123', 'NANP 900'], ['+14159765555', 'NANP 976 exchange'],
    ['+881612345678', 'satellite'], ['+979123456789', 'international premium (+979)'],
    ['+80012345678', 'UIFN freephone: international network'], ['+80812345678', 'international shared cost'],
  ];
  for (const [n, what] of premium) {
    t.equal(verdict(n, ALL), 'premium', `${n} (${what}) with every country allowed`);
    t.equal(verdict(n), 'premium', `${n} (${what}) with none allowed`);
  }
  const special: [string, string][] = [
    ['+611300123456', 'AU 1300 shared cost'], ['+447012345678', 'GB 070 personal numbering'], ['+443301234567', 'GB 03 UAN'],
    ['+15335550123', 'NANP 533'], ['+15445550123', 'NANP 544'], ['+15665550123', 'NANP 566'], ['+15775550123', 'NANP 577'],
    ['+15885550123', 'NANP 588'], ['+15005550123', 'NANP 500'], ['+16005550123', 'NANP 600 (Canada non-geographic)'],
    ['+16225550123', 'NANP 622'],
  ];
  for (const [n, what] of special) {
    t.equal(verdict(n, ALL), 'special_rate', `${n} (${what}) with every country allowed`);
    t.equal(verdict(n), 'special_rate', `${n} (${what}) with none allowed`);
  }
});

t.test('unassigned or closed ranges are not dialable numbers', async (t) => {
  for (const n of ['+32900123456', '+49190123456', '+491901234567', '+441181234', '+18805550123', '+18815550123',
    '+18825550123', '+19765550123', '+14565550123', '+17005550123', '+999123456789', '+441234567890123', '+1415555012',
    '14155550123', '+1 415 555 0123', '', 'tel:+14155550123']) {
    t.equal(verdict(n, ALL), 'invalid', JSON.stringify(n));
  }
});

t.test('emergency numbers and short codes are blocked, never invalid', async (t) => {
  for (const n of ['911', '112', '999', '000', '15', '17', '18', '110', '119', '08', '+1911', '+1988', '+44999', '+44112',
    '+3315', '+3317', '+33112', '+49110', '+49112', '+43133', '+41117', '+61000', '+64111', '+7112',
    '+33116000', '+19115550123', '+14159111234', '+19885550123']) {
    t.equal(verdict(n, ALL), 'emergency', n);
  }
  for (const n of ['+1411', '+1611', '+44118118', '+44118500', '+333646', '+3336', '+4499900', '1234', '55555',
    '+14114561234', '+14154111234', '+14155551212']) {
    t.equal(verdict(n, ALL), 'special_service', n);
  }
});

t.test('country is the number\'s real region', async (t) => {
  t.equal(verdict('+77011234567', ['RU']), 'international', 'Kazakhstan (+7 701) is not opened by RU');
  t.equal(classifyDestination('+77011234567', ['RU']).ok === false && (classifyDestination('+77011234567', ['RU']) as { country: string }).country, 'KZ');
  t.equal(verdict('+77011234567', ['KZ']), 'ok KZ');
  t.equal(verdict('+79161234567', ['RU']), 'ok RU');
  t.equal(verdict('+79161234567', ['KZ']), 'international');
  t.equal(verdict('+18765550123'), 'international', 'Jamaica shares +1 but is not domestic');
  t.equal(verdict('+18765550123', ['JM']), 'ok JM');
});

t.test('ordinary numbers: domestic without an allowlist, international once the country is allowed', async (t) => {
  const domestic: [string, string][] = [
    ['+12125550123', 'US'], ['+16135550123', 'CA'], ['+14165550199', 'CA'], ['+18005550123', 'US'], ['+18885550123', 'US'],
    ['+17875550123', 'PR'], ['+16715550123', 'GU'], ['+13405550123', 'VI'], ['+12025550123', 'US'],
  ];
  for (const [n, c] of domestic) t.equal(verdict(n), `ok ${c}`, n);
  const international: [string, string, string][] = [
    ['+442071838750', 'GB', 'London fixed'], ['+447400123456', 'GB', 'GB mobile'], ['+33142685300', 'FR', 'Paris fixed'],
    ['+33612345678', 'FR', 'FR mobile'], ['+33361234567', 'FR', 'FR fixed 03 61 (not the 36xx short codes)'],
    ['+4930123456', 'DE', 'Berlin fixed'], ['+4915112345678', 'DE', 'DE mobile'], ['+43125123456', 'AT', 'Vienna fixed'],
    ['+436641234567', 'AT', 'AT mobile'], ['+41446681800', 'CH', 'Zurich fixed'], ['+41791234567', 'CH', 'CH mobile'],
    ['+31201234567', 'NL', 'Amsterdam fixed'], ['+31612345678', 'NL', 'NL mobile'], ['+31851234567', 'NL', 'NL 085 VoIP'],
    ['+3222345678', 'BE', 'Brussels fixed'], ['+32470123456', 'BE', 'BE mobile'], ['+74951234567', 'RU', 'Moscow fixed'],
    ['+79161234567', 'RU', 'RU mobile'], ['+77172123456', 'KZ', 'Astana fixed'], ['+77011234567', 'KZ', 'KZ mobile'],
    ['+61212345678', 'AU', 'Sydney fixed'], ['+61412345678', 'AU', 'AU mobile'], ['+448001234567', 'GB', 'GB 0800 freephone'],
  ];
  for (const [n, c, what] of international) {
    t.equal(verdict(n), 'international', `${n} (${what}) needs its country`);
    t.equal(verdict(n, [c]), `ok ${c}`, `${n} (${what}) with ${c} allowed`);
  }
});

t.test('every sandbox number stays dialable and domestic', async (t) => {
  let bad = 0;
  for (const area of SANDBOX_AREA_CODES) {
    for (let line = 0; line < 10_000; line++) {
      const n = sandboxNumber(area, line);
      const v = verdict(n);
      const want = line === 1212 ? 'special_service' : 'ok US'; // 555-1212 is directory assistance
      if (v !== want && bad++ < 5) t.fail(`${n}: ${v}`);
    }
  }
  t.equal(bad, 0, `all ${SANDBOX_AREA_CODES.length * 10_000} inventory numbers (555-1212 blocked)`);
  // The magic test numbers (last four digits choose the outcome) on the inventory and on other area codes.
  for (const last of ['0001', '0002', '0003', '0004', '0005', '0006', '0007', '0008', '0100', '0123', '0199']) {
    for (const area of ['415', '212', '206', '613', '416', '800']) {
      const n = `+1${area}555${last}`;
      t.match(verdict(n), /^ok (US|CA)$/, n);
      t.ok(isDemoDestination(n), `${n} is a demo destination`);
    }
  }
  t.notOk(isDemoDestination('+14157770001'));
  t.notOk(isDemoDestination('+14155551212'));
});

t.test('every reason has a message', async (t) => {
  for (const r of ['emergency', 'special_service', 'premium', 'special_rate', 'international'] as const) t.type(BLOCK_MESSAGES[r], 'string');
});
