import type { Job, WorkerOptions } from 'bullmq';
import { pendingEffects } from '../shared/calls/machine.ts';
import type { CallRuntime } from '../shared/calls/runtime.ts';
import type { Applied } from '../shared/calls/store.ts';
import type { Config } from '../shared/config.ts';
import type { ProcessDeps } from '../shared/process.ts';
import type { ReputationProvider } from '../shared/caller-trust/reputation/provider.ts';
import type { SmsCarrier } from '../shared/sms/carrier.ts';
import type { NumberPacer } from '../shared/sms/throughput.ts';
import type { SpendCharges } from '../shared/spend/charges.ts';
import type { DeliveryContext } from '../shared/webhooks/deliver.ts';

/** What every processor and service of the workers process is given; built once in workers/start.ts. */
export interface WorkerDeps extends ProcessDeps {
  /** The process's call runtime, with the configured carrier. */
  calls: CallRuntime;
  /** Webhook delivery: the HTTP poster, attempt log and subscription cache. */
  webhooks: DeliveryContext;
  /** SMS sending: the configured carrier, the per-number pacer and the spend charges. */
  sms: SmsSending;
  /** The number-reputation provider (shared/caller-trust/reputation/settings.ts). */
  reputation: ReputationProvider;
}

export interface SmsSending { carrier: SmsCarrier; pacer: NumberPacer; charges: SpendCharges }

type WorkerSettings = Pick<WorkerOptions, 'lockDuration' | 'stalledInterval' | 'maxStalledCount' | 'limiter'>;

/** One queue's processor; each lives in its own file under workers/processors/ and is listed in registry.ts. */
export interface Processor<D = unknown> {
  queue: string;
  /** Jobs run at once per process: a number, or read from the configuration when the Worker is created. */
  concurrency: number | ((config: Config) => number);
  /** BullMQ Worker settings beyond concurrency, e.g. a shorter lock so a crashed process's jobs come back sooner; or read
   *  from the configuration when the Worker is created. */
  workerOptions?: WorkerSettings | ((config: Config) => WorkerSettings);
  /** token: the job's lock token, for processors that move their job themselves (e.g. back to delayed). */
  process(job: Job<D>, deps: WorkerDeps, token?: string): Promise<unknown>;
}

/** A long-running loop that is not a queue (the outbox relay, reconcilers): started and stopped with the process. */
export interface Service {
  name: string;
  start(deps: WorkerDeps): Promise<{ stop(): Promise<void> }>;
}

/** After a call transition run by a job that was taken before (a retry, or a job a dead process held, possibly
 *  between its commit and its carrier command): the transition may be done already, so repeat what the call's state
 *  calls for (every effect is idempotent). One rule for every call queue's processor. */
export async function repeatIfTakenBefore(job: Job, rt: CallRuntime, applied: Applied): Promise<void> {
  const takenBefore = job.attemptsMade > 0 || job.attemptsStarted > 1;
  if (takenBefore && applied.step.result !== 'applied') await rt.run(applied.call, pendingEffects(applied.call));
}
