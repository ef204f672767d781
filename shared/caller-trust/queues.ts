// The caller-trust providers' delayed jobs (sandbox vetting, DIR review and rollout) go on queues of the process's
// registry (deps.queues.get(name)); this file holds what their jobs share.

/** Options of a provider's delayed job: one job per id, retried with back-off, removed once done. */
export const delayedJob = (jobId: string, delayMs: number) => ({
  jobId, delay: Math.max(0, Math.round(delayMs)), attempts: 8, backoff: { type: 'exponential' as const, delay: 1000 },
  removeOnComplete: true, removeOnFail: true,
});
