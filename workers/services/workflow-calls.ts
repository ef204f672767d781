import { isTerminal } from '../../shared/calls/model.ts';
import { onCallEnded, sweep } from '../../shared/workflows/engine.ts';
import type { Service } from '../processor.ts';

// Workflow call steps end when their call does: a hook on the workers' call runtime after each terminal transition
// (one indexed read for a call of no workflow), and a sweep every 5 s that finishes what a crash between the call's
// commit and the hook left, re-enqueues contacts whose job was lost, and marks campaigns completed.
export const workflowCalls: Service = {
  name: 'workflow-calls',
  async start(deps) {
    let stopped = false;
    deps.calls.onCommitted(async (applied) => {
      if (stopped || applied.step.result !== 'applied' || !isTerminal(applied.call.status)) return;
      await onCallEnded(deps, applied.call.id).catch((err) => deps.log.warn({ err, call_id: applied.call.id }, 'workflow call end not applied; the sweep will'));
    });
    let running: Promise<unknown> = Promise.resolve();
    const timer = setInterval(() => {
      running = sweep(deps).catch((err) => deps.log.warn({ err }, 'workflow sweep failed'));
    }, 5000);
    return { async stop() { stopped = true; clearInterval(timer); await running; } };
  },
};
