// The ticket-cleanup queue: one delayed job per browser ticket (job id = call id), due TICKET_CLEANUP_SECONDS
// after issue. BullMQ keeps delayed jobs in Redis, so the deadline survives restarts of every process.
import type { Queue } from 'bullmq';
import { DURABLE_JOB_OPTIONS } from '../jobs.ts';
import type { QueueRegistry } from '../queues/registry.ts';

export const TICKET_CLEANUP_QUEUE = 'ticket-cleanup';
export interface TicketCleanupJob { callId: string }

export const ticketCleanupQueue = (queues: QueueRegistry): Queue<TicketCleanupJob> => queues.get<TicketCleanupJob>(TICKET_CLEANUP_QUEUE);

/** Idempotent: one cleanup job per ticket. */
export function scheduleTicketCleanup(queues: QueueRegistry, callId: string, delayMs: number) {
  return ticketCleanupQueue(queues).add('cleanup', { callId } satisfies TicketCleanupJob,
    { ...DURABLE_JOB_OPTIONS, jobId: callId, delay: Math.max(0, Math.round(delayMs)) });
}
