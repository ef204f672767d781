// Response schemas of usage, beside what builds them (usage.ts: usageByPeriod, usageSummary, typed from these).
import { Type } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';

const ByPath = (what: string) => Type.Object({
  total: Type.Number({ description: `All ${what}.` }),
  bridge: Type.Number({ description: `${what} of bridge calls (POST /v1/calls/dial).` }),
  ai: Type.Number({ description: `${what} of AI calls (POST /v1/calls).` }),
  webrtc: Type.Number({ description: `${what} of browser calls, path A (POST /v1/webrtc-token).` }),
  room: Type.Number({ description: `${what} of browser calls, path B (POST /v1/room-token).` }),
  inbound: Type.Number({ description: `${what} of inbound calls (calls to your numbers).` }),
}, { description: `${what} by calling path.` });

export const UsagePeriodResponse = Type.Object({
  period: Type.String({ description: 'The UTC day (YYYY-MM-DD) or month (YYYY-MM).' }),
  calls: ByPath('Calls placed'),
  minutes: ByPath('Billed minutes'),
  sms_segments: Type.Integer({ description: 'SMS segments charged.' }),
  reputation_checks: Type.Integer({ description: 'Paid reputation checks charged.' }),
  spend_cents: Type.Object({
    total: Type.Integer({ description: 'Settled spend: the number the daily spend cap counts (calls and charges).' }),
    calls: Type.Integer({ description: 'Cost of calls that ended.' }),
    sms: Type.Integer({ description: 'SMS charges.' }),
    reputation_checks: Type.Integer({ description: 'Paid reputation check charges.' }),
    remediation: Type.Integer({ description: 'Remediation charges.' }),
  }, { description: 'Spend in cents.' }),
}, { description: 'Usage of one day or month.' });

export const UsageSummaryResponse = Type.Object({
  today: UsagePeriodResponse, month: UsagePeriodResponse,
  plan: Type.Object({
    subscription_active: Type.Boolean({ description: 'Whether calls may be placed (inactive: 402 no_active_subscription).' }),
    included_voice_minutes: Nullable(Type.Integer(), 'Billed minutes included per UTC month; null: no limit.'),
    used_voice_minutes: Type.Number({ description: 'Billed minutes of calls placed this month that ended.' }),
    remaining_voice_minutes: Nullable(Type.Number(), 'Minutes left (0: calls answer 402 voice_usage_exhausted); null: no limit.'),
  }, { description: 'The organization\'s plan.' }),
  spend_cap: Type.Object({
    daily_cap_cents: Type.Integer({ description: 'The daily spend cap.' }),
    today_cents: Type.Integer({ description: 'Settled spend today (UTC).' }),
    remaining_today_cents: Type.Integer({ description: 'What is left of the cap today, before calls in progress.' }),
  }, { description: 'The daily spend cap.' }),
  limits: Type.Object({
    channel_limit: Type.Integer({ description: 'Channels the organization may hold at once (a bridge call holds 2, an AI or browser call 1); more answer 429 channel_limit_exceeded.' }),
    channels_in_use: Type.Integer({ description: 'Channels held right now by calls in progress.' }),
    calls_per_minute: Type.Integer({ description: 'New calls per minute; more answer 429 rate_limited.' }),
    allow_countries: Type.Array(Type.String({ pattern: '^[A-Z]{2}$' }), { description: 'ISO 3166-1 alpha-2 countries outside the US, Canada and the US territories (which are always open) that calls may be placed to; empty: domestic only. Other countries are refused with destination_blocked.' }),
  }, { description: 'The organization\'s call limits (set by an operator: npm run admin -- org limits) and how close it is to the channel limit.' }),
}, { description: 'The summary.' });
