// The answers of /v1/tasks (views beside their schemas) and the step schema of requests and answers.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import { BRANCH_OUTCOMES, MAX_STEPS, MAX_WAIT_SECONDS, type Step } from './steps.ts';
import { CONTACT_STATES, TASK_STATUSES, type StepRunRow, type TaskContactRow, type TaskRow } from './tasks.ts';

const Ts = (description: string) => Type.String({ format: 'date-time', description });
const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

const TargetSchema = Type.Union([Type.Integer({ minimum: 0, maximum: MAX_STEPS - 1 }), Type.Literal('end')],
  { description: 'A step index (0-based) or "end".' });

/** One step, every type's fields in one object (which apply is checked per type, with fields naming steps[i]). */
export const StepSchema = Type.Object({
  type: Type.Union([Type.Literal('call'), Type.Literal('sms'), Type.Literal('wait'), Type.Literal('branch')], {
    description: 'call: a bridge (connect_number) or an AI call (agent_id) to the contact; sms: a text (body); wait: seconds, or until a '
      + 'local time; branch: jump on the previous call or SMS step\'s outcome.' }),
  connect_number: Type.Optional(Type.String({ maxLength: 32, description: 'call: your phone, rung first and bridged to the contact (E.164).' })),
  agent_id: Type.Optional(Type.String({ maxLength: 64, description: 'call: a saved agent (GET /v1/agents) that holds the conversation.' })),
  record: Type.Optional(Type.Boolean({ description: 'call: record the call (default false).' })),
  body: Type.Optional(Type.String({ maxLength: 1600, description: 'sms: the text; {first_name}, {last_name}, {name} and {phone_number} are the contact\'s.' })),
  seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_WAIT_SECONDS, description: 'wait: how long (scaled by SANDBOX_TIME_SCALE).' })),
  until: Type.Optional(Type.String({ maxLength: 5, description: 'wait: until this local time (HH:MM) next comes, in timezone, else the contact\'s, else UTC.' })),
  timezone: Type.Optional(Type.String({ maxLength: 64, description: 'wait: the IANA zone of until.' })),
  cases: Type.Optional(Type.Object(Object.fromEntries(BRANCH_OUTCOMES.map((o) => [o, Type.Optional(TargetSchema)])), {
    additionalProperties: false, description: `branch: where each outcome goes (${BRANCH_OUTCOMES.join(', ')}).` })),
  default: Type.Optional(TargetSchema),
}, { additionalProperties: false, description: 'A workflow step.' });

export const StepsSchema = Type.Array(StepSchema, { maxItems: MAX_STEPS, description: `The steps, run in order (1 to ${MAX_STEPS}).` });

const Progress = Type.Object(Object.fromEntries(CONTACT_STATES.map((s) => [s, Type.Integer({ description: `Contacts ${s}.` })])),
  { description: 'How many contacts are in each state.' });

export const TaskResponse = Type.Object({
  id: Type.String({ description: 'The task (workflow) id: workflow_id of workflow_contact_completed and of webhook subscriptions.' }),
  campaign_id: Type.String({ description: 'The run of the workflow over its contacts: campaign_id of workflow_contact_completed.' }),
  name: Type.String({ description: 'Your name for it.' }),
  from_number: Type.String({ description: 'The caller ID and SMS sender (E.164).' }),
  status: Type.Union(TASK_STATUSES.map((s) => Type.Literal(s)), { description: 'draft (not started), running, paused, cancelled, completed (every contact finished).' }),
  steps: Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: 'The steps as given.' }),
  contact_count: Type.Integer({ description: 'Contacts in the campaign.' }),
  progress: Progress,
  outcomes: Type.Record(Type.String(), Type.Integer(), { description: 'Finished contacts per outcome.' }),
  created_at: Ts('When it was created.'),
  updated_at: Ts('When it last changed.'),
  started_at: Nullable(Ts('When it was first started.'), 'When it was first started; null while draft.'),
  completed_at: Nullable(Ts('When every contact had finished.'), 'When every contact had finished.'),
  cancelled_at: Nullable(Ts('When it was cancelled.'), 'When it was cancelled.'),
}, { description: 'A task: a workflow and its campaign.' });

export function taskView(t: TaskRow): Static<typeof TaskResponse> {
  return {
    id: t.id, campaign_id: t.campaign_id, name: t.name, from_number: t.from_number, status: t.status, steps: t.steps as unknown as Record<string, unknown>[],
    contact_count: t.contact_count, progress: t.progress ?? {}, outcomes: t.outcomes ?? {},
    created_at: iso(t.created_at)!, updated_at: iso(t.updated_at)!, started_at: iso(t.started_at), completed_at: iso(t.completed_at), cancelled_at: iso(t.cancelled_at),
  };
}

const StepRunResponse = Type.Object({
  step: Type.Integer({ description: 'The step index.' }),
  type: Type.String({ description: 'The step type.' }),
  attempt: Type.Integer({ description: 'The try of this step (a call tried again when its calling window opens).' }),
  status: Type.Union([Type.Literal('started'), Type.Literal('done'), Type.Literal('retry')], { description: 'started: a call in progress; done; retry: tried again later (see detail).' }),
  outcome: Nullable(Type.String(), 'answered, no_answer, busy, voicemail, failed (calls); sent, failed (SMS); opted_out; the branch case taken.'),
  ref_id: Nullable(Type.String(), 'The call id or SMS message id.'),
  detail: Nullable(Type.String(), 'Why it failed or waits, where a wait or branch leads.'),
  started_at: Ts('When the step ran.'),
  finished_at: Nullable(Ts('When it finished.'), 'When it finished (a call: when it ended).'),
}, { description: 'A step the contact took.' });

export const TaskContactResponse = Type.Object({
  contact_id: Type.String({ description: 'The contact (GET /v1/contacts/{id}).' }),
  phone_number: Type.String({ description: 'The number called and texted.' }),
  state: Type.Union(CONTACT_STATES.map((s) => Type.Literal(s)), { description: 'pending (not started), active (its step is due), waiting (until wake_at), in_call, completed, cancelled.' }),
  step: Type.Integer({ description: 'The current (or last) step index.' }),
  wake_at: Nullable(Ts('When the step runs.'), 'When a waiting contact\'s step runs.'),
  wait_reason: Nullable(Type.String(), 'wait (a wait step), call_window (outside the calling window or its days), or the refusal that is tried again.'),
  call_id: Nullable(Type.String(), 'The call in progress.'),
  last_outcome: Nullable(Type.String(), 'The outcome of the last call or SMS step.'),
  outcome: Nullable(Type.String(), 'How it finished: the last step\'s outcome, opted_out or cancelled.'),
  finished_at: Nullable(Ts('When it finished.'), 'When it finished.'),
  history: Type.Array(StepRunResponse, { description: 'The steps taken, in order.' }),
}, { description: 'A contact of the task\'s campaign.' });

export function stepRunView(r: StepRunRow): Static<typeof StepRunResponse> {
  return { step: r.step_index, type: r.type, attempt: r.attempt, status: r.status as 'done', outcome: r.outcome, ref_id: r.ref_id, detail: r.detail,
    started_at: iso(r.started_at)!, finished_at: iso(r.finished_at) };
}

export function taskContactView(r: TaskContactRow): Static<typeof TaskContactResponse> {
  return {
    contact_id: r.contact_id, phone_number: r.phone_number, state: r.state, step: r.step_index, wake_at: iso(r.wake_at), wait_reason: r.wait_reason,
    call_id: r.call_id, last_outcome: r.last_outcome, outcome: r.outcome, finished_at: iso(r.finished_at), history: (r.history ?? []).map(stepRunView),
  };
}

export type { Step };
