// The fault hook (tests only, FAULT_GATEWAY=kill-after-commit): the gateway dies right after a claimed attempt's
// effect committed and before its idempotency record is finished, to prove a retry replays the committed answer.
// Compiled in only when the fault is configured; production routes never carry this stage.
import type { Config } from '../../../shared/config.ts';
import type { StagePlan } from '../../../shared/http/pipeline.ts';
import type { AnyRoute } from '../types.ts';
import { MUTATING, type ApiRequest } from './state.ts';

export const faultStage = (faults: Config['faults']): StagePlan<AnyRoute, ApiRequest> => (route) =>
  faults.gateway === 'kill-after-commit' && route.scope !== null && MUTATING.has(route.method) ? {
    name: 'fault',
    run(x) {
      if (x.claim && x.reply!.status < 300) process.kill(process.pid, 'SIGKILL');
    },
  } : undefined;
