// Recording SIP calls from their real RTP: a recorded bridge call between two baresip phones (the staff phone plays
// 440 Hz, the called party 1000 Hz) through the proxy of test/sip/helpers.ts; the WAV comes from the API's recording
// route and sox finds both tones in it (band-limited RMS well above a band nobody plays in). The writer itself
// (media/recorder.ts) is also driven directly through the media control API with RTP from a test socket: late and
// reordered packets land in place, a timestamp jump is re-anchored, and the file lasts as long as the audio did.
import { spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { linearToMulaw } from '../../shared/audio/mulaw-wav.ts';
import { writeRtpHeader } from '../../shared/media/rtp.ts';
import { callOrg, dial, getCall } from '../calls/helpers.ts';
import { eventually } from '../helpers/env.ts';
import { endedCall, legStatus, phoneSkip, sipPlatform, startPhone, startRouter } from './helpers.ts';

/** RMS (0..1) of the WAV's audio between lo and hi Hz (sox sinc band-pass), from `skip` seconds on. */
function bandRms(wav: string, lo: number, hi: number, skip = 0): number {
  const out = String(spawnSync('sox', [wav, '-n', 'trim', String(skip), 'sinc', `${lo}-${hi}`, 'stat']).stderr);
  return Number(/^RMS\s+amplitude:\s*(\S+)/m.exec(out)?.[1] ?? NaN);
}

/** The WAV of the call's recording from the API, once the media process wrote it. */
async function fetchRecording(p: { env: any; org: { api_key: string } }, id: string): Promise<Buffer> {
  return eventually(async () => {
    const r = await p.env.request('GET', `/v1/calls/${id}/recording`, { key: p.org.api_key });
    return r.status === 200 ? (r.raw as Buffer) : null;
  }, 30_000, 250);
}

if (phoneSkip) {
  t.plan(0, `skip: ${phoneSkip}`);
} else {
  const connect = '+14155556001';
  const to = '+12125556002';
  const staff = await startPhone(t, { name: 'recstaff', ip: '127.0.0.1', toneHz: 440 });
  const called = await startPhone(t, { name: 'reccalled', ip: '127.0.0.1', toneHz: 1000 });
  const router = await startRouter(t, { [connect]: staff, [to]: called });
  // The gateway serves what the media process writes: both read RECORDINGS_DIR.
  const dir = mkdtempSync(join(tmpdir(), 'ol-sip-rec-'));
  const p = await sipPlatform(t, router.port, { SIP_TRUNK_ALLOW: '127.0.0.0/8', RECORDINGS_DIR: dir }, router.ip);

  t.test('a recorded bridge call: the WAV from the API holds both phones\' tones', async (t) => {
    const r = await dial(p.env, p.org, to, connect, { record: true });
    t.equal(r.status, 202, r.text);
    const id = r.body.data.call_id;
    await legStatus(p, id, 'destination', 'ANSWERED');
    await eventually(async () => {
      const s = await p.media.stats(id);
      return s.carrierLegs.length === 2 && s.carrierLegs.every((l) => l.fromFarEnd >= 200 && l.toFarEnd >= 200);
    }, 60_000, 250);
    const h = await p.env.request('POST', `/v1/calls/${id}/hangup`, { key: p.org.api_key });
    t.equal(h.status, 200, h.text);
    const c = await endedCall(p, id);
    t.equal(c.status, 'COMPLETED');
    t.equal(c.recording_url, `${p.env.url}/v1/calls/${id}/recording`, 'recording_url names the route');

    const wav = await fetchRecording(p, id);
    t.equal(wav.toString('ascii', 0, 4), 'RIFF');
    t.equal(wav.readUInt16LE(20), 7, 'μ-law');
    t.equal(wav.readUInt32LE(24), 8000, '8 kHz');
    const samples = wav.readUInt32LE(54);
    t.equal(wav.length, 58 + samples, 'the data chunk says how long it is');
    // Four seconds of both legs talking at least (the staff phone's leg longer: it answered first). Two full-scale
    // tones summed clip a little, so the quiet band gets some distortion: a fifth of either tone's level at most.
    t.ok(samples >= 4 * 8000, `lasts ${samples / 8000} s`);
    const file = join(dir, `fetched-${id}.wav`);
    writeFileSync(file, wav);
    const staffTone = bandRms(file, 400, 480);
    const calledTone = bandRms(file, 960, 1040);
    const nobody = bandRms(file, 2400, 2600);
    t.ok(staffTone > 0.05, `the staff phone's 440 Hz is in it (band RMS ${staffTone})`);
    t.ok(calledTone > 0.05, `the called party's 1000 Hz is in it (band RMS ${calledTone})`);
    t.ok(nobody < staffTone / 5 && nobody < calledTone / 5, `a band nobody played stays quiet (RMS ${nobody})`);

    const other = await callOrg(p.env);
    const foreign = await p.env.request('GET', `/v1/calls/${id}/recording`, { key: other.api_key });
    t.equal(foreign.status, 404, 'another organization does not get it');
  });

  t.test('an unrecorded SIP call has no recording', async (t) => {
    const r = await dial(p.env, p.org, to, connect);
    const id = r.body.data.call_id;
    await legStatus(p, id, 'destination', 'ANSWERED');
    await p.env.request('POST', `/v1/calls/${id}/hangup`, { key: p.org.api_key });
    await endedCall(p, id);
    const c = await getCall(p.env, p.org, id);
    t.equal(c.recording_url, null);
    const wav = await p.env.request('GET', `/v1/calls/${id}/recording`, { key: p.org.api_key });
    t.equal(wav.status, 404);
    t.equal(wav.body.error.code, 'not_found');
  });

  t.test('the writer: RTP from two legs, reordered and late packets, a timestamp jump; bounded by the session', async (t) => {
    const callId = '01a21000-0000-7000-8000-00000000abcd';
    await p.media.createSession(callId, { carrier: 'sip', record: true });
    const socks = await Promise.all([0, 1].map(() => new Promise<ReturnType<typeof createSocket>>((resolve) => {
      const s = createSocket('udp4');
      s.bind(0, '127.0.0.1', () => resolve(s));
    })));
    t.teardown(() => socks.forEach((s) => s.close()));
    const legs = await Promise.all([0, 1].map(async (i) => {
      const leg = await p.media.createCarrierLeg(callId, `leg${i}`);
      await p.media.connectCarrierLeg(callId, `leg${i}`, { ip: '127.0.0.1', port: socks[i].address().port, rtcpPort: socks[i].address().port, mimeType: 'audio/PCMU' });
      return leg;
    }));
    // Leg 0 plays 440 Hz, leg 1 1000 Hz, 20 ms packets for 5 s in real time; every tenth pair of leg 0's packets is
    // sent swapped, and leg 1 jumps its timestamps by an hour half-way (a far end restarting its clock).
    const tone = (hz: number, n: number) => Buffer.from(Array.from({ length: 160 }, (_, k) => linearToMulaw(8000 * Math.sin(2 * Math.PI * hz * (n * 160 + k) / 8000))));
    const packet = (hz: number, n: number, tsOffset: number) => {
      const b = Buffer.alloc(12 + 160);
      writeRtpHeader(b, { payloadType: 0, sequenceNumber: n, timestamp: n * 160 + tsOffset, ssrc: 1234 + hz });
      tone(hz, n).copy(b, 12);
      return b;
    };
    const send = (i: number, b: Buffer) => socks[i].send(b, legs[i].port, '127.0.0.1');
    const started = Date.now();
    let held: Buffer | null = null;
    for (let n = 0; n < 250; n++) {
      const a = packet(440, n, 0);
      if (n % 10 === 3) held = a;
      else { send(0, a); if (held) { send(0, held); held = null; } }
      send(1, packet(1000, n, n >= 125 ? 3600 * 8000 : 0));
      const wait = started + (n + 1) * 20 - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const stats = await p.media.stats(callId);
    t.ok(stats.carrierLegs.every((l) => l.fromFarEnd >= 240), `the legs took the RTP (${stats.carrierLegs.map((l) => l.fromFarEnd)})`);
    await p.media.closeSession(callId);
    const file = join(dir, `${callId}.sip.wav`);
    const wav = await eventually(async () => (existsSync(file) ? readFileSync(file) : null), 30_000, 100);
    const samples = wav.readUInt32LE(54);
    t.equal(wav.length, 58 + samples);
    t.ok(samples >= 4.8 * 8000 && samples <= 5.6 * 8000, `lasts the 5 s the audio did (${samples / 8000} s), the jump re-anchored`);
    t.ok(bandRms(file, 400, 480) > 0.05, `440 Hz in it (${bandRms(file, 400, 480)})`);
    t.ok(bandRms(file, 960, 1040, 3) > 0.05, `1000 Hz in it after the jump too (${bandRms(file, 960, 1040, 3)})`);
    t.ok(bandRms(file, 2400, 2600) < 0.01, `nothing else (${bandRms(file, 2400, 2600)})`);
  });
}
