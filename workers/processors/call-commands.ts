import { pendingEffects } from '../../shared/calls/machine.ts';
import { COMMANDS_QUEUE, type CommandJob } from '../../shared/calls/queues.ts';
import { loadCall } from '../../shared/calls/store.ts';
import type { Processor } from '../processor.ts';

// Carrier work asked for by a process without a carrier (the gateway after an API hangup): carry out what the
// call's current state calls for — hang up the legs still up, release the channels. Idempotent.
export const callCommands: Processor<CommandJob> = {
  queue: COMMANDS_QUEUE,
  concurrency: 50,
  async process(job, deps) {
    const rt = deps.calls;
    const call = await loadCall(deps.db, job.data.callId);
    if (!call) return 'missing';
    await rt.run(call, pendingEffects(call));
    return call.status;
  },
};
