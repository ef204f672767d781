// Helpers of the workflow tests: an organization that can text and call, contacts inserted directly, a task.
import { setLimits } from '../../shared/calls/limits.ts';
import { uuidv7 } from '../../shared/ids.ts';
import { eventually, type TestEnv } from '../helpers/env.ts';
import { textingOrg } from '../sms/helpers.ts';

export async function workflowOrg(env: TestEnv) {
  const org = await textingOrg(env);
  await setLimits(env.db, org.organization_id, { channel_limit: 1000, calls_per_minute: 10_000, daily_spend_cap_cents: 100_000_000 });
  return org;
}

export async function addContacts(env: TestEnv, orgId: string, list: { phone: string; name?: string; tag?: string }[]): Promise<string[]> {
  const ids = list.map(() => uuidv7());
  await env.db.none(`INSERT INTO contacts (id, organization_id, phone_number, name, tags)
                     SELECT unnest($1::uuid[]), $2, unnest($3::text[]), unnest($4::text[]), ARRAY[unnest($5::text[])]`,
  [ids, orgId, list.map((c) => c.phone), list.map((c) => c.name ?? ''), list.map((c) => c.tag ?? 'none')]);
  return ids;
}

export async function taskDone(env: TestEnv, key: string, id: string, timeoutMs = 60_000) {
  return eventually(async () => {
    const r = await env.request('GET', `/v1/tasks/${id}`, { key });
    return r.body.data.status === 'completed' ? r.body.data : null;
  }, timeoutMs, 200);
}
