// shared/phone/e164.ts: syntax, the number's real region and type from libphonenumber-js (max metadata).
import t from 'tap';
import { isE164, parseE164 } from '../../shared/phone/e164.ts';

t.test('NANP numbers', async (t) => {
  t.same(parseE164('+14155550123'), {
    e164: '+14155550123', callingCode: '1', nationalNumber: '4155550123', isoCountry: 'US', valid: true,
    type: 'FIXED_LINE_OR_MOBILE', areaCode: '415', exchange: '555',
  });
  t.same(parseE164('+12125551234')?.areaCode, '212');
  t.equal(parseE164('+14165550199')?.isoCountry, 'CA', 'Toronto (416) is Canada');
  t.equal(parseE164('+16045550199')?.isoCountry, 'CA', 'Vancouver (604) is Canada');
  t.equal(parseE164('+12065550199')?.isoCountry, 'US', 'Seattle (206) is the US');
  t.equal(parseE164('+18765550123')?.isoCountry, 'JM', 'Jamaica shares +1');
  t.equal(parseE164('+17875550123')?.isoCountry, 'PR');
  t.equal(parseE164('+18005550123')?.type, 'TOLL_FREE');
  t.equal(parseE164('+19005550123')?.type, 'PREMIUM_RATE');
  for (const bad of ['+10155550123', '+11155550123', '+14150550123', '+14151550123', '+1415555012', '+141555501234']) {
    t.equal(parseE164(bad), null, `${bad}: NPA/NXX start with 2-9 and NANP numbers have 10 digits`);
  }
  const unassigned = parseE164('+18805550123');
  t.equal(unassigned?.valid, false, 'syntactically fine but in no assigned range');
  t.equal(unassigned?.isoCountry, 'ZZ');
});

t.test('other countries: the real region, not the calling code', async (t) => {
  t.same(parseE164('+442071838750'), {
    e164: '+442071838750', callingCode: '44', nationalNumber: '2071838750', isoCountry: 'GB', valid: true,
    type: 'FIXED_LINE', areaCode: null, exchange: null,
  });
  t.equal(parseE164('+33142685300')?.isoCountry, 'FR');
  t.equal(parseE164('+4930123456')?.isoCountry, 'DE');
  t.equal(parseE164('+61212345678')?.isoCountry, 'AU');
  t.equal(parseE164('+353212345678')?.callingCode, '353', 'three-digit code 353 beats 35');
  t.equal(parseE164('+74951234567')?.isoCountry, 'RU', 'Moscow');
  t.equal(parseE164('+77011234567')?.isoCountry, 'KZ', '+7 7xx is Kazakhstan, not Russia');
  t.equal(parseE164('+77172123456')?.isoCountry, 'KZ');
  t.equal(parseE164('+43930123456')?.type, 'PREMIUM_RATE');
  const satellite = parseE164('+881612345678');
  t.equal(satellite?.valid, true);
  t.equal(satellite?.isoCountry, 'ZZ', 'a non-geographic code belongs to no region');
  const unknown = parseE164('+99912345678');
  t.equal(unknown?.valid, false, 'an unknown calling code is kept as syntax, never valid');
  t.equal(unknown?.isoCountry, 'ZZ');
});

t.test('syntax', async (t) => {
  const bad = ['', '+', '14155550123', '004415550123', '+04155550123', '+0', '+1234', '+123456', '+1234567890123456',
    '+1 415 555 0123', '+1-415-555-0123', '+1415555012a', ' +14155550123', '+14155550123 ', 'tel:+14155550123', '++14155550123'];
  for (const s of bad) {
    t.equal(parseE164(s), null, `${JSON.stringify(s)} is not E.164`);
    t.equal(isE164(s), false);
  }
  t.ok(isE164('+4412345'), 'seven digits is the shortest accepted syntax');
  t.ok(isE164('+441234567890123'), 'fifteen digits is the longest');
  t.notOk(isE164('+4412345678901234'), 'sixteen digits is too long');
  t.equal(parseE164(undefined as unknown as string), null, 'non-strings are rejected, not thrown on');
  t.equal(parseE164(14155550123 as unknown as string), null);
});
