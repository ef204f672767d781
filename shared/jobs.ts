// One set of BullMQ job options for work that must happen and whose processors are idempotent (calls, carrier
// events, tickets): retried with exponential back-off, kept a while after completion so a repeated job id is dropped
// by BullMQ itself, failures kept for a week for inspection.
export const DURABLE_JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: 'exponential' as const, delay: 200 },
  removeOnComplete: { age: 3600, count: 50_000 },
  removeOnFail: { age: 7 * 86400 },
};
