// The control API's contract against the real media process: the secret, field-level 400s for bad input (never a
// crash), 404/409 for wrong states, the codec rule of the carrier leg, and the WebRTC transport a browser gets.
import t from 'tap';
import { MediaControlClient, MediaControlError } from '../../shared/media/control-client.ts';
import { pcmuRtpParameters, startMedia } from './helpers.ts';

t.test('control API', async (t) => {
  const media = await startMedia(t, { MEDIA_ANNOUNCED_IP: '203.0.113.7', MEDIA_RTC_MIN_PORT: '47000', MEDIA_RTC_MAX_PORT: '47999' });
  const { client } = media;
  const fields = async (p: Promise<unknown>): Promise<MediaControlError> => {
    const err = await p.then(() => null, (e: unknown) => e);
    if (!(err instanceof MediaControlError)) throw new Error(`expected a MediaControlError, got ${String(err)}`);
    return err;
  };

  t.test('the secret is required', async (t) => {
    const stranger = new MediaControlClient({ url: media.url, secret: 'wrong' });
    t.teardown(() => stranger.close());
    const err = await fields(stranger.listSessions());
    t.equal(err.status, 401);
    t.equal(err.code, 'unauthorized');
    const health = await fetch(`${media.url}/healthz`);
    t.equal(health.status, 200, '/healthz stays open');
    t.match(await health.json(), { status: 'ok', proc: 'media', workers: 1 });
  });

  t.test('bad bodies are 400s naming the fields', async (t) => {
    let err = await fields(client.call('POST', '/v1/sessions', {}));
    t.equal(err.status, 400);
    t.same(err.fields, { callId: 'is required' });
    err = await fields(client.call('POST', '/v1/sessions', { callId: 'has spaces', extra: 1 }));
    t.equal(err.status, 400);
    t.ok(err.fields?.callId && err.fields.extra, `callId and extra named: ${JSON.stringify(err.fields)}`);
    err = await fields(client.call('POST', '/v1/sessions', undefined));
    t.equal(err.status, 400);
    const raw = await fetch(`${media.url}/v1/sessions`, { method: 'POST', body: '{not json', headers: { authorization: `Bearer ${media.secret}`, 'content-type': 'application/json' } });
    t.equal(raw.status, 400);
    t.match(await raw.json(), { error: { code: 'validation_error', fields: { body: 'is not valid JSON' } } });

    await client.createSession('call_bad_input');
    await client.createBrowserTransport('call_bad_input', 'plain');
    err = await fields(client.call('POST', '/v1/sessions/call_bad_input/produce', { kind: 'video', rtpParameters: { codecs: [] } }));
    t.equal(err.status, 400);
    t.ok(err.fields?.kind && err.fields['rtpParameters.codecs'], `kind and codecs named: ${JSON.stringify(err.fields)}`);
    err = await fields(client.produce('call_bad_input', { codecs: [{ mimeType: 'audio/nonsense', payloadType: 96, clockRate: 8000 }], encodings: [{ ssrc: 1 }] }));
    t.equal(err.status, 400, 'what mediasoup rejects is a 400 too');
    err = await fields(client.connectBrowserTransport('call_bad_input', { dtlsParameters: { fingerprints: [{ algorithm: 'sha-256', value: 'AA' }] } }));
    t.equal(err.status, 400, 'a plain transport is not connected with DTLS');
    err = await fields(client.call('POST', '/v1/sessions/call_bad_input/far-end', { kind: 'pstn' }));
    t.equal(err.status, 400);
    const big = await fetch(`${media.url}/v1/sessions`, { method: 'POST', body: JSON.stringify({ callId: 'x'.repeat(100_000) }), headers: { authorization: `Bearer ${media.secret}` } });
    t.equal(big.status, 413, 'an oversized body is refused');
    t.equal((await client.workers()).workers.length, 1, 'the process is still up');
  });

  t.test('wrong states', async (t) => {
    let err = await fields(client.getSession('call_nobody'));
    t.equal(err.status, 404);
    err = await fields(client.attachSandboxFarEnd('call_nobody'));
    t.equal(err.status, 404);
    await client.createSession('call_states');
    err = await fields(client.produce('call_states', pcmuRtpParameters(5)));
    t.equal(err.status, 409, 'produce before a transport');
    err = await fields(client.resumeConsumer('call_states'));
    t.equal(err.status, 409, 'resume before consume');
    await client.createBrowserTransport('call_states', 'plain');
    err = await fields(client.createBrowserTransport('call_states', 'plain'));
    t.equal(err.status, 409, 'one browser transport per session');
    await client.connectBrowserTransport('call_states', { ip: '127.0.0.1', port: 9 });
    err = await fields(client.connectBrowserTransport('call_states', { ip: '127.0.0.1', port: 9 }));
    t.equal(err.status, 409, 'connected once');
    await client.produce('call_states', pcmuRtpParameters(5));
    err = await fields(client.produce('call_states', pcmuRtpParameters(6)));
    t.equal(err.status, 409, 'one browser producer per session');
    await client.attachSandboxFarEnd('call_states');
    err = await fields(client.attachSandboxFarEnd('call_states'));
    t.equal(err.status, 409, 'one far end per session');
    err = await fields(client.call('PUT', '/v1/sessions/call_states'));
    t.equal(err.status, 405);
    await client.closeSession('call_states');
    err = await fields(client.closeSession('call_states'));
    t.equal(err.status, 404, 'closing twice');
  });

  t.test('the carrier leg needs PCMU from the browser', async (t) => {
    await client.createSession('call_opus');
    await client.createBrowserTransport('call_opus', 'plain');
    await client.produce('call_opus', {
      codecs: [{ mimeType: 'audio/opus', payloadType: 111, clockRate: 48000, channels: 2 }], encodings: [{ ssrc: 77 }],
    });
    const err = await fields(client.attachSandboxFarEnd('call_opus'));
    t.equal(err.status, 409);
    t.equal(err.code, 'codec_mismatch');
    t.equal((await fields(client.attachSandboxFarEnd('call_opus'))).code, 'codec_mismatch', 'still refused, not broken, when asked again');
    const noPcmu = await fields(client.consume('call_opus', { codecs: [{ kind: 'audio', mimeType: 'audio/opus', clockRate: 48000, channels: 2, preferredPayloadType: 111 }] }));
    t.equal(noPcmu.code, 'codec_mismatch', 'a browser that cannot receive PCMU cannot hear the far end');
    await client.closeSession('call_opus');
  });

  t.test('a browser gets a WebRTC transport on the configured address and ports', async (t) => {
    await client.createSession('call_webrtc');
    const tr = await client.createBrowserTransport('call_webrtc', 'webrtc');
    t.equal(tr.type, 'webrtc');
    t.match(tr.iceParameters, { usernameFragment: String, password: String });
    t.match(tr.dtlsParameters, { fingerprints: Array });
    t.ok(tr.iceCandidates.length >= 1);
    for (const c of tr.iceCandidates as { ip: string; port: number }[]) {
      t.equal(c.ip, '203.0.113.7', 'MEDIA_ANNOUNCED_IP is announced');
      t.ok(c.port >= 47000 && c.port <= 47999, `port ${c.port} in MEDIA_RTC_MIN_PORT..MEDIA_RTC_MAX_PORT`);
    }
    t.match(await client.getSession('call_webrtc'), { browserTransport: { type: 'webrtc', state: 'ice:new dtls:new' } });
    await client.closeSession('call_webrtc');
  });
});
