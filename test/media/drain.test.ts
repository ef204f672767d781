// A media process of the fleet (MEDIA_FLEET=1) on loopback: its announcement in Redis (address, load, draining),
// draining for a rolling restart (SIGUSR2 or POST /v1/drain: no new sessions, the live ones carry on, exit 0 once
// the last one closed, announcement removed), and the settings that configure it.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { mediaFleetKey } from '../../media/fleet-announcer.ts';
import type { MediaAnnouncement } from '../../shared/media/protocol.ts';
import { loadMediaSettings } from '../../shared/media/settings.ts';
import { createRedis, keyer } from '../../shared/redis.ts';
import { httpCall } from '../helpers/env.ts';
import { startMedia, until } from './helpers.ts';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `olt_drain_${randomBytes(4).toString('hex')}`;
const key = keyer(prefix);
const redis = createRedis(redisUrl);
t.teardown(async () => { await redis.del(mediaFleetKey(key)); await redis.quit(); });
const fleetEnv = { MEDIA_FLEET: '1', REDIS_URL: redisUrl, REDIS_PREFIX: prefix, MEDIA_HEARTBEAT_MS: '300' };
const announcement = async (instance: string): Promise<MediaAnnouncement | null> => {
  const raw = await redis.hget(mediaFleetKey(key), instance);
  return raw ? JSON.parse(raw) as MediaAnnouncement : null;
};
const instanceOf = (output: string) => /"instanceId":"([^"]+)"/.exec(output)![1];

t.test('settings: MEDIA_FLEET and MEDIA_ADVERTISE_URL', async (t) => {
  t.match(loadMediaSettings({}), { fleet: false, advertiseUrl: null });
  t.match(loadMediaSettings({ MEDIA_FLEET: '1', MEDIA_ADVERTISE_URL: 'http://10.0.0.5:8082/' }), { fleet: true, advertiseUrl: 'http://10.0.0.5:8082' });
  t.throws(() => loadMediaSettings({ MEDIA_FLEET: 'yes' }), /MEDIA_FLEET must be 0 or 1/);
  for (const bad of ['10.0.0.5:8082', 'ftp://10.0.0.5', 'http://0.0.0.0:8082', 'http://[::]:8082', 'http://u:p@10.0.0.5:8082', 'http://10.0.0.5:8082/media']) {
    t.throws(() => loadMediaSettings({ MEDIA_ADVERTISE_URL: bad }), /MEDIA_ADVERTISE_URL/, bad);
  }
});

t.test('a fleet member on 0.0.0.0 must say where it is reached', async (t) => {
  const err = await startMedia(t, { ...fleetEnv, HOST: '0.0.0.0' }).then(() => null, (e: Error) => e);
  t.match(err?.message, /MEDIA_FLEET=1 with HOST=0\.0\.0\.0: set MEDIA_ADVERTISE_URL/);
});

t.test('announced with its load; SIGUSR2 drains: no new sessions, the live one carries on, exit 0 once it closed', async (t) => {
  const media = await startMedia(t, fleetEnv);
  const instance = instanceOf(media.proc.output);
  const first = await until('the announcement', () => announcement(instance));
  t.match(first, { instance, controlUrl: media.url, pid: media.proc.child.pid, listenIp: '127.0.0.1', sessions: 0, routers: 0, workers: 1, draining: false });
  t.ok(first.expiresAt - first.at >= 900, 'valid for three heartbeats');

  await media.client.createSession('call_live');
  await until('the load announced', async () => (await announcement(instance))?.routers === 1);
  t.pass('one router announced');

  media.proc.child.kill('SIGUSR2');
  await until('draining announced', async () => (await announcement(instance))?.draining === true);
  t.pass('draining announced');
  const refused = await media.client.createSession('call_new').then(() => null, (e) => e);
  t.match(refused, { status: 503, code: 'unavailable', message: /draining/ }, 'a new call is refused');
  t.match(await media.client.createSession('call_live'), { callId: 'call_live', created: false }, 'a retried create of the live session is fine');
  t.equal((await media.client.getSession('call_live')).callId, 'call_live', 'the live session carries on');
  t.equal(media.proc.child.exitCode, null, 'still running while a session is open');

  await media.client.closeSession('call_live');
  t.equal(await media.proc.exited, 0, 'exits cleanly once the last session closed');
  t.equal(await announcement(instance), null, 'its announcement is removed');
});

t.test('POST /v1/drain needs the secret; with no session the process exits at once', async (t) => {
  const media = await startMedia(t, fleetEnv);
  const instance = instanceOf(media.proc.output);
  await until('the announcement', () => announcement(instance));
  const denied = await httpCall(media.url, 'POST', '/v1/drain');
  t.equal(denied.status, 401);
  t.equal(denied.body.error.code, 'unauthorized');
  t.equal(media.proc.child.exitCode, null, 'not draining without the secret');
  t.same(await media.client.drain(), { draining: true, sessions: 0 });
  t.equal(await media.proc.exited, 0);
  t.equal(await announcement(instance), null);
});

t.test('without MEDIA_FLEET nothing is announced', async (t) => {
  const media = await startMedia(t, { REDIS_URL: redisUrl, REDIS_PREFIX: prefix });
  t.match(media.proc.output, /"fleet":null/);
  t.equal(await announcement(instanceOf(media.proc.output)), null);
});
