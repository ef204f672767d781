// GET /v1/calls (cursor list, order), GET /v1/calls/{id}, recording_url and the recordings scope,
// GET /v1/calls/{id}/transcript with its analysis, and the HIPAA content policy.
import t from 'tap';
import { setLimits } from '../../shared/calls/limits.ts';
import { aiCall, callEnv, callOrg, dial, settled, waitStatus } from './helpers.ts';

const { env } = await callEnv(t);

const REFERENCE_FIELDS = ['id', 'from_number', 'to_number', 'direction', 'duration_seconds', 'status', 'call_outcome', 'failure_code',
  'failure_category', 'disconnection_reason', 'picked_up', 'created_at'];

t.test('list: newest first, order=asc, cursor pages, only the organization\'s calls', async (t) => {
  const org = await callOrg(env);
  const other = await callOrg(env);
  await aiCall(env, other, '+14155550001');
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await aiCall(env, org, '+14155550001')).body.data.call_id);
  const all = await env.request('GET', '/v1/calls', { key: org.api_key });
  t.equal(all.status, 200);
  t.same(all.body.data.map((c: any) => c.id), [...ids].reverse(), 'newest first');
  t.equal(all.body.meta.page_size, 20);
  for (const f of REFERENCE_FIELDS) t.ok(f in all.body.data[0], `field ${f}`);
  const asc = await env.request('GET', '/v1/calls?order=asc&limit=2', { key: org.api_key });
  t.same(asc.body.data.map((c: any) => c.id), ids.slice(0, 2));
  const next = await env.request('GET', `/v1/calls?limit=2&cursor=${asc.body.meta.cursor}`, { key: org.api_key });
  t.same(next.body.data.map((c: any) => c.id), ids.slice(2, 4));
  const last = await env.request('GET', `/v1/calls?limit=2&cursor=${next.body.meta.cursor}`, { key: org.api_key });
  t.same(last.body.data.map((c: any) => c.id), ids.slice(4));
  t.notOk(last.body.meta.cursor, 'no cursor after the last page');
  const foreignCursor = await env.request('GET', `/v1/calls?cursor=${asc.body.meta.cursor}`, { key: other.api_key });
  t.same(foreignCursor.body.data, [], 'a cursor cannot reveal another organization\'s calls');
  const bad = await env.request('GET', '/v1/calls?limit=101', { key: org.api_key });
  t.equal(bad.status, 400);
  const notMine = await env.request('GET', `/v1/calls/${ids[0]}`, { key: other.api_key });
  t.equal(notMine.status, 404);
  t.equal((await env.request('GET', '/v1/calls/not-a-uuid', { key: org.api_key })).status, 404);
});

t.test('recording_url only with recordings:read; null without a recording', async (t) => {
  const org = await callOrg(env);
  const recorded = (await dial(env, org, '+14155554567', '+14155559999', { record: true })).body.data.call_id;
  const plain = (await dial(env, org, '+14155554567')).body.data.call_id;
  const c = await settled(env, org, recorded);
  t.equal(c.recording_url, `${env.url}/v1/calls/${recorded}/recording`);
  t.equal((await settled(env, org, plain)).recording_url, null);

  // The URL serves the recording: a μ-law WAV exactly as long as the talk time, speech where the transcript has turns.
  const wav = await env.request('GET', `/v1/calls/${recorded}/recording`, { key: org.api_key });
  t.equal(wav.status, 200);
  t.equal(wav.headers['content-type'], 'audio/wav');
  const a = wav.raw;
  t.equal(a.toString('ascii', 0, 4), 'RIFF');
  t.equal(a.toString('ascii', 8, 12), 'WAVE');
  t.equal(a.readUInt16LE(20), 7, 'μ-law');
  t.equal(a.readUInt32LE(24), 8000, '8 kHz');
  t.equal(a.toString('ascii', 50, 54), 'data');
  const data = a.subarray(58);
  t.equal(data.length, a.readUInt32LE(54));
  t.equal(data.length, c.duration_seconds * 8000, 'lasts the talk time');
  // Turns (sandbox bridge script): callee "Hello?" at 0 s, caller at 2 s, callee at 6 s, caller at 8 s (22 characters,
  // about 1.4 s of speech); 0xff is μ-law silence.
  const voiced = (from: number, to: number) => data.subarray(from * 8000, to * 8000).some((b) => b !== 0xff);
  t.equal(c.duration_seconds, 10);
  t.ok(voiced(0, 0.3), 'the callee speaks first');
  t.notOk(voiced(0.5, 2), 'a pause before the caller answers');
  t.ok(voiced(2, 2.5), 'then the caller');
  t.ok(voiced(8, 9), 'the last turn');
  t.notOk(voiced(9.5, 10), 'silence after the last turn until the call ends');
  const none = await env.request('GET', `/v1/calls/${plain}/recording`, { key: org.api_key });
  t.equal(none.status, 404);
  t.equal(none.body.error.code, 'not_found');
  const noRec = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['calls:read'] });
  const r = await env.request('GET', `/v1/calls/${recorded}`, { key: noRec.apiKey });
  t.notOk('recording_url' in r.body.data, 'absent without the recordings scope');
  const list = await env.request('GET', '/v1/calls', { key: noRec.apiKey });
  t.ok(list.body.data.every((x: any) => !('recording_url' in x)));
  const denied = await env.request('GET', `/v1/calls/${recorded}/recording`, { key: noRec.apiKey });
  t.equal(denied.status, 403);
  t.equal(denied.body.error.code, 'scope_missing');
});

t.test('transcripts: AI greeting and scripted exchange with analysis; unavailable, pending; scope', async (t) => {
  const org = await callOrg(env);
  const ai = (await aiCall(env, org, '+14155554567', { agent: { name: 'Ava', greeting: 'Hi, this is Ava from Acme.', prompt: 'Remind them of Tuesday.' } })).body.data.call_id;
  await settled(env, org, ai);
  const tr = await env.request('GET', `/v1/calls/${ai}/transcript`, { key: org.api_key });
  t.equal(tr.status, 200);
  t.match(tr.body.data, { call_id: ai, status: 'available', reason: null, language: 'en-US' });
  t.same(tr.body.data.turns[0], { speaker: 'agent', text: 'Hi, this is Ava from Acme.', offset_seconds: 0 });
  t.match(tr.body.data.turns[2].text, /This is Ava\. Remind them of Tuesday\./);
  t.equal(tr.body.data.turns.length, 5, 'the whole exchange fits in 10 s');
  t.match(tr.body.data.analysis, { sentiment: 'positive', turn_count: 5, talk_seconds: 10, ended_by: 'remote_hangup' });
  t.ok(tr.body.data.analysis.summary.includes('Ava'));

  const busy = (await aiCall(env, org, '+14155550001')).body.data.call_id;
  await settled(env, org, busy);
  t.match((await env.request('GET', `/v1/calls/${busy}/transcript`, { key: org.api_key })).body.data,
    { status: 'unavailable', reason: 'not_answered', turns: [], analysis: null });
  const bridge = (await dial(env, org, '+14155554567')).body.data.call_id;
  await settled(env, org, bridge);
  t.match((await env.request('GET', `/v1/calls/${bridge}/transcript`, { key: org.api_key })).body.data, { status: 'unavailable', reason: 'not_recorded' });
  const recorded = (await dial(env, org, '+14155554567', '+14155559999', { record: true })).body.data.call_id;
  await settled(env, org, recorded);
  t.match((await env.request('GET', `/v1/calls/${recorded}/transcript`, { key: org.api_key })).body.data, { status: 'available' });
  const live = (await aiCall(env, org, '+14155550008')).body.data.call_id;
  await waitStatus(env, org, live, 'ANSWERED');
  t.match((await env.request('GET', `/v1/calls/${live}/transcript`, { key: org.api_key })).body.data, { status: 'pending', reason: 'in_progress' });
  // Ended by a hangup: the transcript holds the turns spoken until then.
  await env.request('POST', `/v1/calls/${live}/hangup`, { key: org.api_key });
  const ended = await settled(env, org, live);
  const short = (await env.request('GET', `/v1/calls/${live}/transcript`, { key: org.api_key })).body.data;
  t.ok(short.turns.length >= 1 && short.turns.every((x: any) => x.offset_seconds <= ended.duration_seconds),
    `turns cut at the talk time (${short.turns.length} turns in ${ended.duration_seconds} s)`);
  t.match(short.analysis, { ended_by: 'api_hangup', talk_seconds: ended.duration_seconds, turn_count: short.turns.length });

  const noScope = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['calls:read'] });
  const denied = await env.request('GET', `/v1/calls/${ai}/transcript`, { key: noScope.apiKey });
  t.equal(denied.status, 403);
  t.equal(denied.body.error.code, 'scope_missing');
  t.equal((await env.request('GET', '/v1/calls/01900000-0000-7000-8000-000000000000/transcript', { key: org.api_key })).status, 404);
});

t.test('HIPAA content policy: transcripts 403 content_policy_forbidden, recordings never returned', async (t) => {
  const org = await callOrg(env);
  const id = (await dial(env, org, '+14155554567', '+14155559999', { record: true })).body.data.call_id;
  await settled(env, org, id);
  await setLimits(env.db, org.organization_id, { content_policy: 'hipaa' });
  const r = await env.request('GET', `/v1/calls/${id}/transcript`, { key: org.api_key });
  t.equal(r.status, 403);
  t.equal(r.body.error.code, 'content_policy_forbidden');
  const c = await env.request('GET', `/v1/calls/${id}`, { key: org.api_key });
  t.equal(c.body.data.recording_url, null, 'not returned even with recordings:read');
  const list = await env.request('GET', '/v1/calls', { key: org.api_key });
  t.equal(list.body.data[0].recording_url, null);
  const audio = await env.request('GET', `/v1/calls/${id}/recording`, { key: org.api_key });
  t.equal(audio.status, 403);
  t.equal(audio.body.error.code, 'content_policy_forbidden');
});
