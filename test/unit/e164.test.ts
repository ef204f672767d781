// shared/phone/e164.ts: syntax, NANP rules, country by calling code, Canada by area code.
import t from 'tap';
import { isE164, parseE164 } from '../../shared/phone/e164.ts';

t.test('NANP numbers', async (t) => {
  t.same(parseE164('+14155550123'), { e164: '+14155550123', callingCode: '1', isoCountry: 'US', areaCode: '415', exchange: '555' });
  t.same(parseE164('+12125551234')?.areaCode, '212');
  t.equal(parseE164('+14165550199')?.isoCountry, 'CA', 'Toronto (416) is Canada');
  t.equal(parseE164('+16045550199')?.isoCountry, 'CA', 'Vancouver (604) is Canada');
  t.equal(parseE164('+19055550199')?.isoCountry, 'CA');
  t.equal(parseE164('+12065550199')?.isoCountry, 'US', 'Seattle (206) is the US');
  for (const bad of ['+10155550123', '+11155550123', '+14150550123', '+14151550123', '+1415555012', '+141555501234']) {
    t.equal(parseE164(bad), null, `${bad}: NPA/NXX start with 2-9 and NANP numbers have 10 digits`);
  }
});

t.test('other countries by calling code, longest prefix first', async (t) => {
  t.same(parseE164('+442071838750'), { e164: '+442071838750', callingCode: '44', isoCountry: 'GB', areaCode: null, exchange: null });
  t.equal(parseE164('+33142685300')?.isoCountry, 'FR');
  t.equal(parseE164('+4930123456')?.isoCountry, 'DE');
  t.equal(parseE164('+61212345678')?.isoCountry, 'AU');
  t.equal(parseE164('+35312345678')?.isoCountry, 'IE', 'three-digit code 353 beats 35');
  t.equal(parseE164('+35312345678')?.callingCode, '353');
  t.equal(parseE164('+97141234567')?.isoCountry, 'AE');
  t.equal(parseE164('+74951234567')?.isoCountry, 'RU', 'one-digit code 7');
  const unknown = parseE164('+8881234567');
  t.equal(unknown?.isoCountry, 'ZZ', 'a syntactically valid number with an unlisted code is kept, country unknown');
  t.equal(unknown?.callingCode, '888');
});

t.test('syntax', async (t) => {
  const bad = ['', '+', '14155550123', '004415550123', '+04155550123', '+0', '+1234', '+123456', '+1234567890123456',
    '+1 415 555 0123', '+1-415-555-0123', '+1415555012a', ' +14155550123', '+14155550123 ', 'tel:+14155550123', '++14155550123'];
  for (const s of bad) {
    t.equal(parseE164(s), null, `${JSON.stringify(s)} is not E.164`);
    t.equal(isE164(s), false);
  }
  t.ok(isE164('+4412345'), 'seven digits is the shortest accepted');
  t.ok(isE164('+441234567890123'), 'fifteen digits is the longest');
  t.notOk(isE164('+4412345678901234'), 'sixteen digits is too long');
  t.equal(parseE164(undefined as unknown as string), null, 'non-strings are rejected, not thrown on');
  t.equal(parseE164(14155550123 as unknown as string), null);
});
