// Helpers of the SMS test files: an environment with the real workers process, an organization whose texting
// registration is approved (through the API and the sandbox vetting), webhook subscriptions and waits.
import { eventually, testEnv, type TestEnv } from '../helpers/env.ts';
import type { Receiver } from '../helpers/receiver.ts';

interface TapLike { teardown(fn: () => unknown): void }

export const SMS_EVENTS = ['sms_sent', 'sms_delivered', 'sms_failed', 'contact_replied', 'TEXTING_REGISTRATION_STATUS_CHANGED'];

export const BRAND = { legal_name: 'Acme Dental LLC', ein: '12-3456789', website: 'https://acmedental.example', vertical: 'healthcare', country: 'US' };
export const CAMPAIGN = {
  use_case: 'appointment_reminders', description: 'Appointment reminders and rescheduling links for our patients.',
  sample_messages: ['Acme Dental: your cleaning is tomorrow at 10 AM. Reply STOP to opt out.'],
  message_flow: 'Patients opt in on the booking form by ticking an unchecked SMS consent box.',
};

export async function smsEnv(t: TapLike, extra: Record<string, string> = {}, o: { workers?: boolean } = {}) {
  const env = await testEnv(t, {
    env: { SANDBOX_TIME_SCALE: '0.01', WEBHOOK_ALLOW_INSECURE: '1', WEBHOOK_RETRY_SCALE: '0.01', SMS_NUMBER_RATE_PER_SECOND: '50', ...extra },
  });
  const workers = o.workers === false ? null : env.spawn('workers');
  await workers?.ready();
  return { env, workers };
}

export type Org = Awaited<ReturnType<TestEnv['bootstrap']>>;

export async function submitRegistration(env: TestEnv, org: Org, body: Record<string, unknown> = { brand: BRAND, campaign: CAMPAIGN }) {
  return env.request('POST', '/v1/sms/registration', { key: org.api_key, body });
}

export async function registrationStatus(env: TestEnv, org: Org): Promise<string> {
  const r = await env.request('GET', '/v1/sms/registration', { key: org.api_key });
  if (r.status !== 200) throw new Error(`GET registration: ${r.status} ${r.text}`);
  return r.body.data.status;
}

export async function waitRegistration(env: TestEnv, org: Org, status: string) {
  await eventually(async () => (await registrationStatus(env, org)) === status, 60_000, 100);
}

/** An organization with `numbers` numbers and an approved texting registration. */
export async function textingOrg(env: TestEnv, o: Parameters<TestEnv['bootstrap']>[0] = {}): Promise<Org & { from: string }> {
  const org = await env.bootstrap({ numbers: 1, ...o });
  const r = await submitRegistration(env, org);
  if (r.status !== 202) throw new Error(`submit: ${r.status} ${r.text}`);
  await waitRegistration(env, org, 'approved');
  return { ...org, from: org.phone_numbers[0] };
}

export async function subscribe(env: TestEnv, rx: Receiver, org: Org, types = SMS_EVENTS) {
  for (const event_type of types) {
    const r = await env.request('POST', '/api/v1/webhook_subscriptions', {
      key: org.api_key, body: { webhook_url: rx.url(`/${org.organization_id}/${event_type}`), event_type },
    });
    if (r.status !== 201) throw new Error(`subscribe failed: ${r.status} ${r.text}`);
  }
}

export async function send(env: TestEnv, org: Org & { from: string }, to: string, body = 'Hello from the sandbox. Reply STOP to opt out.', key = org.api_key) {
  return env.request('POST', '/v1/sms/send', { key, body: { from_number: org.from, to_number: to, body } });
}

export async function getMessage(env: TestEnv, org: Org, id: string) {
  const r = await env.request('GET', `/v1/sms/messages/${id}`, { key: org.api_key });
  if (r.status !== 200) throw new Error(`GET message ${id}: ${r.status} ${r.text}`);
  return r.body.data;
}

/** Polls the database (not the API: its per-key rate limit) until the message has one of the statuses, then reads
 *  it through the API. */
export async function waitMessage(env: TestEnv, org: Org, id: string, statuses: string[], timeoutMs = 60_000) {
  await eventually(async () => {
    const m = await env.db.oneOrNone('SELECT status FROM sms_messages WHERE id = $1', [id]);
    return m && statuses.includes(m.status);
  }, timeoutMs, 100);
  return getMessage(env, org, id);
}

/** Unique webhook deliveries of one event type about one resource id. */
export function deliveries(rx: Receiver, eventType: string, id: string) {
  return rx.unique().filter((r) => r.body?.event_type === eventType && r.body?.data?.id === id).map((r) => r.body);
}
