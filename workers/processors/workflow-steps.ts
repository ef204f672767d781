import { processWorkflowJob, WORKFLOW_QUEUE, type WorkflowJob } from '../../shared/workflows/engine.ts';
import type { Processor } from '../processor.ts';

// Workflows (shared/workflows/engine.ts): a 'step' job runs one contact's current step exactly once (a wait's
// job is delayed until it ends); a 'schedule' job enqueues the step jobs of a page of a campaign's contacts (start
// and resume). A short lock: a SIGKILLed process's jobs come back within seconds, and the engine makes a repeat harmless.
export const workflowSteps: Processor<WorkflowJob> = {
  queue: WORKFLOW_QUEUE,
  concurrency: 50,
  workerOptions: { lockDuration: 5000, stalledInterval: 5000, maxStalledCount: 1000 },
  process: (job, deps, token) => processWorkflowJob(deps, job, token),
};
