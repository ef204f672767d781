// A workflow's call step with an agent places an AI call through the same placement code as POST /v1/calls: the
// sandbox agent talks to the contact, the call ends, and the contact moves on with the call's outcome. With the real
// workers process.
import t from 'tap';
import { smsEnv } from '../sms/helpers.ts';
import { addContacts, taskDone, workflowOrg } from './helpers.ts';

const { env } = await smsEnv(t);
const org = await workflowOrg(env);
const key = org.api_key;

t.test('call step with agent_id: an AI call whose outcome the branch reads', async (t) => {
  const agent = await env.request('POST', '/v1/agents', { key, body: { name: 'Reminder bot', greeting: 'Hi, this is the clinic calling.' } });
  t.equal(agent.status, 201, agent.text);
  const [answers] = await addContacts(env, org.organization_id, [{ phone: '+12125554567', name: 'Ada Lovelace' }]);
  const c = await env.request('POST', '/v1/tasks', { key, body: {
    name: 'AI reminder', from_number: org.from, contact_ids: [answers], start: true,
    steps: [
      { type: 'call', agent_id: agent.body.data.id },
      { type: 'branch', cases: { answered: 'end', no_answer: 2 } },
      { type: 'sms', body: 'Sorry we missed you, {first_name}.' },
    ],
  } });
  t.equal(c.status, 201, c.text);
  const done = await taskDone(env, key, c.body.data.id);
  t.same(done.progress.completed, 1);
  const [contact] = (await env.request('GET', `/v1/tasks/${c.body.data.id}/contacts`, { key })).body.data;
  t.same(contact.history.map((h: any) => [h.type, h.outcome]), [['call', 'answered'], ['branch', 'answered']], 'answered: the branch ends it');
  const call = (await env.request('GET', `/v1/calls/${contact.history[0].ref_id}`, { key })).body.data;
  t.match(call, { type: 'ai', status: 'COMPLETED', to_number: '+12125554567', from_number: org.from }, 'an AI call, placed and completed');
  t.equal(call.agent_id, agent.body.data.id, 'with the step\'s agent');
  const transcript = await env.request('GET', `/v1/calls/${call.id}/transcript`, { key });
  t.equal(transcript.status, 200, 'the sandbox agent talked (a transcript exists)');
});
