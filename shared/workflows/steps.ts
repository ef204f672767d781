// A workflow's steps: their shapes, the checks the API makes on them (beyond the request schema), SMS templates and
// when a wait ends. The engine that runs them is shared/workflows/engine.ts.
import { validationError } from '../errors.ts';
import { isTimeZone, localTime, zonedInstant } from '../compliance/timezone.ts';

export const BRANCH_OUTCOMES = ['answered', 'no_answer', 'busy', 'voicemail', 'failed', 'sent', 'replied', 'opted_out'] as const;
export type BranchOutcome = (typeof BRANCH_OUTCOMES)[number];
/** Where a branch goes: a step index, or 'end' (the contact finishes). */
export type Target = number | 'end';

export type Step =
  | { type: 'call'; connect_number?: string; agent_id?: string; record?: boolean }
  | { type: 'sms'; body: string }
  | { type: 'wait'; seconds?: number; until?: string; timezone?: string }
  | { type: 'branch'; cases: Partial<Record<BranchOutcome, Target>>; default?: Target };

export const MAX_STEPS = 50;
export const MAX_WAIT_SECONDS = 90 * 86400;
const TEMPLATE_FIELDS = ['first_name', 'last_name', 'name', 'phone_number'] as const;
const HHMM = /^([01][0-9]|2[0-3]):[0-5][0-9]$/;

/** The checks a schema cannot make; every problem is named in fields (steps[i].field). */
export function checkSteps(steps: Step[]): void {
  const bad: Record<string, string> = {};
  if (steps.length === 0) bad.steps = 'must have at least one step';
  const target = (t: Target | undefined, field: string) => {
    if (t === undefined || t === 'end') return;
    if (!Number.isInteger(t) || t < 0 || t >= steps.length) bad[field] = `must be a step index (0 to ${steps.length - 1}) or "end"; step ${t} does not exist`;
  };
  steps.forEach((s, i) => {
    const at = `steps[${i}]`;
    switch (s.type) {
      case 'call':
        if ((s.connect_number === undefined) === (s.agent_id === undefined)) bad[at] = 'a call step needs connect_number (a bridge) or agent_id (an AI call), one of them';
        break;
      case 'sms': {
        if (!s.body || !s.body.trim()) { bad[`${at}.body`] = 'is required: the text to send'; break; }
        for (const m of s.body.matchAll(/\{([a-z_]+)\}/g)) {
          if (!(TEMPLATE_FIELDS as readonly string[]).includes(m[1])) bad[`${at}.body`] = `{${m[1]}} is not a field; use ${TEMPLATE_FIELDS.map((f) => `{${f}}`).join(', ')}`;
        }
        break;
      }
      case 'wait':
        if ((s.seconds === undefined) === (s.until === undefined)) bad[at] = 'a wait step needs seconds or until (HH:MM local time), one of them';
        else if (s.until !== undefined && !HHMM.test(s.until)) bad[`${at}.until`] = 'must be a local time HH:MM';
        if (s.timezone !== undefined && !isTimeZone(s.timezone)) bad[`${at}.timezone`] = 'is not an IANA time zone';
        if (s.timezone !== undefined && s.until === undefined) bad[`${at}.timezone`] = 'is only used with until';
        break;
      case 'branch': {
        const n = Object.keys(s.cases ?? {}).length;
        if (n === 0) bad[`${at}.cases`] = 'must name at least one outcome';
        for (const [k, t] of Object.entries(s.cases ?? {})) target(t, `${at}.cases.${k}`);
        target(s.default, `${at}.default`);
        if (i === 0) bad[at] = 'a branch reads the outcome of a call or sms step before it; it cannot be the first step';
        break;
      }
    }
  });
  if (Object.keys(bad).length) throw validationError(bad);
}

/** The SMS body for a contact: {first_name}, {last_name}, {name}, {phone_number}. */
export function render(body: string, contact: { name: string; phone_number: string }): string {
  const parts = contact.name.trim().split(/\s+/).filter(Boolean);
  const values: Record<string, string> = {
    first_name: parts[0] ?? '', last_name: parts.length > 1 ? parts[parts.length - 1] : '', name: contact.name.trim(), phone_number: contact.phone_number,
  };
  return body.replace(/\{([a-z_]+)\}/g, (m, k: string) => values[k] ?? m);
}

/** When a wait step ends. A duration is scaled by SANDBOX_TIME_SCALE; a local time (the next time the zone's clock
 *  shows it, today or tomorrow) is wall-clock time and never scaled. */
export function waitEnds(s: Extract<Step, { type: 'wait' }>, now: number, timeScale: number, contactZone: string | null): { at: number; zone?: string } {
  if (s.seconds !== undefined) return { at: now + Math.round(s.seconds * 1000 * timeScale) };
  const zone = s.timezone ?? contactZone ?? 'UTC';
  const minute = Number(s.until!.slice(0, 2)) * 60 + Number(s.until!.slice(3, 5));
  const l = localTime(zone, now);
  let at = zonedInstant(zone, l.year, l.month, l.day, minute);
  if (at <= now) {
    const next = localTime(zone, now + 86400_000);
    at = zonedInstant(zone, next.year, next.month, next.day, minute);
  }
  return { at, zone };
}

/** A branch's next step: the case of the outcome (replied and opted_out, when true, before the previous step's
 *  outcome), else default, else the next step. */
export function branchTarget(s: Extract<Step, { type: 'branch' }>, index: number, outcome: string | null, facts: { replied: boolean; optedOut: boolean }): { matched: string; to: Target } {
  for (const o of ['opted_out', 'replied'] as const) {
    if ((o === 'opted_out' ? facts.optedOut : facts.replied) && s.cases[o] !== undefined) return { matched: o, to: s.cases[o]! };
  }
  if (outcome && s.cases[outcome as BranchOutcome] !== undefined) return { matched: outcome, to: s.cases[outcome as BranchOutcome]! };
  if (s.default !== undefined) return { matched: 'default', to: s.default };
  return { matched: 'none', to: index + 1 };
}

/** A call's outcome as a workflow step's: answered, no_answer, busy, voicemail or failed. */
export function callStepOutcome(status: string, callOutcome: string | null): string {
  switch (status) {
    case 'COMPLETED': return callOutcome === 'answered' || callOutcome === 'screened' ? 'answered' : callOutcome === 'voicemail' ? 'voicemail' : 'answered';
    case 'NO_ANSWER': return 'no_answer';
    case 'BUSY': return 'busy';
    case 'VOICEMAIL': return 'voicemail';
    default: return 'failed';
  }
}
