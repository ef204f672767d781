// The ticket-cleanup queue: one delayed job per browser ticket (job id = call id), due TICKET_CLEANUP_SECONDS
// after issue. BullMQ keeps delayed jobs in Redis, so the deadline survives restarts of every process.
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { DURABLE_JOB_OPTIONS } from '../jobs.ts';

export const TICKET_CLEANUP_QUEUE = 'ticket-cleanup';
export interface TicketCleanupJob { callId: string }

const queues = new WeakMap<Redis, Queue>();

export function ticketCleanupQueue(redis: Redis, prefix: string): Queue {
  let q = queues.get(redis);
  if (!q) queues.set(redis, (q = new Queue(TICKET_CLEANUP_QUEUE, { connection: redis, prefix })));
  return q;
}

/** Idempotent: one cleanup job per ticket. */
export function scheduleTicketCleanup(redis: Redis, prefix: string, callId: string, delayMs: number) {
  return ticketCleanupQueue(redis, prefix).add('cleanup', { callId } satisfies TicketCleanupJob,
    { ...DURABLE_JOB_OPTIONS, jobId: callId, delay: Math.max(0, Math.round(delayMs)) });
}
