// Helpers of the caller-ID tests: add a caller ID, read the code the sandbox's verification call spoke from the
// sandbox inbox, and verify end to end through the API.
import type { TestEnv } from '../helpers/env.ts';

export async function addCallerId(env: TestEnv, key: string, phone_number: string, name?: string) {
  const r = await env.request('POST', '/v1/caller-ids', { key, body: { phone_number, ...(name ? { name } : {}) } });
  if (r.status !== 201) throw new Error(`add caller ID: ${r.status} ${r.text}`);
  return r.body.data as { id: string; phone_number: string; status: string };
}

/** The code of the newest verification call the sandbox delivered to `phone`. */
export async function spokenCode(env: TestEnv, key: string, phone: string): Promise<string> {
  const r = await env.request('GET', `/v1/sandbox/inbox?phone_number=${encodeURIComponent(phone)}`, { key });
  if (r.status !== 200) throw new Error(`inbox: ${r.status} ${r.text}`);
  const entry = r.body.data[0];
  if (!entry) throw new Error(`nothing in the inbox of ${phone}`);
  const m = /Your verification code is ((?:\d, ){5}\d)\./.exec(entry.text);
  if (!m) throw new Error(`no code in: ${entry.text}`);
  return m[1].replace(/, /g, '');
}

/** Adds and verifies `phone` through the API; answers the caller ID. */
export async function verifiedCallerId(env: TestEnv, key: string, phone: string) {
  const c = await addCallerId(env, key, phone);
  const v = await env.request('POST', `/v1/caller-ids/${c.id}/verify`, { key });
  if (v.status !== 202) throw new Error(`verify: ${v.status} ${v.text}`);
  const code = await spokenCode(env, key, phone);
  const ok = await env.request('POST', `/v1/caller-ids/${c.id}/confirm`, { key, body: { code } });
  if (ok.status !== 200) throw new Error(`confirm: ${ok.status} ${ok.text}`);
  return ok.body.data;
}
