// Small helpers shared by the webhook test files.
import { recordEvent, wakeRelay } from '../../shared/events/outbox.ts';
import type { TestEnv } from '../helpers/env.ts';

export async function subscribe(env: TestEnv, key: string, webhook_url: string, event_type: string, extra: Record<string, string> = {}) {
  const r = await env.request('POST', '/api/v1/webhook_subscriptions', { key, body: { webhook_url, event_type, ...extra } });
  if (r.status !== 201) throw new Error(`subscribe failed: ${r.status} ${r.text}`);
  return r.body.data as { id: string; secret: string; webhook_url: string; event_type: string; status: string };
}

/** Commits one event through the outbox, as a producer would; returns its id. */
export async function emit(env: TestEnv, organizationId: string, eventType: string, data: Record<string, unknown>): Promise<string> {
  const id = await env.db.tx((tx) => recordEvent(tx, { organizationId, eventType, data }));
  wakeRelay(env.db);
  return id;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
