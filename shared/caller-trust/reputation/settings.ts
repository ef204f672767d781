import type { Config } from '../../config.ts';
import type { Db } from '../../db.ts';
import type { ReputationProvider } from './provider.ts';
import { SandboxReputationProvider } from './sandbox.ts';
import { TelnyxReputationProvider, telnyxSettings } from './telnyx.ts';

// The reputation settings themselves are Config.reputation (shared/config.ts, read once at start).

/** A paid refresh of a number answers every fresh request of that number for this long, without a second charge. */
export const PAID_REFRESH_WINDOW_MS = 60_000;

/** The configured provider: the sandbox unless REPUTATION_PROVIDER=telnyx. Built once per process by its
 *  composition root (GatewayDeps.reputation, WorkerDeps.reputation). */
export function createReputationProvider(db: Db, config: Pick<Config, 'reputation' | 'sandboxTimeScale'>): ReputationProvider {
  const { telnyx } = config.reputation;
  return telnyx ? new TelnyxReputationProvider(telnyxSettings(telnyx)) : new SandboxReputationProvider(db, config.sandboxTimeScale);
}
