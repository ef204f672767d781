// Bad input on the SIP port gets nothing and changes nothing: garbage, a 64 KB message, missing Call-ID or CSeq, a
// Content-Length longer than the body, over UDP and TCP; requests from outside SIP_TRUNK_ALLOW get 403 (a TCP
// connection from there is closed), a BYE or CANCEL outside any dialog 481, a new INVITE with broken SDP 488 (after
// 100 Trying; inbound routing: test/sip/inbound.test.ts). No call row is written, and the signaling process keeps serving: OPTIONS, then a real call through
// SIPp.
import { createSocket, type Socket } from 'node:dgram';
import { connect } from 'node:net';
import t from 'tap';
import { randomToken } from '../../shared/ids.ts';
import { dial } from '../calls/helpers.ts';
import { eventually, httpCall } from '../helpers/env.ts';
import { endedCall, sipPlatform, sipSkip, startSipp } from './helpers.ts';

/** A SIP peer speaking raw datagrams from `ip`, recording every datagram it gets back. */
class RawPeer {
  readonly received: string[] = [];
  private constructor(readonly socket: Socket) {
    socket.on('message', (m) => this.received.push(m.toString('latin1')));
  }
  static async open(t: { teardown(fn: () => void): void }, ip: string): Promise<RawPeer> {
    const socket = createSocket('udp4');
    await new Promise<void>((r) => socket.bind(0, ip, r));
    t.teardown(() => socket.close());
    return new RawPeer(socket);
  }
  get port() { return this.socket.address().port; }
  get ip() { return this.socket.address().address; }
  send(to: number, data: string | Buffer) { this.socket.send(typeof data === 'string' ? Buffer.from(data, 'latin1') : data, to, '127.0.0.1'); }
  /** The responses to the request with this Call-ID. */
  answers(callId: string) { return this.received.filter((m) => new RegExp(`^Call-ID:\\s*${callId}\\s*$`, 'im').test(m)); }
}

/** A request from `peer`; `drop` leaves headers out, `headers` adds or replaces some. */
function request(peer: RawPeer, method: string, o: { callId?: string; drop?: string[]; headers?: Record<string, string>; body?: string; contentLength?: number } = {}) {
  const callId = o.callId ?? randomToken(20);
  const body = o.body ?? '';
  const headers: Record<string, string> = {
    Via: `SIP/2.0/UDP ${peer.ip}:${peer.port};branch=z9hG4bK${randomToken(12)};rport`,
    From: `<sip:trunk@${peer.ip}>;tag=${randomToken(8)}`,
    To: '<sip:+14155550100@127.0.0.1>',
    'Call-ID': callId,
    CSeq: `1 ${method}`,
    'Max-Forwards': '70',
    ...o.headers,
    'Content-Length': String(o.contentLength ?? Buffer.byteLength(body)),
  };
  for (const d of o.drop ?? []) delete headers[d];
  const text = `${method} sip:+14155550100@127.0.0.1 SIP/2.0\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`;
  return { callId, text };
}

if (sipSkip) {
  t.plan(0, `skip: ${sipSkip}`);
} else {
  const sipp = await startSipp(t);
  const p = await sipPlatform(t, sipp.port);
  const rows = async () => Number((await p.env.db.one('SELECT count(*) AS n FROM calls')).n);
  const metricsUrl = /"health":"(http:[^"]+)\/healthz"/.exec(p.signaling.output)![1] + '/metrics';
  const metric = async (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec((await httpCall(metricsUrl, 'GET', '')).text)?.[1]);

  /** Sends OPTIONS and waits for its 200: every datagram sent before it has been handled by then. */
  async function ping(peer: RawPeer): Promise<string> {
    const o = request(peer, 'OPTIONS');
    peer.send(p.sipPort, o.text);
    return (await eventually(async () => peer.answers(o.callId)[0], 20_000));
  }

  t.test('malformed datagrams get no answer', async (t) => {
    const peer = await RawPeer.open(t, '127.0.0.1');
    const big = request(peer, 'INVITE', { headers: { 'X-Padding': 'x'.repeat(65_000) } });
    t.ok(Buffer.byteLength(big.text) > 65_000, `a ${Buffer.byteLength(big.text)}-byte INVITE`);
    const bad = [
      'hello, are you a SIP server?',
      '\r\n\r\n',
      Buffer.from(Array.from({ length: 1200 }, (_, i) => (i * 37) % 256)),
      'INVITE sip:+14155550100@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:1\r\n', // cut off before the headers end
      big.text,
      request(peer, 'OPTIONS', { drop: ['Call-ID'] }).text,
      request(peer, 'OPTIONS', { drop: ['CSeq'] }).text,
      request(peer, 'OPTIONS', { drop: ['Via'] }).text,
      request(peer, 'OPTIONS', { headers: { CSeq: 'one OPTIONS' } }).text,
      request(peer, 'OPTIONS', { headers: { CSeq: '1 INVITE' } }).text, // CSeq of another method
      request(peer, 'OPTIONS', { body: 'short', contentLength: 500 }).text,
      request(peer, 'INVITE', { body: 'v=0\r\nnot really sdp', contentLength: 4000, headers: { 'Content-Type': 'application/sdp' } }).text,
    ];
    for (const d of bad) peer.send(p.sipPort, d);
    const pong = await ping(peer);
    t.match(pong, /^SIP\/2\.0 200 OK/, 'OPTIONS afterwards: 200');
    t.equal(await metric('openline_sip_messages_dropped_total'), bad.length, 'signaling counted every one of them as dropped (the 64 KB one too)');
    t.match(pong, /^Allow: .*INVITE.*BYE/im, 'with Allow');
    t.equal(peer.received.length, 1, 'nothing but the OPTIONS was answered');
  });

  t.test('requests outside any dialog: BYE and CANCEL 481, INVITE with broken SDP 488, other methods 405', async (t) => {
    const peer = await RawPeer.open(t, '127.0.0.1');
    const bye = request(peer, 'BYE', { headers: { To: `<sip:+14155550100@127.0.0.1>;tag=${randomToken(8)}` } });
    const cancel = request(peer, 'CANCEL');
    const invite = request(peer, 'INVITE', { body: 'v=0\r\nthis SDP is broken\r\n', headers: { 'Content-Type': 'application/sdp' } });
    const message = request(peer, 'MESSAGE', { body: 'hi' });
    for (const r of [bye, cancel, invite, message]) peer.send(p.sipPort, r.text);
    const first = (id: string) => eventually(async () => peer.answers(id)[0], 20_000);
    t.match(await first(bye.callId), /^SIP\/2\.0 481 /, 'BYE with unknown tags: 481');
    t.match(await first(cancel.callId), /^SIP\/2\.0 481 /, 'CANCEL of nothing: 481');
    const final = (id: string) => eventually(async () => peer.answers(id).find((a) => !/^SIP\/2\.0 1\d\d /.test(a)), 20_000);
    t.match(await final(invite.callId), /^SIP\/2\.0 488 /, 'a new INVITE with broken SDP: 488');
    t.match(await first(message.callId), /^SIP\/2\.0 405 /, 'MESSAGE: 405');
    t.match(await final(invite.callId), /^To: .*;tag=\S+/im, 'the 488 carries a To tag');
    t.equal(await rows(), 0, 'no call row');
  });

  t.test('outside SIP_TRUNK_ALLOW (127.0.0.2): 403 to every request, nothing to garbage, TCP closed', async (t) => {
    const stranger = await RawPeer.open(t, '127.0.0.2');
    stranger.send(p.sipPort, 'garbage from a stranger');
    const invites = Array.from({ length: 50 }, () => request(stranger, 'INVITE', { body: 'v=0\r\n', headers: { 'Content-Type': 'application/sdp' } }));
    for (const r of invites) stranger.send(p.sipPort, r.text);
    const options = request(stranger, 'OPTIONS');
    stranger.send(p.sipPort, options.text);
    await eventually(async () => stranger.received.length >= 51, 30_000);
    t.equal(stranger.received.length, 51, 'one answer per request, none to the garbage');
    t.ok(stranger.received.every((m) => /^SIP\/2\.0 403 Forbidden/.test(m)), 'every one 403 Forbidden');
    t.equal(stranger.answers(options.callId).length, 1);
    t.equal(await metric('openline_sip_requests_refused_total'), 51, 'counted as refused');

    const closed = await new Promise<{ data: string }>((resolve) => {
      let data = '';
      const s = connect({ port: p.sipPort, host: '127.0.0.1', localAddress: '127.0.0.2' });
      s.on('connect', () => s.write(request(stranger, 'OPTIONS').text));
      s.on('data', (d) => { data += d; });
      s.on('error', () => undefined);
      s.on('close', () => resolve({ data }));
    });
    t.equal(closed.data, '', 'a TCP connection from outside is closed without an answer');
    t.equal(await rows(), 0, 'no call row');
  });

  t.test('TCP: a 64 KB message cuts the connection; a well-formed OPTIONS over TCP is answered', async (t) => {
    const peer = await RawPeer.open(t, '127.0.0.1');
    const over = (payload: string) => new Promise<string>((resolve) => {
      let data = '';
      const s = connect({ port: p.sipPort, host: '127.0.0.1' });
      s.on('connect', () => s.write(payload));
      s.on('data', (d) => { data += d; if (/\r\n\r\n/.test(data)) s.end(); });
      s.on('error', () => undefined);
      s.on('close', () => resolve(data));
    });
    const big = request(peer, 'OPTIONS', { headers: { 'X-Padding': 'x'.repeat(65_000) } }).text.replace(/UDP/, 'TCP');
    t.equal(await over(big), '', 'the 64 KB message is not answered; the connection is closed');
    const ok = await over(request(peer, 'OPTIONS').text.replace(/UDP/, 'TCP'));
    t.match(ok, /^SIP\/2\.0 200 OK/, 'OPTIONS over TCP: 200');
  });

  t.test('after all that the process serves calls as before', async (t) => {
    t.equal(p.signaling.child.exitCode, null, 'signaling is still running');
    const r = await dial(p.env, p.org, '+12125550007', '+14155554001');
    const c = await endedCall(p, r.body.data.call_id);
    t.equal(c.status, 'COMPLETED');
    t.equal(c.disconnection_reason, 'remote_hangup');
    t.equal(await rows(), 1, 'only that call was written');
    t.notMatch(p.signaling.output, /"level":(50|60)/, 'signaling logged no error');
  });
}
