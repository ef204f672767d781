// signaling/media-fleet.ts against two real media processes on loopback (MEDIA_FLEET=1) and the real Redis:
// least-loaded placement, one media process per call for every signaling process (the per-call record), a draining
// process's 503 sending the call to the next one even while its announcement still says otherwise, and a dead
// process's `lost` naming only its own calls.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { mediaFleetKey } from '../../media/fleet-announcer.ts';
import { loadConfig } from '../../shared/config.ts';
import { MediaControlClient } from '../../shared/media/control-client.ts';
import { createLogger } from '../../shared/log.ts';
import type { MediaAnnouncement } from '../../shared/media/protocol.ts';
import { createRedis, keyer } from '../../shared/redis.ts';
import { MediaFleet } from '../../signaling/media-fleet.ts';
import { startMedia, until } from '../media/helpers.ts';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `olt_fleet_${randomBytes(4).toString('hex')}`;
const key = keyer(prefix);
const redis = createRedis(redisUrl);
t.teardown(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  await redis.quit();
});
const secret = randomBytes(12).toString('hex');
// A long heartbeat: the announcements change only when the test says so (start, drain), so it can stage a stale one.
const env = { MEDIA_FLEET: '1', REDIS_URL: redisUrl, REDIS_PREFIX: prefix, MEDIA_HEARTBEAT_MS: '60000', MEDIA_CONTROL_SECRET: secret };
/** A media process of the fleet, with a client on the fleet's secret (the helper's own client has its own). */
const fleetMedia = async () => {
  const m = await startMedia(t, env);
  const client = new MediaControlClient({ url: m.url, secret });
  t.teardown(() => client.close());
  return { ...m, client };
};
const [x, y] = await Promise.all([fleetMedia(), fleetMedia()]);
const instanceOf = (output: string) => /"instanceId":"([^"]+)"/.exec(output)![1];
const ids = { x: instanceOf(x.proc.output), y: instanceOf(y.proc.output) };

const settings = loadConfig({ ...process.env, ...env }).media;
const log = createLogger('signaling', 'fatal');
const newFleet = () => {
  const f = MediaFleet.create(settings, redis, key, log);
  f.start();
  t.teardown(() => f.stop());
  return f;
};
const fleet = newFleet();
const bothUp = (f: MediaFleet) => until('both media processes joined', () => f.list().filter((m) => m.connected).length === 2);
await bothUp(fleet);
const sessionsOf = async (m: typeof x) => (await m.client.listSessions()).sessions.map((s) => s.callId).sort();

t.test('least-loaded placement; another signaling process finds the same media process for a call', async (t) => {
  const placed = [];
  for (const id of ['c1', 'c2', 'c3', 'c4']) placed.push(await fleet.createSession(id));
  const onX = await sessionsOf(x);
  const onY = await sessionsOf(y);
  t.equal(onX.length, 2, `two on x (${onX})`);
  t.equal(onY.length, 2, `two on y (${onY})`);

  const other = newFleet();
  await bothUp(other);
  const again = await other.createSession(onY[0]);
  t.equal(again.created, false, 'the existing session, not a new one elsewhere');
  t.same(await sessionsOf(x), onX, 'nothing new on x');
  const client = await other.clientOf(onY[0]);
  t.equal((await client.getSession(onY[0])).callId, onY[0], 'clientOf answers the media process that carries it');
  await other.closeSession(onY[0]);
  t.notOk((await sessionsOf(y)).includes(onY[0]), 'closed where it was');
  for (const id of ['c1', 'c2', 'c3', 'c4']) await fleet.closeSession(id).catch(() => undefined);
  t.same([...await sessionsOf(x), ...await sessionsOf(y)], []);
});

t.test('a draining process that still looks open answers 503: the call goes to the next one', async (t) => {
  // A call recorded on y (as another signaling process would have placed it): y is busier, so x is tried first.
  await redis.set(key('media', 'call', 'busy_y'), ids.y);
  await fleet.createSession('busy_y');
  t.same(await sessionsOf(y), ['busy_y'], 'the recorded call goes where its record says');
  // x has no session: drained, it exits at once, and leaves the fleet.
  const drained = await x.client.drain();
  t.same(drained, { draining: true, sessions: 0 });
  t.equal(await x.proc.exited, 0, 'x drained empty and exited');
  await until('x left the fleet', () => fleet.list().every((m) => m.instance !== ids.x));

  // y drains with a live session; its announcement is put back to open and idle, as a stale read would show it.
  await y.client.drain();
  const a = await until('y announces draining', async () => {
    const raw = await redis.hget(mediaFleetKey(key), ids.y);
    const v = raw ? JSON.parse(raw) as MediaAnnouncement : null;
    return v?.draining ? v : null;
  });
  const z = await fleetMedia();
  const idZ = instanceOf(z.proc.output);
  await z.client.createSession('busy_z1');
  await z.client.createSession('busy_z2');
  await redis.hset(mediaFleetKey(key), ids.y, JSON.stringify({ ...a, draining: false, routers: 0, sessions: 0, at: a.at + 1 }));
  await until('the stale view of y and z in the fleet', () => {
    const l = fleet.list();
    return l.some((m) => m.instance === ids.y && !m.draining) && l.some((m) => m.instance === idZ && m.connected && m.sessions === 0);
  });
  // z announced 0 sessions at start, so the stale y (0 routers) and z tie; make z look busier than y.
  const zRaw = JSON.parse((await redis.hget(mediaFleetKey(key), idZ))!) as MediaAnnouncement;
  await redis.hset(mediaFleetKey(key), idZ, JSON.stringify({ ...zRaw, routers: 2, sessions: 2, at: zRaw.at + 1 }));
  await until('z looks busier', () => fleet.list().some((m) => m.instance === idZ && m.sessions === 2));

  const created = await fleet.createSession('after_drain');
  t.ok(created.routerId, 'the call got a session');
  t.ok((await z.client.listSessions()).sessions.some((s) => s.callId === 'after_drain'), 'on z, after y refused it');
  t.notOk((await y.client.listSessions()).sessions.some((s) => s.callId === 'after_drain'), 'not on the draining y');
  await fleet.closeSession('after_drain');

  t.test('a dead process: lost names only its calls', async (t) => {
    const lost: ((id: string) => boolean)[] = [];
    fleet.on('lost', (_reason, carries) => lost.push(carries));
    await fleet.createSession('on_z');
    t.ok((await z.client.listSessions()).sessions.some((s) => s.callId === 'on_z'));
    await y.proc.kill('SIGKILL');
    const carries = await until('lost', () => lost.find((c) => c('busy_y')));
    t.notOk(carries('on_z'), 'z\'s call is not lost');
    t.equal((await fleet.clientOf('on_z').then((c) => c.getSession('on_z'))).callId, 'on_z', 'z still carries its call');
    const next = await fleet.createSession('next');
    t.ok(next.routerId);
    t.ok((await z.client.listSessions()).sessions.some((s) => s.callId === 'next'), 'the next call lands on the survivor');
  });
});
