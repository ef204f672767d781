// SIGKILL mid-call with CARRIER=sip, real processes and SIPp as the trunk:
//  - signaling: the process that holds the SIP dialogs dies; a second signaling process (started after the calls,
//    so the first one owns every leg) notices its lapsed SIP_INSTANCES entry, ends the calls `signaling_lost`, sends
//    the answered legs' BYEs (outbound and inbound) and the ringing leg's CANCEL from its own address (the dialogs and
//    the pending INVITE were recorded in Redis), releases channels and spend, closes the media session; the webhooks
//    are delivered;
//  - media: the media process dies; signaling ends the call `media_lost` and hangs both legs up with BYE.
// The calls show an imported number (POST /v1/phone-numbers/import) as caller ID on the wire.
import t, { type Test } from 'tap';
import { legId } from '../../shared/carriers/carrier.ts';
import { sipInstancesKey, sipOwnerKey } from '../../shared/carriers/sip.ts';
import { keyer } from '../../shared/redis.ts';
import { SpendAccounts } from '../../shared/spend/spend-accounts.ts';
import { sipDialogKey } from '../../signaling/sip/dialog-record.ts';
import { channelsUsed, deliveriesFor, dial } from '../calls/helpers.ts';
import { eventually } from '../helpers/env.ts';
import { Phone, softphoneUrl } from '../signaling/softphone.ts';
import { endedCall, legStatus, requestsTo, sipPlatform, sippCaller, sipSkip, startSipp } from './helpers.ts';

if (sipSkip) {
  t.plan(0, `skip: ${sipSkip}`);
} else {
  const sipp = await startSipp(t);
  const p = await sipPlatform(t, sipp.port, { CLIENT_TOKEN_SECRET: 'k'.repeat(16) + 'sigkill-client-token-secret' });
  const key = keyer(p.env.config.redisPrefix);
  const spend = new SpendAccounts(p.env.redis, key, p.env.db);
  const instanceOf = (output: string) => /"instance":"([^"]+)"/.exec(output)![1];
  const controlUrl = /"media":"(http[^"]+)"/.exec(p.signaling.output)![1];

  // The organization's caller ID is a number imported from the trunk.
  const imported = '+14155550142';
  const imp = await p.env.request('POST', '/v1/phone-numbers/import', { key: p.org.api_key, body: { numbers: [imported] } });
  if (imp.status !== 200 || imp.body.data[0].result !== 'imported') throw new Error(`import failed: ${imp.text}`);
  const org = { ...p.org, from: imported };

  /** After a call ended: no channel held, no spend reserved for it, its call_completed webhook delivered. */
  async function released(t: Test, id: string, reason: string) {
    await eventually(async () => (await channelsUsed(p.env, org.organization_id)) === 0, 30_000, 200);
    t.pass('channels released');
    const day = await spend.read(org.organization_id, new Date().toISOString().slice(0, 10));
    t.notOk(day?.calls.has(id), 'no spend reserved for the call any more');
    const row = await p.env.db.one('SELECT spend_reserved_cents, cost_cents FROM calls WHERE id = $1', [id]);
    t.ok(row.cost_cents !== null, `the call's cost is settled (${row.cost_cents} cents)`);
    await p.rx.waitFor(() => (deliveriesFor(p.rx, id).call_completed?.length ?? 0) === 1, 60_000);
    t.equal(deliveriesFor(p.rx, id).call_completed[0].body.data.disconnection_reason, reason, `call_completed says ${reason}`);
  }

  t.test('SIGKILL of the signaling process that holds the dialogs: a survivor ends its calls and sends the BYEs', async (t) => {
    const first = instanceOf(p.signaling.output);
    // An answered bridge (SIPp answers both numbers and waits for our BYE), owned by the only signaling process.
    const to = '+12125554001';
    const connect = '+14155554011';
    const answered = (await dial(p.env, org, to, connect)).body.data.call_id as string;
    await legStatus(p, answered, 'destination', 'ANSWERED');

    const invite = (await eventually(async () => requestsTo(sipp, to).INVITE?.[0]))!;
    t.match(/^From:.*$/im.exec(invite)?.[0], `<sip:${imported}@`, 'the imported number is the caller ID on the wire');
    for (const role of ['connect', 'destination'] as const) {
      t.equal(await p.env.redis.get(sipOwnerKey(key, legId(answered, role))), first, `${role} leg owned by the first process`);
      const rec = JSON.parse((await p.env.redis.get(sipDialogKey(key, legId(answered, role))))!);
      t.match(rec, { owner: first, role, cseq: Number }, `${role}: its answered dialog is recorded`);
    }

    // An inbound call to the imported number, accepted by a browser of the first process (a WebSocket client that
    // listens with a client token): its dialog is recorded too.
    const minted = await p.env.request('POST', '/v1/client-tokens', { key: org.api_key, body: { from_numbers: [imported] } });
    t.equal(minted.status, 201, minted.text);
    const browser = await Phone.connect(softphoneUrl(p.signaling));
    t.teardown(() => browser.close());
    browser.send({ type: 'hello', v: 1, client_token: minted.body.data.token });
    await browser.frame('listening');
    const caller = sippCaller(t, p.sipPort, { to: imported });
    const incoming = await browser.frame('incoming', 30_000);
    browser.send({ type: 'accept', call_id: incoming.call_id });
    const inbound = incoming.call_id as string;
    await legStatus(p, inbound, 'destination', 'ANSWERED');
    t.match(JSON.parse((await p.env.redis.get(sipDialogKey(key, legId(inbound, 'destination'))))!), { owner: first, role: 'destination', cseq: Number },
      'inbound: its answered dialog is recorded');

    const survivor = p.env.spawn('signaling', { MEDIA_CONTROL_URL: controlUrl });
    await survivor.ready(60_000);
    const survivorPort = /"sip":"[^"]*:(\d+)"/.exec(survivor.output)![1];
    // A call whose staff phone rings (...0002 rings until CANCEL), placed now so that its 30 s ring timeout cannot
    // pass before the sweep on a slow machine: owners are picked at random, so dial until the first process owns one.
    let ringing = '';
    let ringingNumber = '';
    for (let i = 0; i < 16 && !ringing; i++) {
      const number = `+1415${555 - i}0002`;
      const id = (await dial(p.env, org, `+1212555${4100 + i}`, number)).body.data.call_id as string;
      const owner = await eventually(async () => p.env.redis.get(sipOwnerKey(key, legId(id, 'connect'))));
      await legStatus(p, id, 'connect', 'RINGING');
      if (owner === first) [ringing, ringingNumber] = [id, number];
      else await p.env.request('POST', `/v1/calls/${id}/hangup`, { key: org.api_key });
    }
    t.ok(ringing, 'a ringing call owned by the first process');
    const pending = await eventually(async () => p.env.redis.get(sipDialogKey(key, legId(ringing, 'connect'))));
    t.match(JSON.parse(pending!), { owner: first, pendingInvite: { uri: String } }, 'the ringing leg\'s INVITE is recorded');
    const killedAt = Date.now();
    await p.signaling.kill('SIGKILL');

    const c = await endedCall(p, answered, 60_000);
    const tookMs = Date.now() - killedAt;
    t.equal(c.status, 'COMPLETED');
    t.equal(c.call_outcome, 'answered');
    t.equal(c.disconnection_reason, 'signaling_lost');
    t.same(c.legs.map((l: any) => [l.role, l.status, l.end_reason]), [['connect', 'ENDED', 'local_hangup'], ['destination', 'ENDED', 'local_hangup']]);
    t.ok(tookMs < 30_000, `the call ended ${tookMs} ms after the SIGKILL (heartbeat lapse 6 s + sweep every 2 s)`);
    t.comment(`signaling SIGKILL -> call ended: ${tookMs} ms`);
    for (const number of [connect, to]) {
      const bye = await eventually(async () => requestsTo(sipp, number).BYE?.[0], 40_000);
      t.match(/^Via:.*$/im.exec(bye)?.[0], new RegExp(`127\\.0\\.0\\.1:${survivorPort}`), `${number}: the BYE came from the survivor`);
      t.match(/^CSeq:.*$/im.exec(bye)?.[0], /^CSeq:\s*\d+ BYE/i);
    }
    for (const role of ['connect', 'destination'] as const) t.equal(await p.env.redis.get(sipDialogKey(key, legId(answered, role))), null, `${role}: dialog record gone`);
    await eventually(async () => (await p.media.listSessions()).sessions.every((s) => s.callId !== answered), 20_000);
    t.pass('the media session was closed');
    await released(t, answered, 'signaling_lost');

    const r = await endedCall(p, ringing, 60_000);
    t.equal(r.status, 'CANCELED', 'the ringing call is canceled');
    t.equal(r.call_outcome, 'connection_unconfirmed');
    t.equal(r.disconnection_reason, 'signaling_lost');
    t.equal(r.legs[0].end_reason, 'local_hangup');
    t.equal(r.legs[1].status, 'PENDING', 'its destination was never dialed');
    // The far end stopped ringing: the survivor sent the CANCEL with the INVITE's own Via (the branch that matches it).
    const cancel = await eventually(async () => requestsTo(sipp, ringingNumber).CANCEL?.[0], 40_000);
    const viaOf = (m: string) => /^Via:.*$/im.exec(m)?.[0].trim();
    t.equal(viaOf(cancel!), viaOf(requestsTo(sipp, ringingNumber).INVITE![0]), 'the CANCEL repeats the INVITE\'s Via');
    t.match(/^CSeq:.*$/im.exec(cancel!)?.[0], /^CSeq:\s*1 CANCEL/i);

    // The inbound call: ended signaling_lost, and the caller got its BYE from the survivor.
    const ic = await endedCall(p, inbound, 60_000).catch(async (err) => {
      t.comment(JSON.stringify(await p.env.db.oneOrNone('SELECT status, ended_at, disconnection_reason, legs FROM calls WHERE id = $1', [inbound])));
      throw err;
    });
    t.match(ic, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'signaling_lost' }, 'the inbound call ended signaling_lost');
    const heard = await caller;
    const bye = /^BYE sip:[\s\S]*?(?=\n\s*\n)/m.exec(heard.log)?.[0] ?? '';
    t.match(/^Via:.*$/im.exec(bye)?.[0], new RegExp(`127\\.0\\.0\\.1:${survivorPort}`), 'the caller\'s BYE came from the survivor');
    const deadQueue = await p.env.redis.keys(`${p.env.config.redisPrefix}:sip-commands-${first}:*`);
    t.same(deadQueue, [], 'the dead process\'s command queue was dropped');
    await eventually(async () => (await p.env.redis.zscore(sipInstancesKey(key), first)) === null, 30_000, 250);
    t.pass('the dead process left SIP_INSTANCES');

    // The survivor places new calls.
    const after = (await dial(p.env, org, '+12125554005', '+14155554015')).body.data.call_id as string;
    await legStatus(p, after, 'destination', 'ANSWERED');
    t.equal(await p.env.redis.get(sipOwnerKey(key, legId(after, 'connect'))), instanceOf(survivor.output), 'new calls go to the survivor');
    const h = await p.env.request('POST', `/v1/calls/${after}/hangup`, { key: org.api_key });
    t.equal(h.status, 200);
    t.equal((await endedCall(p, after)).disconnection_reason, 'api_hangup');
  });

  t.test('SIGKILL of media mid-call: the call ends media_lost, both legs get a BYE', async (t) => {
    const to = '+12125554021';
    const connect = '+14155554031';
    const id = (await dial(p.env, org, to, connect)).body.data.call_id as string;
    await legStatus(p, id, 'destination', 'ANSWERED');
    const killedAt = Date.now();
    await p.mediaProc.kill('SIGKILL');
    const c = await endedCall(p, id, 60_000);
    t.comment(`media SIGKILL -> call ended: ${Date.now() - killedAt} ms`);
    t.equal(c.status, 'COMPLETED');
    t.equal(c.call_outcome, 'answered');
    t.equal(c.disconnection_reason, 'media_lost');
    t.same(c.legs.map((l: any) => l.end_reason), ['local_hangup', 'local_hangup']);
    for (const number of [connect, to]) {
      await eventually(async () => requestsTo(sipp, number).BYE?.length === 1, 30_000);
      t.pass(`${number}: one BYE`);
    }
    await released(t, id, 'media_lost');
  });
}
