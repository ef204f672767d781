import t from 'tap';
import { countSegments, isGsm7, MAX_SEGMENTS } from '../../shared/sms/segments.ts';
import { keywordOf } from '../../shared/sms/inbound.ts';
import { sandboxVerdict } from '../../shared/sms/sandbox-registration.ts';

t.test('GSM-7: 160 single, 153 per concatenated segment', async (t) => {
  t.same(countSegments('a'), { encoding: 'GSM-7', units: 1, segments: 1 });
  t.same(countSegments('a'.repeat(160)), { encoding: 'GSM-7', units: 160, segments: 1 });
  t.same(countSegments('a'.repeat(161)), { encoding: 'GSM-7', units: 161, segments: 2 });
  t.equal(countSegments('a'.repeat(306)).segments, 2);
  t.equal(countSegments('a'.repeat(307)).segments, 3);
  t.equal(countSegments('a'.repeat(153 * MAX_SEGMENTS)).segments, MAX_SEGMENTS);
  t.ok(isGsm7('Héllo @ £5 ÄÖÑÜ¿¡ èéùìò\n'), 'accented letters of the default alphabet stay GSM-7');
});

t.test('GSM-7 extension characters count double and are not split across segments', async (t) => {
  t.same(countSegments('€'), { encoding: 'GSM-7', units: 2, segments: 1 });
  for (const ch of ['^', '{', '}', '\\', '[', ']', '~', '|', '€']) t.equal(countSegments(ch).units, 2, `${ch} takes two septets`);
  t.equal(countSegments('{'.repeat(80)).segments, 1, '80 braces = 160 septets: one message');
  t.equal(countSegments('a' + '{'.repeat(80)).segments, 2, '161 septets: two');
  // 152 septets then an escaped pair: the pair does not fit in the first part's last septet, it moves whole.
  const c = countSegments('a'.repeat(152) + '€' + 'a'.repeat(152));
  t.equal(c.units, 306);
  t.equal(c.segments, 3, 'the escape pair moves to the next part (153+153 would fit 306 septets otherwise)');
});

t.test('UCS-2: 70 single, 67 per segment; emoji are surrogate pairs never split', async (t) => {
  t.same(countSegments('ж'), { encoding: 'UCS-2', units: 1, segments: 1 });
  t.equal(countSegments('ж'.repeat(70)).segments, 1);
  t.equal(countSegments('ж'.repeat(71)).segments, 2);
  t.equal(countSegments('ж'.repeat(134)).segments, 2);
  t.equal(countSegments('ж'.repeat(135)).segments, 3);
  t.same(countSegments('😀'), { encoding: 'UCS-2', units: 2, segments: 1 });
  t.equal(countSegments('😀'.repeat(35)).segments, 1, '35 emoji = 70 code units');
  t.equal(countSegments('😀'.repeat(36)).segments, 2);
  const c = countSegments('a'.repeat(66) + '😀' + 'a'.repeat(66));
  t.equal(c.units, 134);
  t.equal(c.segments, 3, 'the pair moves whole to the second part');
  t.equal(countSegments('Hi 👋 there').encoding, 'UCS-2', 'one emoji makes the whole body UCS-2');
  t.equal(countSegments('a'.repeat(100) + 'ç').encoding, 'UCS-2', 'ç (lower case) is not in GSM-7');
});

t.test('keywords: any case, trimmed, whole message only', async (t) => {
  for (const w of ['STOP', 'stop', ' Stop ', 'UNSUBSCRIBE', 'cancel', 'End', 'quit\n']) t.equal(keywordOf(w), 'stop', w);
  for (const w of ['START', 'unstop', ' Start']) t.equal(keywordOf(w), 'start', w);
  t.equal(keywordOf('help'), 'help');
  for (const w of ['please stop', 'STOPP', 'stop!', 'ok']) t.equal(keywordOf(w), null, w);
});

t.test('sandbox vetting verdicts', async (t) => {
  const brand = { legal_name: 'Acme', ein: '12-3456789', vertical: 'retail', country: 'US' };
  const campaign = { use_case: 'marketing', description: 'x'.repeat(30), sample_messages: ['Sale today! Reply STOP to opt out'], message_flow: 'y'.repeat(30) };
  t.same(sandboxVerdict(brand, campaign), { status: 'approved' });
  t.same(sandboxVerdict({ ...brand, ein: '00-1234567' }, campaign), { status: 'rejected', reason: 'brand_identity_unverified' });
  t.same(sandboxVerdict(brand, { ...campaign, sample_messages: ['Sale today!'] }), { status: 'rejected', reason: 'campaign_opt_out_language_missing' });
});
