// Helpers of the call test files: an environment with the real workers process, organizations with raised
// limits, webhook subscriptions for every call event, and waits on call state.
import { setLimits, type LimitsPatch } from '../../shared/calls/limits.ts';
import { ChannelAccounts } from '../../shared/channels/channel-accounts.ts';
import { keyer } from '../../shared/redis.ts';
import { eventually, testEnv, type TestEnv } from '../helpers/env.ts';
import { startReceiver, type Receiver, type ReceivedRequest } from '../helpers/receiver.ts';

export const CALL_EVENTS = ['new_call', 'call_completed', 'call_no_answer', 'call_voicemail', 'call_busy', 'call_failed', 'phone_call.ended'];
export const DISPOSITIONS = ['call_no_answer', 'call_voicemail', 'call_busy', 'call_failed'];

interface TapLike { teardown(fn: () => unknown): void }

export async function callEnv(t: TapLike, extra: Record<string, string> = {}, o: { workers?: boolean } = {}) {
  const env = await testEnv(t, {
    env: { SANDBOX_TIME_SCALE: '0.01', WEBHOOK_ALLOW_INSECURE: '1', WEBHOOK_RETRY_SCALE: '0.01', ...extra },
  });
  const workers = o.workers === false ? null : env.spawn('workers');
  await workers?.ready();
  return { env, workers };
}

export interface CallOrg {
  organization_id: string;
  user_id: string;
  api_key: string;
  api_key_id: string;
  phone_numbers: string[];
  from: string;
}

/** An organization whose limits do not get in the way unless the test sets them. */
export async function callOrg(env: TestEnv, limits: LimitsPatch = {}, o: Parameters<TestEnv['bootstrap']>[0] = {}): Promise<CallOrg> {
  const org = await env.bootstrap({ numbers: 1, ...o });
  // A high spend cap: admission reserves each live call's worst case, so the default cap would also bound how many
  // calls a test can hold at once (tests of the cap set their own).
  await setLimits(env.db, org.organization_id, { channel_limit: 1000, calls_per_minute: 10_000, daily_spend_cap_cents: 100_000_000, ...limits });
  return { ...org, from: org.phone_numbers[0] };
}

/** Subscribes the organization to every call event; each event type posts to /<org>/<event_type>. */
export async function subscribeCalls(env: TestEnv, rx: Receiver, org: CallOrg, types = CALL_EVENTS) {
  const secrets: Record<string, string> = {};
  for (const event_type of types) {
    const r = await env.request('POST', '/api/v1/webhook_subscriptions', {
      key: org.api_key, body: { webhook_url: rx.url(`/${org.organization_id}/${event_type}`), event_type },
    });
    if (r.status !== 201) throw new Error(`subscribe failed: ${r.status} ${r.text}`);
    secrets[event_type] = r.body.data.secret;
  }
  return secrets;
}

export const startRx = startReceiver;

/** Unique deliveries (by webhook-id) about one call, grouped by event type. */
export function deliveriesFor(rx: Receiver, callId: string): Record<string, ReceivedRequest[]> {
  const out: Record<string, ReceivedRequest[]> = {};
  for (const r of rx.unique()) {
    if (r.body?.data?.id !== callId) continue;
    (out[r.body.event_type] ??= []).push(r);
  }
  return out;
}

export async function dial(env: TestEnv, org: CallOrg, to: string, connect = '+14155550199', extra: Record<string, unknown> = {}) {
  return env.request('POST', '/v1/calls/dial', { key: org.api_key, body: { from_number: org.from, to_number: to, connect_number: connect, ...extra } });
}

export async function aiCall(env: TestEnv, org: CallOrg, to: string, extra: Record<string, unknown> = {}) {
  return env.request('POST', '/v1/calls', {
    key: org.api_key, body: { from_number: org.from, to_number: to, agent: { name: 'Ava', greeting: 'Hi, this is Ava from Acme.' }, ...extra },
  });
}

export async function getCall(env: TestEnv, org: CallOrg, id: string) {
  const r = await env.request('GET', `/v1/calls/${id}`, { key: org.api_key });
  if (r.status !== 200) throw new Error(`GET call ${id}: ${r.status} ${r.text}`);
  return r.body.data;
}

/** Waits until the call ended and no leg is still up (the hang-ups of the other legs were processed too). */
export function settled(env: TestEnv, org: CallOrg, id: string, timeoutMs = 20_000) {
  return eventually(async () => {
    const c = await getCall(env, org, id);
    return c.ended_at && c.legs.every((l: { status: string }) => l.status === 'ENDED' || l.status === 'PENDING') ? c : null;
  }, timeoutMs);
}

export function waitStatus(env: TestEnv, org: CallOrg, id: string, status: string, timeoutMs = 20_000) {
  return eventually(async () => {
    const c = await getCall(env, org, id);
    return c.status === status ? c : null;
  }, timeoutMs);
}

/** The channel accounts of the test file's Redis prefix, read the way the platform reads them. */
export const channelAccounts = (env: TestEnv) => new ChannelAccounts(env.redis, keyer(env.config.redisPrefix), env.db);

/** Channels the organization holds now (the Redis counter). */
export async function channelsUsed(env: TestEnv, orgId: string): Promise<number> {
  return channelAccounts(env).used(orgId);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
