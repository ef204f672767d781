// /v1/tasks: workflows ("long-horizon tasks", jobs:read / jobs:write) run for each contact of a list (rules in
// shared/workflows; docs/reference/workflows.md).
import { Type } from '@sinclair/typebox';
import { PageQuery } from '../../shared/pagination.ts';
import { changeTask, CONTACT_STATES, createTask, getTask, listTaskContacts, listTasks, MAX_CONTACT_IDS, TASK_STATUSES, type TaskRow } from '../../shared/workflows/tasks.ts';
import type { Step } from '../../shared/workflows/steps.ts';
import { StepsSchema, TaskContactResponse, taskContactView, TaskResponse, taskView } from '../../shared/workflows/views.ts';
import type { Plugin } from '../http/types.ts';
import { ListMeta, UuidIdParams } from './schemas.ts';

const TAG = 'Tasks';
const IdParams = UuidIdParams('task');

const STEPS_EXAMPLE = [
  { type: 'sms', body: 'Hi {first_name}, this is Acme Dental: your cleaning is due. Reply STOP to opt out.' },
  { type: 'wait', seconds: 86400 },
  { type: 'branch', cases: { replied: 'end', opted_out: 'end' } },
  { type: 'call', agent_id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70' },
  { type: 'branch', cases: { answered: 'end' }, default: 6 },
  { type: 'wait', until: '10:00' },
  { type: 'sms', body: 'Sorry we missed you, {first_name}. Book at acme.example/book' },
];
const TASK_EXAMPLE = {
  id: '0193b0a1-1c2d-7e3f-8a4b-5c6d7e8f9a0b', campaign_id: '0193b0a1-1c2e-7a10-9b2c-3d4e5f6a7b8c', name: 'Spring recall',
  from_number: '+14155550123', status: 'running', steps: STEPS_EXAMPLE, contact_count: 1200,
  progress: { pending: 0, active: 12, waiting: 1010, in_call: 3, completed: 175, cancelled: 0 },
  outcomes: { answered: 120, no_answer: 40, opted_out: 15 },
  created_at: '2026-11-20T15:04:05.000Z', updated_at: '2026-11-20T15:04:05.000Z', started_at: '2026-11-20T15:04:05.000Z', completed_at: null, cancelled_at: null,
};
const CONTACT_EXAMPLE = {
  contact_id: '0193a9f0-3b4c-7d5e-8f60-71a2b3c4d5e6', phone_number: '+12125550187', state: 'waiting', step: 3,
  wake_at: '2026-11-21T14:00:00.000Z', wait_reason: 'call_window', call_id: null, last_outcome: 'sent', outcome: null, finished_at: null,
  history: [
    { step: 0, type: 'sms', attempt: 0, status: 'done', outcome: 'sent', ref_id: '0193a4e1-2b3c-7d4e-8f50-61a2b3c4d5e6', detail: null,
      started_at: '2026-11-20T15:04:06.000Z', finished_at: '2026-11-20T15:04:06.000Z' },
    { step: 1, type: 'wait', attempt: 0, status: 'done', outcome: null, ref_id: null, detail: 'until 2026-11-21T15:04:06.000Z',
      started_at: '2026-11-20T15:04:06.000Z', finished_at: '2026-11-20T15:04:06.000Z' },
    { step: 2, type: 'branch', attempt: 0, status: 'done', outcome: 'none', ref_id: null, detail: 'to 3',
      started_at: '2026-11-21T15:04:06.000Z', finished_at: '2026-11-21T15:04:06.000Z' },
    { step: 3, type: 'call', attempt: 0, status: 'retry', outcome: null, ref_id: null, detail: 'outside_call_window: tried again at 2026-11-21T14:00:00.000Z',
      started_at: '2026-11-21T02:04:06.000Z', finished_at: '2026-11-21T02:04:06.000Z' },
  ],
};

const RULES = 'Each call step is placed like POST /v1/calls/dial (connect_number) or POST /v1/calls (agent_id), each SMS step sent '
  + 'like POST /v1/sms/send, with the creating credential\'s bounds: compliance, guardrails, channels and spend apply. A contact '
  + 'outside its calling window or allowed days waits until they open (wait_reason call_window), never fails; a call refused for '
  + 'the call rate, the channel limit or the spend cap is tried again later; an opted-out (or DNC) contact stops with outcome '
  + 'opted_out; any other refusal is the step\'s outcome failed and the workflow goes on. A call step ends when the call does, '
  + 'with outcome answered, no_answer, busy, voicemail or failed. When a contact finishes, workflow_contact_completed fires.';

export const taskRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/tasks', scope: 'jobs:write', tag: TAG, summary: 'Create a task (a workflow over contacts)',
    description: 'Creates a workflow (ordered steps: call, sms, wait, branch) and its campaign over contacts: contact_ids (up to '
      + `${MAX_CONTACT_IDS}) or contact_filter (tag and/or sub_entity_id, as GET /v1/contacts filters; resolved now). start: true `
      + 'starts it at once; otherwise it is a draft, started with PATCH /v1/tasks/{id} {status: "running"}. Bad steps answer '
      + 'validation_error naming each (steps[i].field): an empty list, a branch to a step that does not exist, an sms step '
      + 'without body, a call step with neither or both of connect_number and agent_id, an unknown template field. ' + RULES
      + ' Honours Idempotency-Key.',
    examples: { request: { name: 'Spring recall', from_number: '+14155550123', contact_filter: { tag: 'recall' }, steps: STEPS_EXAMPLE, start: true },
      response: { data: TASK_EXAMPLE } },
    body: Type.Object({
      name: Type.String({ minLength: 1, maxLength: 200, description: 'Your name for it.' }),
      from_number: Type.String({ maxLength: 32, description: 'The caller ID and SMS sender: a number of your organization (E.164).' }),
      contact_ids: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { minItems: 1, maxItems: MAX_CONTACT_IDS, description: 'The contacts, each once.' })),
      contact_filter: Type.Optional(Type.Object({
        tag: Type.Optional(Type.String({ maxLength: 100, description: 'Contacts with this tag.' })),
        sub_entity_id: Type.Optional(Type.String({ maxLength: 64, description: 'Contacts of this sub-entity.' })),
      }, { additionalProperties: false, description: 'Instead of contact_ids: every live contact matching (at most 200,000).' })),
      steps: StepsSchema,
      start: Type.Optional(Type.Boolean({ description: 'Start at once (default false: a draft).' })),
    }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: TaskResponse }) },
    errors: ['forbidden'],
    handler: async (ctx) => {
      const reply = (t: TaskRow) => ({ status: 201, body: { data: taskView(t) } });
      const row = await createTask(ctx.deps.db, ctx.deps.queues, ctx.principal, { ...ctx.body, steps: ctx.body.steps as Step[] }, ctx.idempotent(reply));
      return reply(await getTask(ctx.deps.db, ctx.principal.organizationId, row.id));
    },
  });

  routes.add({
    method: 'GET', path: '/v1/tasks', scope: 'jobs:read', tag: TAG, summary: 'List tasks',
    description: 'The organization\'s tasks with their progress, newest first; status filters. Paginated with limit, order and cursor. Read-only.',
    examples: { response: { data: [TASK_EXAMPLE], meta: { page_size: 20 } } },
    query: Type.Object({ ...PageQuery, status: Type.Optional(Type.Union(TASK_STATUSES.map((s) => Type.Literal(s)), { description: 'Only tasks in this status.' })) },
      { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(TaskResponse, { description: 'The tasks, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const list = `tasks:${query.status ?? ''}`;
      const page = deps.cursors.params(list, query);
      const rows = await listTasks(deps.db, principal.organizationId, page, query.status);
      const out = deps.cursors.page(list, page, rows, (t) => t.id);
      return { status: 200, body: { data: out.data.map(taskView), meta: out.meta } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/tasks/{id}', scope: 'jobs:read', tag: TAG, summary: 'Read a task and its progress',
    description: 'One task with status and progress: contacts per state and finished contacts per outcome. Read-only.',
    examples: { response: { data: TASK_EXAMPLE } },
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: TaskResponse }) },
    handler: async ({ deps, principal, params }) => ({ status: 200, body: { data: taskView(await getTask(deps.db, principal.organizationId, params.id)) } }),
  });

  routes.add({
    method: 'PATCH', path: '/v1/tasks/{id}', scope: 'jobs:write', tag: TAG, summary: 'Start, pause, resume or cancel a task',
    description: 'status running starts a draft or resumes a paused task; paused holds every contact where it is (a call in '
      + 'progress ends by itself, its contact then holds); cancelled ends every unfinished contact (outcome cancelled, each with '
      + 'workflow_contact_completed; calls in progress are not hung up). A completed or cancelled task answers state_conflict; '
      + 'the status it has already changes nothing. name renames it.',
    examples: { request: { status: 'paused' }, response: { data: { ...TASK_EXAMPLE, status: 'paused' } } },
    params: IdParams,
    body: Type.Object({
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A new name.' })),
      status: Type.Optional(Type.Union([Type.Literal('running'), Type.Literal('paused'), Type.Literal('cancelled')], { description: 'running, paused or cancelled.' })),
    }, { additionalProperties: false, minProperties: 1 }),
    response: { status: 200, schema: Type.Object({ data: TaskResponse }) },
    errors: ['state_conflict'],
    handler: async (ctx) => {
      const reply = (t: TaskRow) => ({ status: 200, body: { data: taskView(t) } });
      return reply(await changeTask(ctx.deps.db, ctx.deps.queues, ctx.principal.organizationId, ctx.params.id, ctx.body, ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'GET', path: '/v1/tasks/{id}/contacts', scope: 'jobs:read', tag: TAG, summary: 'List a task\'s contacts',
    description: 'Each contact of the task\'s campaign with its state, current step and the history of the steps it took '
      + '(calls and SMS by id, waits, branches, tries again when the calling window was closed). Ordered by contact id; '
      + 'state filters. Paginated with limit, order and cursor. Read-only.',
    examples: { response: { data: [CONTACT_EXAMPLE], meta: { page_size: 20 } } },
    params: IdParams,
    query: Type.Object({ ...PageQuery, state: Type.Optional(Type.Union(CONTACT_STATES.map((s) => Type.Literal(s)), { description: 'Only contacts in this state.' })) },
      { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(TaskContactResponse, { description: 'The contacts.' }), meta: ListMeta }) },
    handler: async ({ deps, principal, params, query }) => {
      const list = `task_contacts:${params.id}:${query.state ?? ''}`;
      const page = deps.cursors.params(list, query);
      const rows = await listTaskContacts(deps.db, principal.organizationId, params.id, page, query.state);
      const out = deps.cursors.page(list, page, rows, (r) => r.contact_id);
      return { status: 200, body: { data: out.data.map(taskContactView), meta: out.meta } };
    },
  });
};
