// Deaths: a killed mediasoup worker is replaced and its sessions are reported ended; a killed media process ends
// the control event stream, which is how signaling learns every session is gone.
import t from 'tap';
import type { MediaEvent } from '../../shared/media/protocol.ts';
import { markedPayload, pcmuRtpParameters, RtpEndpoint, startMedia, until } from './helpers.ts';

t.test('a killed worker is replaced and its sessions end', async (t) => {
  const media = await startMedia(t, { MEDIA_WORKERS: '2', MEDIA_SANDBOX_TONE_MS: '100' });
  const { client } = media;
  const events: MediaEvent[] = [];
  const stream = client.watch();
  t.teardown(() => stream.close());
  stream.on('event', (e) => events.push(e));

  const before = await client.workers();
  t.equal(before.workers.length, 2);
  // Two sessions land on the two workers (least-loaded placement).
  const a = await client.createSession('call_a');
  const b = await client.createSession('call_b');
  t.not(a.workerPid, b.workerPid, 'sessions spread over the workers');

  process.kill(a.workerPid, 'SIGKILL');
  await until('session_closed worker_died', () => events.find((e) => e.type === 'session_closed' && e.callId === 'call_a' && e.reason === 'worker_died'));
  const replaced = await until('worker_replaced', () => events.find((e): e is Extract<MediaEvent, { type: 'worker_replaced' }> => e.type === 'worker_replaced'), 60_000);
  t.equal(replaced.deadPid, a.workerPid);
  t.ok(replaced.newPid && replaced.newPid !== a.workerPid);
  const after = await client.workers();
  t.equal(after.workers.length, 2, 'the pool is whole again');
  t.notOk(after.workers.some((w) => w.pid === a.workerPid), 'without the dead worker');
  t.equal(await client.getSession('call_a').then(() => 200, (e: { status: number }) => e.status), 404, 'the dead worker\'s session is gone');
  t.equal((await client.getSession('call_b')).callId, 'call_b', 'the other worker\'s session lives on');

  // The replacement carries calls: a new session hears the far end's tone.
  const c = await client.createSession('call_c');
  t.equal(c.workerPid, replaced.newPid, 'the new session goes to the empty replacement');
  const tr = await client.createBrowserTransport('call_c', 'plain');
  const browser = await RtpEndpoint.open(t, 4242);
  await client.connectBrowserTransport('call_c', { ip: '127.0.0.1', port: browser.port });
  await client.produce('call_c', pcmuRtpParameters(browser.ssrc));
  await client.consume('call_c', c.rtpCapabilities);
  await client.resumeConsumer('call_c');
  await client.attachSandboxFarEnd('call_c');
  browser.send(tr, markedPayload('OLTEST', 0));
  await until('audio from the far end', () => browser.received.length >= 3);
});

t.test('a killed media process ends the event stream', async (t) => {
  const media = await startMedia(t, { MEDIA_HEARTBEAT_MS: '500' });
  await media.client.createSession('call_x');
  const stream = media.client.watch();
  t.teardown(() => stream.close());
  let hello: MediaEvent | undefined;
  let ended: { reason: string } | undefined;
  stream.on('event', (e) => { if (e.type === 'hello') hello = e; });
  stream.on('end', (e) => { ended = e; });
  await until('hello', () => hello);
  t.match(hello, { type: 'hello', sessions: ['call_x'], heartbeatMs: 500 });
  await until('a heartbeat', () => new Promise<boolean>((resolve) => stream.once('event', (e) => resolve(e.type === 'heartbeat'))));
  await media.proc.kill('SIGKILL');
  await until('the stream to end', () => ended);
  t.equal(ended!.reason, 'lost', 'lost, not a shutdown: every session must be treated as gone');
});

t.test('a stopping media process says so', async (t) => {
  const media = await startMedia(t);
  const stream = media.client.watch();
  t.teardown(() => stream.close());
  let ended: { reason: string } | undefined;
  let hello = false;
  stream.on('event', (e) => { if (e.type === 'hello') hello = true; });
  stream.on('end', (e) => { ended = e; });
  await until('hello', () => hello);
  media.proc.child.kill('SIGTERM');
  await until('the stream to end', () => ended);
  t.equal(ended!.reason, 'shutdown');
  t.equal(await media.proc.exited, 0);
});
