// The call domain's vocabulary: statuses, outcomes, legs and the constants every part of calling shares.
import type { AsyncFailureCode, LegEndReason, LegRole } from '../carriers/carrier.ts';
import type { Agent } from '../agents/agents.ts';

export type { AsyncFailureCode, LegEndReason, LegRole };

/** webrtc: browser path A (ticket); room: browser path B (room token); inbound: a call to a number of the
 *  organization (CARRIER=sip, shared/calls/inbound.ts). */
export type CallType = 'bridge' | 'ai' | 'webrtc' | 'room' | 'inbound';

/** Live statuses: QUEUED (accepted, nothing originated yet), RINGING (a leg was originated), ANSWERED (the
 *  destination answered: bridged, or talking to the agent). Everything else is terminal. */
export const LIVE_STATUSES = ['QUEUED', 'RINGING', 'ANSWERED'] as const;
export const TERMINAL_STATUSES = ['COMPLETED', 'BUSY', 'NO_ANSWER', 'VOICEMAIL', 'FAILED', 'CANCELED'] as const;
export type LiveStatus = (typeof LIVE_STATUSES)[number];
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];
export type CallStatus = LiveStatus | TerminalStatus;

export const isTerminal = (s: string): s is TerminalStatus => (TERMINAL_STATUSES as readonly string[]).includes(s);

/** How a call ended, in one word. */
export type CallOutcome =
  | 'answered' | 'screened' | 'busy' | 'no_answer' | 'voicemail' | 'failed' | 'canceled' | 'connection_unconfirmed';

export type LegStatus = 'PENDING' | 'DIALING' | 'RINGING' | 'ANSWERED' | 'ENDED';
export const LEG_RANK: Record<LegStatus, number> = { PENDING: 0, DIALING: 1, RINGING: 2, ANSWERED: 3, ENDED: 4 };

export interface Leg {
  role: LegRole;
  number: string;
  status: LegStatus;
  reason: LegEndReason | null;
  originated_at: string | null;
  answered_at: string | null;
  ended_at: string | null;
  /** Highest carrier event seq applied to this leg (carriers that number their events). */
  last_seq?: number;
  /** Browser leg: the signaling process holding its WebSocket (the reconciler abandons calls of a dead one). */
  signaling?: string;
  /** A sandbox inbound call rung in browsers (POST /v1/sandbox/calls/inbound, ring: true): the caller's talk time,
   *  sandbox seconds after a browser accepts (shared/carriers/sandbox.ts). */
  talk_seconds?: number;
}

export type Legs = Partial<Record<LegRole, Leg>>;

/** The agent copy an AI call keeps: its settings, and the saved agent's id when it came from one. */
export interface AgentSettings extends Agent { id: string | null }

/** The columns of a `calls` row (timestamps as Date, as pg returns them). */
export interface CallRow {
  id: string;
  organization_id: string;
  api_key_id: string | null;
  user_id: string | null;
  type: CallType;
  direction: string;
  from_number: string;
  to_number: string;
  connect_number: string | null;
  phone_number_id: number | null;
  /** The sub-entity of the call (migration 033): its from_number's (inbound: the called number's) when placed. */
  sub_entity_id: string | null;
  agent_id: string | null;
  agent: AgentSettings | null;
  record: boolean;
  status: CallStatus;
  call_outcome: CallOutcome | null;
  failure_code: AsyncFailureCode | null;
  failure_category: 'unreachable' | 'voicemail' | null;
  disconnection_reason: string | null;
  picked_up: boolean;
  legs: Legs;
  channels: number;
  carrier: string;
  time_scale: number;
  max_duration_seconds: number;
  ring_timeout_seconds: number;
  price_cents_per_minute: number;
  cost_cents: number;
  /** Money reserved under the daily spend cap at admission: the most this call may cost (null: admitted before
   *  reservations existed, unbounded). */
  spend_reserved_cents: number | null;
  duration_seconds: number | null;
  originated_at: Date | null;
  answered_at: Date | null;
  ended_at: Date | null;
  transcript: unknown;
  created_at: Date;
  updated_at: Date;
}

/** Channels a call holds from admission until it ends (the reference's Limits table). */
export const CHANNELS: Record<CallType, number> = { bridge: 2, ai: 1, webrtc: 1, room: 1, inbound: 1 };

/** The asynchronous outcome table of the reference: code → category and the call's terminal status. */
export const FAILURES: Record<AsyncFailureCode, { category: 'unreachable' | 'voicemail'; status: TerminalStatus; outcome: CallOutcome; event: string }> = {
  busy: { category: 'unreachable', status: 'BUSY', outcome: 'busy', event: 'call_busy' },
  no_answer: { category: 'unreachable', status: 'NO_ANSWER', outcome: 'no_answer', event: 'call_no_answer' },
  number_unreachable: { category: 'unreachable', status: 'FAILED', outcome: 'failed', event: 'call_failed' },
  call_declined: { category: 'unreachable', status: 'FAILED', outcome: 'failed', event: 'call_failed' },
  carrier_rejected: { category: 'unreachable', status: 'FAILED', outcome: 'failed', event: 'call_failed' },
  voicemail_reached: { category: 'voicemail', status: 'VOICEMAIL', outcome: 'voicemail', event: 'call_voicemail' },
};

/** Call-length limit: 60 minutes unless an organization or number raises (or lowers) it; never above 3 hours. */
export const DEFAULT_MAX_CALL_MINUTES = 60;
export const MAX_CALL_MINUTES_CEILING = 180;
/** How long a leg may ring before the carrier gives up (no_answer). */
export const RING_TIMEOUT_SECONDS = 30;

export type HangupMode = 'hangup' | 'setup_failed' | 'cancel_setup';
export const HANGUP_MODES: HangupMode[] = ['hangup', 'setup_failed', 'cancel_setup'];
