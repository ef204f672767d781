import type { Job, WorkerOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.ts';
import type { Db } from '../shared/db.ts';
import type { Keyer } from '../shared/redis.ts';

export interface WorkerDeps {
  config: Config;
  db: Db;
  /** Connection for commands (BullMQ-compatible: maxRetriesPerRequest null). */
  redis: Redis;
  key: Keyer;
  log: Logger;
}

/** One queue's processor; each lives in its own file under workers/processors/ and is listed in registry.ts. */
export interface Processor<D = unknown> {
  queue: string;
  concurrency: number;
  /** BullMQ Worker settings beyond concurrency, e.g. a shorter lock so a crashed process's jobs come back sooner. */
  workerOptions?: Pick<WorkerOptions, 'lockDuration' | 'stalledInterval' | 'maxStalledCount' | 'limiter'>;
  /** token: the job's lock token, for processors that move their job themselves (e.g. back to delayed). */
  process(job: Job<D>, deps: WorkerDeps, token?: string): Promise<unknown>;
}

/** A long-running loop that is not a queue (the outbox relay, reconcilers): started and stopped with the process. */
export interface Service {
  name: string;
  start(deps: WorkerDeps): Promise<{ stop(): Promise<void> }>;
}
