import { staleProvisioning } from '../../shared/numbers/lifecycle.ts';
import { enqueueProvisioning, SANDBOX_PROVISIONING_MS } from '../../shared/numbers/provisioning.ts';
import { periodic } from '../periodic.ts';
import type { Service } from '../processor.ts';

// The gateway enqueues a number's provisioning job right after the purchase commits; if it died in between, the
// number would stay PROVISIONING. This sweep re-enqueues such numbers (same job id: never provisioned twice).
export const numberProvisioningSweeper: Service = {
  name: 'number-provisioning-sweeper',
  async start(deps) {
    const scale = deps.config.sandboxTimeScale;
    const every = Math.max(1000, Math.round(15_000 * scale));
    const olderThan = Math.max(1000, Math.round(SANDBOX_PROVISIONING_MS * scale * 5));
    return periodic('provisioning sweep', every, async () => {
      for (const id of await staleProvisioning(deps.db, olderThan)) await enqueueProvisioning(deps.queues, deps.config, id);
    }, { log: deps.log });
  },
};
