// SIP over TLS (SIP_TRUNK_URI ...;transport=tls): a real TLS trunk, Debian's baresip listening for TLS with a
// certificate of a test CA, answers both legs of a bridge call (one account per dialed number) and sends a tone both
// ways. The platform checks baresip's certificate against SIP_TLS_CA and serves its own (SIP_TLS_CERT / SIP_TLS_KEY)
// on its TLS listener, whose port its Contact and Via name. baresip's TLS port speaks nothing but TLS, so a call that
// is answered there was signaled over TLS. A platform that does not trust the trunk's CA never gets its INVITE through:
// the connection fails its handshake and the leg ends carrier_rejected at once (a 503 for the transport failure).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { dial } from '../calls/helpers.ts';
import { eventually } from '../helpers/env.ts';
import { endedCall, legStatus, phoneSkip, sipPlatform, startPhone } from './helpers.ts';

const opensslSkip = spawnSync('openssl', ['version']).status === 0 ? false : 'openssl is not installed';

/** A CA and certificates it signs for 127.0.0.1 (an IP subjectAltName, as a trunk addressed by IP needs). */
function makeCerts(dir: string, names: string[]): { ca: string; certs: Record<string, { cert: string; key: string; both: string }> } {
  const run = (args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: dir });
    if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr}`);
  };
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=openline test CA']);
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  const certs: Record<string, { cert: string; key: string; both: string }> = {};
  for (const n of names) {
    run(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${n}.key`, '-out', `${n}.csr`, '-subj', `/CN=${n}`]);
    run(['x509', '-req', '-in', `${n}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${n}.pem`, '-days', '2', '-extfile', 'san.ext']);
    const both = join(dir, `${n}-both.pem`);
    writeFileSync(both, readFileSync(join(dir, `${n}.pem`), 'utf8') + readFileSync(join(dir, `${n}.key`), 'utf8'));
    certs[n] = { cert: join(dir, `${n}.pem`), key: join(dir, `${n}.key`), both };
  }
  return { ca: join(dir, 'ca.pem'), certs };
}

const skip = phoneSkip || opensslSkip;
if (skip) {
  t.plan(0, `skip: ${skip}`);
} else {
  const dir = mkdtempSync(join(tmpdir(), 'ol-sip-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { ca, certs } = makeCerts(dir, ['trunk', 'platform', 'caller']);
  const other = makeCerts(mkdtempSync(join(dir, 'other-')), []);
  const connect = '+14155554101';
  const to = '+12125554102';
  const trunk = await startPhone(t, { name: 'trunk', users: [connect, to], ip: '127.0.0.1', toneHz: 440, tls: { certificate: certs.trunk.both, ca } });
  const trunkUri = `sip:127.0.0.1:${trunk.port + 1};transport=tls`;

  t.test('a bridge call over a TLS trunk: both legs answered on the TLS port, RTP both ways, BYE, COMPLETED', async (t) => {
    const p = await sipPlatform(t, trunk.port + 1, {
      SIP_TRUNK_URI: trunkUri, SIP_TRUNK_ALLOW: '127.0.0.0/8',
      SIP_TLS_CA: ca, SIP_TLS_CERT: certs.platform.cert, SIP_TLS_KEY: certs.platform.key, SIP_TLS_PORT: '0',
    });
    const tlsPort = Number(/"sip_tls":"[^"]*:(\d+)"/.exec(p.signaling.output)?.[1]);
    t.ok(tlsPort > 0 && tlsPort !== p.sipPort, `signaling listens for TLS on its own port (${tlsPort})`);

    const r = await dial(p.env, p.org, to, connect);
    t.equal(r.status, 202, r.text);
    const id = r.body.data.call_id;
    await legStatus(p, id, 'destination', 'ANSWERED');
    await eventually(async () => {
      const s = await p.media.stats(id);
      return s.carrierLegs.length === 2 && s.carrierLegs.every((l) => l.fromFarEnd >= 100 && l.toFarEnd >= 100);
    }, 60_000, 250);
    t.pass('RTP flows both ways on both legs');
    t.match(trunk.log(), new RegExp(`${connect.replace('+', '\\+')}`), 'baresip took the connect leg');

    const h = await p.env.request('POST', `/v1/calls/${id}/hangup`, { key: p.org.api_key });
    t.equal(h.status, 200, h.text);
    const c = await endedCall(p, id);
    t.equal(c.status, 'COMPLETED');
    t.equal(c.picked_up, true);
    // Our BYE went over TLS and baresip closed both calls (it logs each call's end).
    await eventually(async () => (trunk.log().match(/session closed|call closed|Connection reset|terminated/gi) ?? []).length >= 2, 30_000, 250)
      .catch(() => t.fail(`baresip did not see both calls end:\n${trunk.log().slice(-2000)}`));

    // Inbound over TLS: a phone with a certificate of the same CA calls one of the organization's numbers on the TLS
    // listener; the number rejects calls, so the platform answers 480 over that TLS connection.
    const pid = (await p.env.db.one('SELECT id FROM phone_numbers WHERE phone_number = $1', [p.org.from])).id as number;
    const set = await p.env.request('PATCH', `/v1/phone-numbers/${pid}`, { key: p.org.api_key, body: { inbound: 'reject' } });
    t.equal(set.status, 200, set.text);
    const caller = await startPhone(t, {
      name: 'caller', ip: '127.0.0.1', toneHz: 1000, tls: { certificate: certs.caller.both, ca },
      dial: `sip:${p.org.from}@127.0.0.1:${tlsPort};transport=tls`,
    });
    await eventually(async () => /480 Temporarily Unavailable/i.test(caller.log()), 60_000, 250)
      .catch(() => t.fail(`the caller was not answered 480 over TLS:\n${caller.log().slice(-2000)}`));
    t.pass('an inbound INVITE over TLS reached the platform and was answered 480 (the number rejects calls)');
  });

  t.test('a trunk certificate the platform does not trust: no call, the leg ends carrier_rejected', async (t) => {
    const p = await sipPlatform(t, trunk.port + 1, {
      SIP_TRUNK_URI: trunkUri, SIP_TRUNK_ALLOW: '127.0.0.0/8',
      SIP_TLS_CA: other.ca, SIP_TLS_CERT: certs.platform.cert, SIP_TLS_KEY: certs.platform.key, SIP_TLS_PORT: '0',
    });
    const before = trunk.log().length;
    const r = await dial(p.env, p.org, to, connect);
    t.equal(r.status, 202, r.text);
    const c = await endedCall(p, r.body.data.call_id, 90_000);
    t.equal(c.status, 'FAILED', JSON.stringify(c));
    // The failed handshake answers the INVITE 503 at once (RFC 3261 §8.1.3.1), not Timer B's 408 after 32 s.
    const ended = Date.parse(c.ended_at) - Date.parse(c.created_at);
    t.ok(ended < 20_000, `ended ${ended} ms after it was placed, not after Timer B`);
    t.equal(c.picked_up, false);
    t.match(JSON.stringify(c), /carrier_rejected/, 'the connect leg failed as carrier_rejected');
    t.notMatch(trunk.log().slice(before), /incoming call/i, 'baresip never received the INVITE');
    t.match(p.signaling.output, /SIP TLS connection failed/, 'signaling says why');
  });
}
