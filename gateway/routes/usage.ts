import { Type } from '@sinclair/typebox';
import { validationError } from '../../shared/errors.ts';
import { UsagePeriodResponse, UsageSummaryResponse } from '../../shared/usage/schemas.ts';
import { usageByPeriod, usageSummary, type Granularity } from '../../shared/usage/usage.ts';
import type { Plugin } from '../http/types.ts';
import { listFilter } from '../../shared/sub-entities/limit.ts';
import { assertSubEntityFilter } from '../../shared/sub-entities/sub-entities.ts';

// Usage and spend reads (shared/usage): the same rows the daily spend cap counts.

const Period = UsagePeriodResponse;

const byPath = (total: number, bridge: number, ai: number, webrtc: number, room: number, inbound = 0) => ({ total, bridge, ai, webrtc, room, inbound });
const DAY_EXAMPLE = {
  period: '2026-11-23', calls: byPath(14, 6, 5, 2, 1), minutes: byPath(41, 24, 11, 4, 2), sms_segments: 30, reputation_checks: 2,
  spend_cents: { total: 158, calls: 82, sms: 60, reputation_checks: 16, remediation: 0 },
};

const SUB_ENTITY = Type.Optional(Type.String({
  description: 'Only the usage of this sub-entity: its calls and SMS messages (and their spend); reputation checks and '
    + 'remediation belong to the organization and count 0. A malformed id is a validation_error; an unknown one counts '
    + 'nothing. A key limited to a sub-entity always reads its own sub-entity\'s usage.',
  examples: ['0193a5e1-2f4c-7a10-8b3d-5e6f7a8b9c0d'] }));

const DATE = '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$';
/** A real date (JavaScript turns 2026-02-30 into March 2). */
const isCalendarDate = (v: string) => {
  const d = new Date(`${v}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === v;
};
/** The longest range one request may ask for. */
const MAX_DAYS = 366;

export const usageRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/usage', scope: 'usage:read', tag: 'Usage', summary: 'Read usage per day or month',
    description: 'Calls, billed minutes by calling path, SMS segments, paid reputation checks and spend, per UTC day '
      + '(granularity=day, the default) or month, from `from` to `to` (UTC dates, inclusive; default: the current month '
      + 'to today; at most 366 days). A call counts on the UTC day it was placed, like the daily spend cap; minutes and '
      + 'cost once it ended. Every period of the range is listed, oldest first, zeros included.',
    examples: { response: { data: [DAY_EXAMPLE] } },
    query: Type.Object({
      from: Type.Optional(Type.String({ pattern: DATE, description: 'First UTC day (YYYY-MM-DD).' })),
      to: Type.Optional(Type.String({ pattern: DATE, description: 'Last UTC day (YYYY-MM-DD), not before from.' })),
      granularity: Type.Optional(Type.Union([Type.Literal('day'), Type.Literal('month')], { description: 'day (default) or month.' })),
      sub_entity_id: SUB_ENTITY,
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(Period, { description: 'The periods, oldest first.' }) }) },
    handler: async ({ deps, principal, query }) => {
      const now = new Date(deps.clock.now());
      const today = now.toISOString().slice(0, 10);
      const from = query.from ?? `${today.slice(0, 7)}-01`;
      const to = query.to ?? today;
      const bad: Record<string, string> = {};
      for (const [k, v] of [['from', from], ['to', to]] as const) if (!isCalendarDate(v)) bad[k] = 'is not a calendar date';
      if (!Object.keys(bad).length) {
        const days = (Date.parse(to) - Date.parse(from)) / 86_400_000;
        if (days < 0) bad.to = 'must not be before from';
        else if (days >= MAX_DAYS) bad.to = `must be within ${MAX_DAYS} days of from`;
      }
      if (Object.keys(bad).length) throw validationError(bad);
      assertSubEntityFilter(query.sub_entity_id);
      const data = await usageByPeriod(deps.db, principal.organizationId, from, to, (query.granularity ?? 'day') as Granularity,
        listFilter(principal, query.sub_entity_id));
      return { status: 200, body: { data } };
    },
  });
  routes.add({
    method: 'GET', path: '/v1/usage/summary', scope: 'usage:read', tag: 'Usage', summary: 'Read the usage summary',
    description: 'Today\'s and this month\'s usage (UTC), the plan (included voice minutes, used and remaining; null: no '
      + 'minute limit), the daily spend cap with what is left of it today, and the call limits (channels held at once, with '
      + 'those in use now, new calls per minute, and the countries beyond the US and Canada that calls may go to). Read-only. With `sub_entity_id` (and always for a key limited to a '
      + 'sub-entity), today and month are that sub-entity\'s; plan, spend cap and limits stay the organization\'s.',
    examples: {
      response: { data: {
        today: DAY_EXAMPLE, month: { ...DAY_EXAMPLE, period: '2026-11' },
        plan: { subscription_active: true, included_voice_minutes: 1000, used_voice_minutes: 41, remaining_voice_minutes: 959 },
        spend_cap: { daily_cap_cents: 10000, today_cents: 158, remaining_today_cents: 9842 },
        limits: { channel_limit: 10, channels_in_use: 2, calls_per_minute: 60, allow_countries: ['GB', 'MX'] },
      } },
    },
    query: Type.Object({ sub_entity_id: SUB_ENTITY }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: UsageSummaryResponse }) },
    handler: async ({ deps, principal, query }) => {
      assertSubEntityFilter(query.sub_entity_id);
      return { status: 200, body: { data: await usageSummary(deps.db, principal.organizationId, new Date(deps.clock.now()),
        () => deps.calls.channels.used(principal.organizationId), listFilter(principal, query.sub_entity_id)) } };
    },
  });
};
