// The pure call state machine, the destination rules and the sandbox's script table (no services).
import t from 'tap';
import { legId, type CarrierEvent, type LegRole } from '../../shared/carriers/carrier.ts';
import { SANDBOX_NUMBERS, sandboxBehaviour, sandboxScript } from '../../shared/carriers/sandbox.ts';
import { classifyDestination, isDemoDestination } from '../../shared/calls/destinations.ts';
import { callCost, pendingEffects, step, type Input, type MachineCall } from '../../shared/calls/machine.ts';
import type { CallType, Leg } from '../../shared/calls/model.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000);

function newCall(type: CallType = 'bridge'): MachineCall {
  const leg = (role: LegRole, number: string): Leg =>
    ({ role, number, status: 'PENDING', reason: null, originated_at: null, answered_at: null, ended_at: null });
  return {
    id: '01900000-0000-7000-8000-000000000001', type, status: 'QUEUED',
    legs: type === 'bridge' ? { connect: leg('connect', '+14155550199'), destination: leg('destination', '+14155550123') }
      : { destination: leg('destination', '+14155550123') },
    picked_up: false, answered_at: null, ended_at: null, originated_at: null, call_outcome: null, failure_code: null,
    failure_category: null, disconnection_reason: null, duration_seconds: null, time_scale: 1, max_duration_seconds: 3600,
    price_cents_per_minute: 1, cost_cents: 0, spend_reserved_cents: null,
  };
}

const ev = (role: LegRole, kind: CarrierEvent['kind'], s: number, reason?: CarrierEvent['reason']): Input =>
  ({ type: 'carrier', event: { carrier: 'sandbox', callId: 'x', legId: legId('x', role), role, kind, reason, at: at(s).toISOString() } });

function run(call: MachineCall, ...inputs: Input[]) {
  const steps = [];
  for (const i of inputs) {
    const s = step(call, i);
    steps.push(s);
    call = s.call;
  }
  return { call, steps };
}

t.test('bridge happy path: connect rings, answers, destination rings, answers (bridge + limit), remote hangs up', async (t) => {
  const { call, steps } = run(newCall(),
    { type: 'originate', at: at(0) }, ev('connect', 'ringing', 0), ev('connect', 'answered', 2),
    ev('destination', 'ringing', 2), ev('destination', 'answered', 4), ev('destination', 'ended', 14, 'completed'));
  t.same(steps[0].effects, [{ kind: 'originate', role: 'connect' }]);
  t.equal(steps[0].call.status, 'RINGING');
  t.same(steps[2].effects, [{ kind: 'originate', role: 'destination' }], 'staff answered: ring the called party');
  t.equal(steps[2].call.status, 'RINGING');
  t.same(steps[4].effects, [{ kind: 'bridge', at: at(4).toISOString() }, { kind: 'schedule_limit', at: at(4).getTime() + 3600_000 }]);
  t.equal(steps[4].call.status, 'ANSWERED');
  t.ok(steps[5].ended);
  t.same(steps[5].effects, [{ kind: 'hangup', role: 'connect' }, { kind: 'cancel_limit' }, { kind: 'release' }]);
  t.match(call, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'remote_hangup', picked_up: true, duration_seconds: 10,
    failure_code: null, failure_category: null });
  t.equal(call.cost_cents, 2, 'both legs answered: one started minute each');
});

t.test('every input applies at most once: duplicates and late events are ignored', async (t) => {
  const { call } = run(newCall('ai'), { type: 'originate', at: at(0) }, ev('destination', 'answered', 2));
  t.equal(step(call, { type: 'originate', at: at(1) }).result, 'already_originated');
  t.equal(step(call, ev('destination', 'answered', 2)).result, 'ignored', 'duplicate');
  t.equal(step(call, ev('destination', 'ringing', 1)).result, 'ignored', 'late ringing after answer');
  const ended = step(call, ev('destination', 'ended', 12, 'completed'));
  t.equal(ended.result, 'applied');
  t.equal(step(ended.call, ev('destination', 'ended', 12, 'completed')).result, 'ignored');
  t.equal(step(ended.call, { type: 'limit', at: at(3600) }).result, 'already_ended');
  t.equal(step(ended.call, { type: 'hangup', mode: 'hangup', at: at(20) }).result, 'already_ended');
});

t.test('failures of either leg decide the outcome', async (t) => {
  const cases = [
    ['busy', 'BUSY', 'busy', 'unreachable'], ['no_answer', 'NO_ANSWER', 'no_answer', 'unreachable'],
    ['voicemail_reached', 'VOICEMAIL', 'voicemail', 'voicemail'], ['number_unreachable', 'FAILED', 'failed', 'unreachable'],
    ['call_declined', 'FAILED', 'failed', 'unreachable'], ['carrier_rejected', 'FAILED', 'failed', 'unreachable'],
  ] as const;
  for (const [code, status, outcome, category] of cases) {
    const viaDest = run(newCall(), { type: 'originate', at: at(0) }, ev('connect', 'answered', 2), ev('destination', 'ended', 3, code)).call;
    t.match(viaDest, { status, call_outcome: outcome, failure_code: code, failure_category: category, disconnection_reason: code,
      picked_up: false, duration_seconds: 0 }, `destination ${code}`);
    const viaConnect = run(newCall(), { type: 'originate', at: at(0) }, ev('connect', 'ended', 1, code));
    t.match(viaConnect.call, { status, failure_code: code }, `connect ${code}`);
    t.same(viaConnect.steps[1].effects, [{ kind: 'release' }], 'nothing else to hang up; the destination was never dialed');
    t.equal(viaConnect.call.legs.destination!.status, 'PENDING');
  }
});

t.test('screening: completed, screened, not picked up, unknown timings null', async (t) => {
  const { call } = run(newCall('ai'), { type: 'originate', at: at(0) }, ev('destination', 'answered', 2), ev('destination', 'ended', 3, 'screened'));
  t.match(call, { status: 'COMPLETED', call_outcome: 'screened', picked_up: false, disconnection_reason: 'call_screened',
    answered_at: null, duration_seconds: null, failure_code: null });
});

t.test('hangup modes in every state', async (t) => {
  const queued = newCall();
  for (const mode of ['setup_failed', 'cancel_setup'] as const) {
    const s = step(queued, { type: 'hangup', mode, at: at(1) });
    t.match(s.call, { status: 'CANCELED', call_outcome: 'connection_unconfirmed', disconnection_reason: mode === 'setup_failed' ? 'setup_failed' : 'setup_canceled' });
    t.same(s.effects, [{ kind: 'release' }]);
  }
  t.match(step(queued, { type: 'hangup', mode: 'hangup', at: at(1) }).call, { status: 'CANCELED', call_outcome: 'canceled', disconnection_reason: 'api_hangup' });

  const ringing = run(newCall(), { type: 'originate', at: at(0) }).call;
  for (const mode of ['setup_failed', 'cancel_setup'] as const) {
    const s = step(ringing, { type: 'hangup', mode, at: at(1) });
    t.equal(s.result, 'already_originated', `${mode} never interrupts an originated call`);
    t.equal(s.call.status, 'RINGING');
    t.same(s.effects, []);
  }
  const hungRinging = step(ringing, { type: 'hangup', mode: 'hangup', at: at(1) });
  t.match(hungRinging.call, { status: 'CANCELED', disconnection_reason: 'api_hangup' });
  t.same(hungRinging.effects, [{ kind: 'hangup', role: 'connect' }, { kind: 'release' }]);

  const answered = run(newCall(), { type: 'originate', at: at(0) }, ev('connect', 'answered', 2), ev('destination', 'answered', 4)).call;
  t.equal(step(answered, { type: 'hangup', mode: 'cancel_setup', at: at(5) }).result, 'already_originated');
  const hung = step(answered, { type: 'hangup', mode: 'hangup', at: at(9) });
  t.match(hung.call, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'api_hangup', duration_seconds: 5 });
  t.same(hung.effects, [{ kind: 'hangup', role: 'connect' }, { kind: 'hangup', role: 'destination' }, { kind: 'cancel_limit' }, { kind: 'release' }]);
  for (const mode of ['hangup', 'setup_failed', 'cancel_setup'] as const) {
    t.equal(step(hung.call, { type: 'hangup', mode, at: at(10) }).result, 'already_ended', `${mode} on an ended call`);
  }
});

t.test('call-length limit and leftovers after the end', async (t) => {
  const answered = run(newCall('ai'), { type: 'originate', at: at(0) }, ev('destination', 'answered', 2)).call;
  const s = step(answered, { type: 'limit', at: at(3602) });
  t.match(s.call, { status: 'COMPLETED', disconnection_reason: 'max_duration_reached', duration_seconds: 3600 });
  t.equal(s.call.cost_cents, 60);
  t.equal(step(run(newCall('ai'), { type: 'originate', at: at(0) }).call, { type: 'limit', at: at(10) }).result, 'ignored',
    'the limit only ends answered calls');

  // A leg that answers after the call was canceled is hung up.
  const canceled = step(run(newCall('ai'), { type: 'originate', at: at(0) }).call, { type: 'hangup', mode: 'hangup', at: at(1) }).call;
  const late = step(canceled, ev('destination', 'answered', 2));
  t.equal(late.call.status, 'CANCELED');
  t.same(late.effects, [{ kind: 'hangup', role: 'destination' }]);
  t.notOk(late.ended);
});

t.test('connect leg hangs up while bridged; staff gives up while ringing', async (t) => {
  const bridged = run(newCall(), { type: 'originate', at: at(0) }, ev('connect', 'answered', 2), ev('destination', 'answered', 4)).call;
  t.match(step(bridged, ev('connect', 'ended', 14, 'completed')).call, { status: 'COMPLETED', disconnection_reason: 'connect_hangup', duration_seconds: 10 });
  const ringing = run(newCall(), { type: 'originate', at: at(0) }, ev('connect', 'answered', 2)).call;
  const s = step(ringing, ev('connect', 'ended', 5, 'completed'));
  t.match(s.call, { status: 'CANCELED', call_outcome: 'canceled', disconnection_reason: 'connect_hangup' });
  t.same(s.effects, [{ kind: 'hangup', role: 'destination' }, { kind: 'release' }]);
});

t.test('pendingEffects re-derives what the state calls for', async (t) => {
  const ringing = run(newCall(), { type: 'originate', at: at(0) }, ev('connect', 'answered', 2)).call;
  t.same(pendingEffects(ringing), [{ kind: 'originate', role: 'destination' }]);
  const answered = step(ringing, ev('destination', 'answered', 4)).call;
  t.same(pendingEffects(answered), [{ kind: 'bridge', at: at(4).toISOString() }, { kind: 'schedule_limit', at: at(4).getTime() + 3600_000 }]);
  const ended = step(answered, { type: 'hangup', mode: 'hangup', at: at(5) }).call;
  t.same(pendingEffects(ended), [{ kind: 'hangup', role: 'connect' }, { kind: 'hangup', role: 'destination' }, { kind: 'release' }]);
  t.equal(callCost(ended, at(5)), 2);
});

t.test('destination rules', async (t) => {
  const v = (n: string, allow: string[] = []) => {
    const r = classifyDestination(n, allow);
    return r.ok ? 'ok' : r.code === 'destination_invalid' ? 'invalid' : r.reason;
  };
  t.equal(v('+14155550123'), 'ok');
  t.equal(v('+16135550123'), 'ok', 'Canada is domestic');
  t.equal(v('+18005550123'), 'ok', 'toll free');
  t.equal(v('+19115550123'), 'emergency');
  t.equal(v('+14159111234'), 'emergency');
  t.equal(v('+14114561234'), 'special_service', 'N11 area code');
  t.equal(v('+14154111234'), 'special_service', 'N11 exchange');
  t.equal(v('+14155551212'), 'special_service', 'directory assistance');
  t.equal(v('+19005550123'), 'premium');
  t.equal(v('+19765550123'), 'invalid', 'NPA 976 is not assigned (the 976 exchange is the premium one)');
  t.equal(v('+14159765555'), 'premium', '976 exchange');
  t.equal(v('+18765550123'), 'international', 'Jamaica shares +1');
  t.equal(v('+18765550123', ['JM']), 'ok');
  t.equal(v('+442079460123'), 'international');
  t.equal(v('+442079460123', ['GB']), 'ok');
  t.equal(v('+449012345678', ['GB']), 'premium', 'the allowlist never opens premium');
  t.equal(v('+4499900'), 'special_service');
  t.equal(v('+881612345678'), 'premium', 'satellite');
  t.equal(v('+999123456789'), 'invalid');
  t.equal(v('14155550123'), 'invalid');
  t.equal(v('+1415555012'), 'invalid');
  t.ok(isDemoDestination('+14155550001'));
  t.notOk(isDemoDestination('+14157770001'));
  t.notOk(isDemoDestination('+14155551212'));
});

t.test('sandbox script table', async (t) => {
  t.same(SANDBOX_NUMBERS.map((r) => r.last4), ['0001', '0002', '0003', '0004', '0005', '0006', '0007', '0008', '0009', 'other']);
  t.equal(sandboxBehaviour('+14155550009'), 'normal', 'the booking number rings, answers and talks as other');
  t.equal(sandboxBehaviour('+14155550007'), 'screened');
  t.equal(sandboxBehaviour('+14155551234'), 'normal');
  t.same(sandboxScript('+14155550123', 'destination', 30), [
    { kind: 'ringing', at: 0 }, { kind: 'answered', at: 2 }, { kind: 'ended', reason: 'completed', at: 12 }]);
  t.same(sandboxScript('+14155550123', 'connect', 30), [{ kind: 'ringing', at: 0 }, { kind: 'answered', at: 2 }],
    'a connect leg talks from the bridge');
  t.same(sandboxScript('+14155550002', 'destination', 30).at(-1), { kind: 'ended', reason: 'no_answer', at: 30 });
});

t.test('numbered carrier events: one that overtook its predecessor waits (or applies once it is known lost)', async (t) => {
  const seq = (input: Input, n: number): Input => (input.type === 'carrier' ? { ...input, event: { ...input.event, seq: n } } : input);
  const ringing = run(newCall('ai'), { type: 'originate', at: at(0) }, ev('destination', 'ringing', 0)).call;
  t.equal(ringing.legs.destination!.last_seq, undefined, 'ringing is not numbered');
  const early = step(ringing, seq(ev('destination', 'ended', 12, 'completed'), 2));
  t.equal(early.result, 'out_of_order', 'the hang-up came before the answer');
  t.same(early.effects, []);
  const answered = step(ringing, seq(ev('destination', 'answered', 2), 1)).call;
  t.equal(answered.legs.destination!.last_seq, 1);
  const ended = step(answered, seq(ev('destination', 'ended', 12, 'completed'), 2));
  t.match(ended.call, { status: 'COMPLETED', disconnection_reason: 'remote_hangup', duration_seconds: 10 });
  const forced = step(ringing, { ...seq(ev('destination', 'ended', 12, 'completed'), 2), predecessorLost: true } as Input);
  t.equal(forced.result, 'applied', 'applied once the predecessor is known lost');
  t.equal(step(ringing, ev('destination', 'ended', 5, 'local_hangup')).result, 'applied', 'events without seq apply as they come');
});

t.test('caller_id_released: a queued call ends without dialing; an originated one runs on', async (t) => {
  const s = step(newCall(), { type: 'caller_id_released', at: at(1) });
  t.equal(s.result, 'applied');
  t.match(s.call, { status: 'CANCELED', call_outcome: 'connection_unconfirmed', disconnection_reason: 'caller_id_released',
    failure_code: null, picked_up: false, duration_seconds: 0, cost_cents: 0 });
  t.same(s.effects, [{ kind: 'release' }], 'nothing to hang up: no leg was originated');
  t.ok(s.ended);
  const ringing = step(newCall(), { type: 'originate', at: at(0) }).call;
  t.equal(step(ringing, { type: 'caller_id_released', at: at(1) }).result, 'already_originated');
  t.equal(step(s.call, { type: 'caller_id_released', at: at(2) }).result, 'already_ended');
  t.equal(step(s.call, { type: 'originate', at: at(2) }).result, 'already_ended', 'its dial job then finds it over');
});

t.test('sandbox traits: a leg rings when dialed, our hang-ups are recorded at the end (no carrier event for either)', async (t) => {
  const sandbox = (): MachineCall => ({ ...newCall(), carrier: 'sandbox' });
  const seqEv = (role: LegRole, kind: CarrierEvent['kind'], s: number, seq: number, reason?: CarrierEvent['reason']): Input =>
    ({ type: 'carrier', event: { carrier: 'sandbox', callId: 'x', legId: legId('x', role), role, kind, reason, at: at(s).toISOString(), seq } });
  const { call, steps } = run(sandbox(), { type: 'originate', at: at(0) }, seqEv('connect', 'answered', 2, 1),
    seqEv('destination', 'answered', 4, 1), seqEv('destination', 'ended', 14, 2, 'completed'));
  t.equal(steps[0].call.legs.connect!.status, 'RINGING', 'the connect leg is recorded ringing by the dial itself');
  t.same(steps[0].effects, [{ kind: 'originate', role: 'connect' }]);
  t.equal(steps[1].call.legs.destination!.status, 'RINGING', 'so is the destination when the staff phone answers');
  t.match(call, { status: 'COMPLETED', disconnection_reason: 'remote_hangup', duration_seconds: 10 });
  t.match(call.legs.connect, { status: 'ENDED', reason: 'local_hangup', ended_at: at(14).toISOString() },
    'the staff phone is recorded hung up by the end itself');
  t.same(steps[2].effects, [{ kind: 'bridge', at: at(4).toISOString() }],
    'no limit timer: the scripts end the call (10 s of talk) long before its 3,600 s limit');
  t.same(steps[3].effects, [{ kind: 'hangup', role: 'connect', endRecorded: true }, { kind: 'release' }], 'and none to cancel');
  t.same(pendingEffects(call), [{ kind: 'hangup', role: 'connect', endRecorded: true }, { kind: 'release' }],
    'the repair still cancels what the hung-up leg had scheduled');
  t.equal(step(call, seqEv('connect', 'ended', 20, 2, 'completed')).result, 'ignored', 'its scripted end, if it still runs, changes nothing');

  // A limit that comes before the scripted end keeps its timer (and its cancel).
  const short = run({ ...sandbox(), max_duration_seconds: 5 }, { type: 'originate', at: at(0) }, seqEv('connect', 'answered', 2, 1),
    seqEv('destination', 'answered', 4, 1), { type: 'hangup', mode: 'hangup', at: at(6) });
  t.same(short.steps[2].effects, [{ kind: 'bridge', at: at(4).toISOString() }, { kind: 'schedule_limit', at: at(9).getTime() }]);
  t.ok(short.steps[3].effects.some((e) => e.kind === 'cancel_limit'));
  const endless = { ...sandbox() };
  endless.legs.destination!.number = '+14155550008';
  const staffHangsUp = run(endless, { type: 'originate', at: at(0) }, seqEv('connect', 'answered', 2, 1), seqEv('destination', 'answered', 4, 1));
  t.notOk(staffHangsUp.steps[2].effects.some((e) => e.kind === 'schedule_limit'), 'a staff phone whose script hangs up ends it');
  const neither = { ...sandbox() };
  neither.legs.destination!.number = '+14155550008';
  neither.legs.connect!.number = '+12125550008';
  t.ok(run(neither, { type: 'originate', at: at(0) }, seqEv('connect', 'answered', 2, 1), seqEv('destination', 'answered', 4, 1))
    .steps[2].effects.some((e) => e.kind === 'schedule_limit'), 'legs that never hang up keep the timer');
  const inbound = run({ ...sandbox(), direction: 'inbound' }, { type: 'originate', at: at(0) }, seqEv('connect', 'answered', 2, 1),
    seqEv('destination', 'answered', 4, 1));
  t.ok(inbound.steps[2].effects.some((e) => e.kind === 'schedule_limit'), 'an inbound call keeps the timer');
  t.ok(pendingEffects(short.steps[2].call).some((e) => e.kind === 'schedule_limit'), 'the repair re-arms a needed timer');
  t.notOk(pendingEffects(steps[2].call).some((e) => e.kind === 'schedule_limit'), 'and no other');

  // A number whose script fails without ringing (busy) is dialing until the carrier reports.
  const busy = sandbox();
  busy.legs.connect!.number = '+14155550001';
  t.equal(step(busy, { type: 'originate', at: at(0) }).call.legs.connect!.status, 'DIALING');

  // A leg recorded ringing that has reported nothing may not have been dialed (a crash after the commit): dial it again.
  const ringing = steps[0].call;
  t.same(pendingEffects(ringing), [{ kind: 'originate', role: 'connect' }]);
  t.same(pendingEffects(steps[1].call), [{ kind: 'originate', role: 'destination' }], 'the answered staff phone is not dialed again');
  t.same(pendingEffects({ ...ringing, direction: 'inbound' }), [], 'an inbound caller ringing is never dialed');

  // Without the sandbox's traits, every step waits for the carrier.
  const real = run({ ...newCall(), carrier: 'sip' }, { type: 'originate', at: at(0) }).call;
  t.equal(real.legs.connect!.status, 'DIALING');
  const hung = step(real, { type: 'hangup', mode: 'hangup', at: at(1) });
  t.equal(hung.call.legs.connect!.status, 'DIALING', 'a real carrier reports the end itself');
  t.same(hung.effects[0], { kind: 'hangup', role: 'connect' });
});
