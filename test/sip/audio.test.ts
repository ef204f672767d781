// Real two-way audio through a bridge call (path C), with real SIP phones: two Debian baresip user agents answer
// automatically, each sends a tone from a file (the staff phone 440 Hz, the called party 1000 Hz) and records what it
// hears; sox measures each recording. What stands at SIP_TRUNK_URI is the `sip` package's stateful proxy
// (test/sip/helpers.ts startRouter), sending each INVITE to the phone for the dialed number: the simplest real router
// (SIPp cannot proxy; kamailio would be one more daemon and config language for a two-line routing rule), and SIP and
// RTP still run between the platform's processes and real phones over loopback. The phones sit on 127.0.0.1 (baresip
// sends RTP from a wildcard socket, so from 127.0.0.1 whatever its SDP says, and media pins the SDP's address), the
// proxy on 127.0.0.4, so SIP_TRUNK_ALLOW names 127.0.0.0/8.
import t from 'tap';
import { dial } from '../calls/helpers.ts';
import { eventually } from '../helpers/env.ts';
import { endedCall, legStatus, measureTone, phoneSkip, sipPlatform, startPhone, startRouter } from './helpers.ts';

if (phoneSkip) {
  t.plan(0, `skip: ${phoneSkip}`);
} else {
  const connect = '+14155554001';
  const to = '+12125554002';
  const staff = await startPhone(t, { name: 'staff', ip: '127.0.0.1', toneHz: 440 });
  const called = await startPhone(t, { name: 'called', ip: '127.0.0.1', toneHz: 1000 });
  const router = await startRouter(t, { [connect]: staff, [to]: called });
  const p = await sipPlatform(t, router.port, { SIP_TRUNK_ALLOW: '127.0.0.0/8' }, router.ip);

  t.test('a bridge call between two baresip phones: each hears the other\'s tone', async (t) => {
    const r = await dial(p.env, p.org, to, connect);
    t.equal(r.status, 202, r.text);
    const id = r.body.data.call_id;
    await legStatus(p, id, 'destination', 'ANSWERED');
    t.same(router.invites, [connect, to], 'the staff phone was rung first, then the called party');

    // Four seconds of RTP each way on both legs before the hang-up (50 packets a second).
    await eventually(async () => {
      const s = await p.media.stats(id);
      return s.carrierLegs.length === 2 && s.carrierLegs.every((l) => l.fromFarEnd >= 200 && l.toFarEnd >= 200);
    }, 60_000, 250);
    const h = await p.env.request('POST', `/v1/calls/${id}/hangup`, { key: p.org.api_key });
    t.equal(h.status, 200, h.text);
    const c = await endedCall(p, id);
    t.equal(c.status, 'COMPLETED');

    // baresip writes the WAV's header when the call closes (our BYE): measure once both files hold the call (2.5 s
    // of the 4 s sent: its jitter buffer may drop some of a late burst on a busy machine).
    let seen = '';
    const [staffHeard, calledHeard] = await eventually(async () => {
      const a = staff.heard();
      const b = called.heard();
      const ma = a ? measureTone(a) : null;
      const mb = b ? measureTone(b) : null;
      seen = JSON.stringify({ staff: ma, called: mb });
      return ma && mb && ma.length >= 2.5 && mb.length >= 2.5 ? [ma, mb] : null;
    }, 30_000, 250).catch((e) => {
      throw new Error(`${e.message}: recordings ${seen}\nstaff:\n${staff.log().slice(-1500)}\ncalled:\n${called.log().slice(-1500)}`);
    });
    t.ok(calledHeard.hz > 400 && calledHeard.hz < 480, `the called party heard the staff phone's 440 Hz (${calledHeard.hz} Hz)`);
    t.ok(staffHeard.hz > 900 && staffHeard.hz < 1100, `the staff phone heard the called party's 1000 Hz (${staffHeard.hz} Hz)`);
    // The tones are sent at full scale (RMS 0.5, about -6 dBFS); μ-law both ways keeps them there, silence is ~0.
    t.ok(calledHeard.rms > 0.2, `at a level well above silence (RMS ${calledHeard.rms})`);
    t.ok(staffHeard.rms > 0.2, `at a level well above silence (RMS ${staffHeard.rms})`);
  });
}
