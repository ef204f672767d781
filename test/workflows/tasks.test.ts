// Workflows end to end with the real workers process: SMS templates, a scaled wait, a bridge call whose end moves the
// contact on, branches on the call's outcome, workflow_contact_completed through the outbox to subscriptions filtered
// by workflow_id / campaign_id, pause / resume / cancel, opted-out contacts, tenant and scope isolation, bad input.
import t from 'tap';
import { eventually } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { smsEnv } from '../sms/helpers.ts';
import { addContacts, taskDone, workflowOrg } from './helpers.ts';

const { env } = await smsEnv(t);
const rx = await startReceiver(t);
const org = await workflowOrg(env);
const key = org.api_key;
const other = await env.bootstrap({ numbers: 1 });

const subscribe = async (path: string, extra: Record<string, string>) => {
  const r = await env.request('POST', '/api/v1/webhook_subscriptions', { key, body: { webhook_url: rx.url(path), event_type: 'workflow_contact_completed', ...extra } });
  t.equal(r.status, 201, `subscribed ${path}`);
};
const byPath = (p: string) => rx.unique().filter((r) => r.path === p);

t.test('sms → wait → call → branch on the outcome; events to their own subscriptions only', async (t) => {
  const [answered, rings] = await addContacts(env, org.organization_id, [
    { phone: '+12125554567', name: 'Ada Lovelace' }, { phone: '+12125550002', name: 'Bob Stone' }]);
  const steps = [
    { type: 'sms', body: 'Hi {first_name}, your checkup is due.' },
    { type: 'wait', seconds: 100 },
    { type: 'call', connect_number: '+14155550199' },
    { type: 'branch', cases: { answered: 'end', no_answer: 4 } },
    { type: 'sms', body: 'Sorry we missed you, {first_name}.' },
  ];
  const c = await env.request('POST', '/v1/tasks', { key, body: { name: 'Recall', from_number: org.from, contact_ids: [answered, rings], steps } });
  t.equal(c.status, 201, c.text);
  const task = c.body.data;
  t.match(task, { status: 'draft', contact_count: 2, progress: { pending: 2 } });
  await subscribe('/mine', { workflow_id: task.id });
  await subscribe('/mine-campaign', { campaign_id: task.campaign_id });
  await subscribe('/other', { workflow_id: '0193b0a1-0000-7000-8000-000000000000' });
  const started = await env.request('PATCH', `/v1/tasks/${task.id}`, { key, body: { status: 'running' } });
  t.equal(started.body.data.status, 'running');
  const done = await taskDone(env, key, task.id);
  t.same(done.progress.completed, 2);
  t.same(done.outcomes, { answered: 1, sent: 1 });

  const contacts = (await env.request('GET', `/v1/tasks/${task.id}/contacts`, { key })).body.data;
  const a = contacts.find((x: any) => x.contact_id === answered);
  const b = contacts.find((x: any) => x.contact_id === rings);
  t.same(a.history.map((h: any) => [h.type, h.outcome]), [['sms', 'sent'], ['wait', null], ['call', 'answered'], ['branch', 'answered']]);
  t.same(b.history.map((h: any) => [h.type, h.outcome]), [['sms', 'sent'], ['wait', null], ['call', 'no_answer'], ['branch', 'no_answer'], ['sms', 'sent']]);
  const bodies = await env.db.any(`SELECT remote_number, body FROM sms_messages WHERE direction = 'outbound' AND organization_id = $1 ORDER BY created_at`, [org.organization_id]);
  t.ok(bodies.some((m) => m.body === 'Hi Ada, your checkup is due.'), 'template filled from the contact');
  t.ok(bodies.some((m) => m.body === 'Sorry we missed you, Bob.'));
  const call = await env.request('GET', `/v1/calls/${a.history[2].ref_id}`, { key });
  t.match(call.body.data, { status: 'COMPLETED', type: 'bridge', to_number: '+12125554567' }, 'the call went through the dial path');

  await rx.waitFor(() => byPath('/mine').length === 2 && byPath('/mine-campaign').length === 2);
  const ev = byPath('/mine').map((r) => r.body.data).find((d: any) => d.contact_id === answered);
  t.match(ev, { workflow_id: task.id, campaign_id: task.campaign_id, contact_id: answered, outcome: 'answered' });
  t.equal(ev.steps.length, 4);
  const rows = await env.db.one(`SELECT count(*)::int AS n FROM events WHERE event_type = 'workflow_contact_completed' AND data->>'workflow_id' = $1`, [task.id]);
  t.equal(rows.n, 2, 'one event per finished contact');
  await new Promise((r) => setTimeout(r, 500));
  t.equal(byPath('/other').length, 0, 'a subscription of another workflow receives nothing');
});

t.test('pause holds, resume continues, cancel ends; opted-out contacts stop', async (t) => {
  const ids = await addContacts(env, org.organization_id, [{ phone: '+12125550301', name: 'C' }, { phone: '+12125550302', name: 'D' }, { phone: '+12125550303', name: 'E' }]);
  await env.db.none(`INSERT INTO opt_outs (organization_id, phone_number, channel, source) VALUES ($1, '+12125550303', 'sms', 'test')`, [org.organization_id]);
  const steps = [{ type: 'sms', body: 'one' }, { type: 'wait', seconds: 300 }, { type: 'sms', body: 'two' }];
  const task = (await env.request('POST', '/v1/tasks', { key, body: { name: 'P', from_number: org.from, contact_ids: ids, steps, start: true } })).body.data;
  t.equal(task.status, 'running');
  await eventually(async () => {
    const n = await env.db.one(`SELECT count(*)::int AS n FROM workflow_step_runs WHERE campaign_id = $1 AND type = 'sms'`, [task.campaign_id]);
    return n.n === 3;
  });
  const paused = await env.request('PATCH', `/v1/tasks/${task.id}`, { key, body: { status: 'paused' } });
  t.equal(paused.body.data.status, 'paused');
  await new Promise((r) => setTimeout(r, 4500)); // past the 3 s wait
  const held = (await env.request('GET', `/v1/tasks/${task.id}`, { key })).body.data;
  t.match(held, { status: 'paused', progress: { waiting: 2, completed: 1 }, outcomes: { opted_out: 1 } }, 'held where they were; the opted-out contact stopped');
  const two = await env.db.one(`SELECT count(*)::int AS n FROM sms_messages WHERE organization_id = $1 AND body = 'two'`, [org.organization_id]);
  t.equal(two.n, 0, 'nothing sent while paused');
  t.equal((await env.request('PATCH', `/v1/tasks/${task.id}`, { key, body: { status: 'running' } })).body.data.status, 'running');
  const done = await taskDone(env, key, task.id);
  t.same(done.outcomes, { sent: 2, opted_out: 1 });
  const again = await env.request('PATCH', `/v1/tasks/${task.id}`, { key, body: { status: 'paused' } });
  t.match(again, { status: 409, body: { error: { code: 'state_conflict', fields: { entity: 'task', status: 'completed' } } } });

  const cIds = await addContacts(env, org.organization_id, [{ phone: '+12125550311' }, { phone: '+12125550312' }]);
  const c = (await env.request('POST', '/v1/tasks', { key, body: { name: 'C', from_number: org.from, contact_ids: cIds, steps: [{ type: 'wait', seconds: 100000 }, { type: 'sms', body: 'never' }], start: true } })).body.data;
  await eventually(async () => (await env.request('GET', `/v1/tasks/${c.id}`, { key })).body.data.progress.waiting === 2);
  const cancelled = await env.request('PATCH', `/v1/tasks/${c.id}`, { key, body: { status: 'cancelled' } });
  t.match(cancelled.body.data, { status: 'cancelled', progress: { cancelled: 2 }, outcomes: { cancelled: 2 } });
  const ev = await env.db.one(`SELECT count(*)::int AS n FROM events WHERE event_type = 'workflow_contact_completed' AND data->>'workflow_id' = $1 AND data->>'outcome' = 'cancelled'`, [c.id]);
  t.equal(ev.n, 2, 'a cancelled contact finishes with its event');
});

t.test('bad input answers validation_error with fields', async (t) => {
  const [cid] = await addContacts(env, org.organization_id, [{ phone: '+12125550401' }]);
  const post = (body: Record<string, unknown>) => env.request('POST', '/v1/tasks', { key, body: { name: 'x', from_number: org.from, contact_ids: [cid], ...body } });
  const cases: [Record<string, unknown>, string][] = [
    [{ steps: [] }, 'steps'],
    [{ steps: [{ type: 'sms', body: 'a' }, { type: 'branch', cases: { answered: 7 } }] }, 'steps[1].cases.answered'],
    [{ steps: [{ type: 'sms' }] }, 'steps[0].body'],
    [{ steps: [{ type: 'sms', body: 'hi {nickname}' }] }, 'steps[0].body'],
    [{ steps: [{ type: 'call' }] }, 'steps[0]'],
    [{ steps: [{ type: 'wait', until: '25:00' }] }, 'steps[0].until'],
    [{ steps: [{ type: 'sms', body: 'a' }], from_number: '+14155550999' }, 'from_number'],
    [{ steps: [{ type: 'sms', body: 'a' }], contact_ids: ['0193b0a1-0000-7000-8000-000000000001'] }, 'contact_ids[0]'],
  ];
  for (const [body, field] of cases) {
    const r = await post(body);
    t.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    t.equal(r.body.error.code, 'validation_error');
    t.ok(r.body.error.fields?.[field], `fields.${field}: ${JSON.stringify(r.body.error.fields)}`);
  }
  const theirs = await addContacts(env, other.organization_id, [{ phone: '+12125550402' }]);
  const foreign = await post({ steps: [{ type: 'sms', body: 'a' }], contact_ids: theirs });
  t.match(foreign, { status: 400, body: { error: { fields: { 'contact_ids[0]': /not a contact/ } } } }, 'another organization\'s contact is not found');
});

t.test('tenant isolation and scopes', async (t) => {
  const [cid] = await addContacts(env, org.organization_id, [{ phone: '+12125550501' }]);
  const task = (await env.request('POST', '/v1/tasks', { key, body: { name: 'Mine', from_number: org.from, contact_ids: [cid], steps: [{ type: 'wait', seconds: 1 }] } })).body.data;
  for (const [m, p, body] of [['GET', `/v1/tasks/${task.id}`], ['PATCH', `/v1/tasks/${task.id}`, { status: 'running' }], ['GET', `/v1/tasks/${task.id}/contacts`]] as const) {
    const r = await env.request(m, p, { key: other.api_key, body });
    t.equal(r.status, 404, `${m} ${p} with another organization's key`);
    t.notMatch(r.text, task.id.slice(0, 8) + '.*Mine');
  }
  const list = await env.request('GET', '/v1/tasks', { key: other.api_key });
  t.same(list.body.data, [], 'another organization lists none');
  t.equal((await env.request('GET', `/v1/tasks/${task.id}`, { key })).body.data.status, 'draft', 'untouched');
  const ro = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['jobs:read'] });
  const none = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['calls:read'] });
  for (const [k, m, p, body] of [[ro.apiKey, 'POST', '/v1/tasks', { name: 'x', from_number: org.from, contact_ids: [cid], steps: [{ type: 'wait', seconds: 1 }] }],
    [ro.apiKey, 'PATCH', `/v1/tasks/${task.id}`, { status: 'running' }], [none.apiKey, 'GET', `/v1/tasks/${task.id}`, undefined],
    [none.apiKey, 'GET', '/v1/tasks', undefined]] as const) {
    const r = await env.request(m, p, { key: k, body });
    t.match(r, { status: 403, body: { error: { code: 'scope_missing' } } }, `${m} ${p}`);
  }
  t.equal((await env.request('GET', `/v1/tasks/${task.id}`, { key: ro.apiKey })).status, 200, 'jobs:read reads');
});
