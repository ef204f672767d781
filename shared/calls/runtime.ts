// What calling needs at run time in a process: queues, channel accounts, the call-rate limiter and (in workers)
// the carrier; plus the one function that moves a call: transition() = store.applyInput + carry out effects.
// Each process builds exactly one at start (its <proc>/start.ts) and passes it on.
import { legId, type Carrier, type LegRef, type LegRole } from '../carriers/carrier.ts';
import { carrierProfile, createCarrier, type CarrierProfile } from '../carriers/configured.ts';
import { ChannelAccounts } from '../channels/channel-accounts.ts';
import { FixedWindowLimiter } from '../ratelimit/fixed-window-limiter.ts';
import type { ProcessDeps } from '../process.ts';
import { SpendAccounts } from '../spend/spend-accounts.ts';
import { spendDay } from './limits.ts';
import type { Effect, Input } from './machine.ts';
import type { CallRow } from './model.ts';
import { stopRingingWhenOver } from './inbound.ts';
import { CallQueues } from './queues.ts';
import { applyInput, CallInserts, type Applied } from './store.ts';
import { afterTransition, publishProgress } from '../tickets/progress.ts';
import { reportCallTransitions } from '../metrics/call-transitions.ts';

/** Runs after a call's transition committed and its effects ran (or failed); must not throw. */
export type CommittedHook = (applied: Applied, input: Input) => Promise<void>;

export class CallRuntime {
  readonly queues: CallQueues;
  readonly channels: ChannelAccounts;
  readonly callRate: FixedWindowLimiter;
  readonly spend: SpendAccounts;
  readonly profile: CarrierProfile;
  /** New calls' inserts, batched per event-loop turn. */
  readonly inserts: CallInserts;
  /** Only where carrier work runs (workers); elsewhere carrier effects go to the call-commands queue. */
  readonly carrier: Carrier | null;
  private readonly committedHooks: CommittedHook[] = [];

  /** withCarrier: true for the configured carrier (workers), a Carrier instance to use that one, false for none. */
  constructor(readonly deps: ProcessDeps, withCarrier: boolean | Carrier) {
    this.queues = new CallQueues(deps.queues);
    this.channels = new ChannelAccounts(deps.redis, deps.key, deps.db);
    this.callRate = new FixedWindowLimiter(deps.redis);
    this.spend = new SpendAccounts(deps.redis, deps.key, deps.db);
    this.profile = carrierProfile(deps.config);
    this.inserts = new CallInserts(deps.db);
    this.carrier = withCarrier === true ? createCarrier(deps.config, deps.queues, deps.redis) : withCarrier || null;
    // Every call's progress on Redis (softphone sockets, call streams), after the channel release; browser calls'
    // ticket revocation at the end.
    this.onCommitted((applied, input) => afterTransition(deps, applied, input));
    this.onCommitted(reportCallTransitions(deps.log));
    // A sandbox inbound call that stops ringing unanswered: the browsers stop ringing.
    this.onCommitted((applied) => stopRingingWhenOver(this, applied));
  }

  /** Publishes a new call's state once its insert committed (its transitions are published by afterTransition).
   *  Never throws. */
  announce(call: CallRow): Promise<void> { return publishProgress(this.deps, call); }

  /** Registers a hook run after every applied transition, in registration order. */
  onCommitted(hook: CommittedHook): void { this.committedHooks.push(hook); }

  /** Applies one input to a call and carries out its effects (after the commit). */
  async transition(callId: string, input: Input, opts: { organizationId?: string; bestEffort?: boolean } = {}): Promise<Applied | null> {
    const applied = await applyInput(this.deps.db, callId, input, opts.organizationId);
    if (!applied) return null;
    try {
      await this.run(applied.call, applied.step.effects);
    } catch (err) {
      // Committed already: with bestEffort the reconciler finishes what failed here (e.g. a channel release).
      if (!opts.bestEffort) throw err;
      this.deps.log.error({ err, call_id: callId }, 'call effects failed after commit; the reconciler will repair');
    } finally {
      for (const hook of this.committedHooks) await hook(applied, input);
    }
    return applied;
  }

  /** Carries out effects. All of them are idempotent; every effect is attempted and the first error rethrown,
   *  so a retry can repeat the lot. */
  async run(call: CallRow, effects: Effect[]): Promise<void> {
    const errors: unknown[] = [];
    const carrierWork: Effect[] = [];
    for (const e of effects) {
      // The browser leg belongs to signaling (its WebSocket), not to the carrier.
      if ('role' in e && e.role === 'browser') continue;
      try {
        switch (e.kind) {
          case 'release':
            await this.channels.release(call.organization_id, call.id);
            // The spend reservation, replaced by what the call cost (its row is committed: cost_cents is final).
            if (call.spend_reserved_cents !== null) await this.spend.settle(call.organization_id, spendDay(call.created_at), call.id, call.cost_cents);
            break;
          case 'schedule_limit': await this.queues.scheduleLimit(call.id, e.at); break;
          case 'cancel_limit': await this.queues.cancelLimit(call.id); break;
          default:
            if (this.carrier) await this.carrierEffect(this.carrier, call, e);
            else carrierWork.push(e);
        }
      } catch (err) {
        errors.push(err);
      }
    }
    if (carrierWork.length) {
      try { await this.queues.requestCarrierWork(call.id); } catch (err) { errors.push(err); }
    }
    if (errors.length) throw errors[0];
  }

  private async carrierEffect(carrier: Carrier, call: CallRow, e: Effect): Promise<void> {
    const ref = (role: LegRole): LegRef => ({ callId: call.id, role, legId: legId(call.id, role), number: call.legs[role]!.number });
    switch (e.kind) {
      case 'originate': {
        const a = call.agent;
        await carrier.originate({
          ...ref(e.role), from: call.from_number, ringTimeoutSeconds: call.ring_timeout_seconds,
          maxDurationSeconds: call.max_duration_seconds, record: call.record,
          agent: call.type === 'ai' && a ? { name: a.name, greeting: a.greeting, prompt: a.prompt, voice: a.voice } : undefined,
        });
        return;
      }
      case 'hangup': await carrier.hangup({ ...ref(e.role), endRecorded: e.endRecorded, lastSeq: call.legs[e.role]!.last_seq ?? 0 }); return;
      case 'bridge': await carrier.bridge({ callId: call.id, connect: ref('connect'), destination: ref('destination'), at: e.at }); return;
      default: return;
    }
  }
}
