// The workers process is SIGKILLed while a campaign runs (sms → wait → sms over 150 contacts) and started again:
// every contact finishes, each step ran exactly once (two messages per contact, one step run per step), and one
// workflow_contact_completed per contact.
import t from 'tap';
import { eventually } from '../helpers/env.ts';
import { smsEnv } from '../sms/helpers.ts';
import { addContacts, taskDone, workflowOrg } from './helpers.ts';

const N = 150;
const { env, workers } = await smsEnv(t, { SMS_NUMBER_RATE_PER_SECOND: '1000' });
const org = await workflowOrg(env);
const ids = await addContacts(env, org.organization_id, Array.from({ length: N }, (_, i) => ({ phone: `+1212555${String(1000 + i).padStart(4, '0')}`, name: `P${i}` })));

t.test('SIGKILL mid-run loses no step and repeats none', async (t) => {
  const steps = [{ type: 'sms', body: 'first {first_name}' }, { type: 'wait', seconds: 150 }, { type: 'sms', body: 'second {first_name}' }];
  const task = (await env.request('POST', '/v1/tasks', { key: org.api_key, body: { name: 'Crash', from_number: org.from, contact_ids: ids, steps, start: true } })).body.data;
  // Kill while the first SMS steps are being taken (some done, not all).
  await eventually(async () => (await env.db.one(`SELECT count(*)::int AS n FROM workflow_step_runs WHERE campaign_id = $1`, [task.campaign_id])).n >= 20, 30_000, 5);
  await workers!.kill('SIGKILL');
  const at = (await env.db.one(`SELECT count(*)::int AS n FROM workflow_step_runs WHERE campaign_id = $1`, [task.campaign_id])).n;
  t.ok(at < 3 * N, `killed mid-run (${at} of ${3 * N} steps done)`);
  const again = env.spawn('workers');
  await again.ready();
  const done = await taskDone(env, org.api_key, task.id, 120_000);
  t.equal(done.progress.completed, N);
  const per = await env.db.any(`SELECT remote_number, count(*)::int AS n FROM sms_messages WHERE organization_id = $1 AND direction = 'outbound' GROUP BY 1`, [org.organization_id]);
  t.equal(per.length, N, 'every contact texted');
  t.ok(per.every((r) => r.n === 2), 'exactly two messages per contact');
  const runs = await env.db.one(`SELECT count(*)::int AS n, count(DISTINCT (contact_id, seq))::int AS d FROM workflow_step_runs WHERE campaign_id = $1 AND status = 'done'`, [task.campaign_id]);
  t.equal(runs.n, 3 * N, 'one run per step');
  t.equal(runs.d, 3 * N);
  const ev = await env.db.one(`SELECT count(*)::int AS n, count(DISTINCT data->>'contact_id')::int AS d FROM events WHERE event_type = 'workflow_contact_completed'`);
  t.same([ev.n, ev.d], [N, N], 'one event per contact');
  await again.kill('SIGTERM');
});
