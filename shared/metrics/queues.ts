// BullMQ queues on /metrics: jobs completed and failed, counted by the Worker that ran them (so each run is counted
// once, by the workers process that ran it), and each queue's depth by state, read at scrape time (global: every
// workers process reports the same depths; aggregate them with max).
import type { Worker } from 'bullmq';
import type { QueueRegistry } from '../queues/registry.ts';
import { cachedRead } from './cached.ts';
import { gaugeLines, type Labels } from './exposition.ts';
import { GLOBAL_GAUGES_CACHE_MS, GLOBAL_GAUGES_TIMEOUT_MS } from './platform-gauges.ts';
import { processCounter, type MetricsSource } from './process-metrics.ts';

export const jobsCompleted = processCounter('openline_queue_jobs_completed_total',
  'Jobs this process completed, by queue.', ['queue']);
export const jobFailures = processCounter('openline_queue_job_failures_total',
  'Job runs that failed in this process, by queue (a job retried later counts once per failed run).', ['queue']);

/** Counts a Worker's completed and failed runs under its queue's name. */
export function countJobs(worker: Worker, queue: string): void {
  worker.on('completed', () => jobsCompleted.inc({ queue }));
  worker.on('failed', () => jobFailures.inc({ queue }));
}

/** The states a job waits or runs in (completed jobs are history, not depth). */
export const QUEUE_STATES = ['waiting', 'prioritized', 'delayed', 'active', 'waiting-children', 'failed'] as const;

/** openline_queue_jobs{queue,state}: one getJobCounts per queue, shared for a few seconds. */
export function queueDepths(registry: QueueRegistry, names: string[]): MetricsSource {
  const queues = names.map((name) => registry.get(name));
  const read = cachedRead(GLOBAL_GAUGES_CACHE_MS, GLOBAL_GAUGES_TIMEOUT_MS,
    () => Promise.all(queues.map(async (q) => ({ queue: q.name, counts: await q.getJobCounts(...QUEUE_STATES) }))));
  return { name: 'queues', collect: async () => {
    const samples: [Labels, number][] = [];
    for (const { queue, counts } of await read()) for (const state of QUEUE_STATES) samples.push([{ queue, state }, counts[state] ?? 0]);
    return gaugeLines('openline_queue_jobs', 'Jobs in each queue by state, all processes together (failed: kept after '
      + 'their last attempt).', samples);
  } };
}
