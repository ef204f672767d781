import type { Db } from '../../db.ts';
import type { ReputationProvider } from './provider.ts';
import { SandboxReputationProvider } from './sandbox.ts';
import { TelnyxReputationProvider, telnyxSettingsFrom } from './telnyx.ts';

// Reputation settings, from the environment (read by the gateway and the workers alike).

export interface ReputationSettings {
  provider: 'sandbox' | 'telnyx';
  /** Evidence older than this is stale: the background refresh re-checks it (REPUTATION_FRESHNESS_SECONDS, 24 h). */
  freshnessMs: number;
  /** How often the background refresh looks for stale numbers (REPUTATION_SCAN_MS, 5 minutes). */
  scanMs: number;
  /** Stale numbers queued per scan (REPUTATION_BATCH_SIZE, 500). */
  batchSize: number;
  /** Provider lookups per second across every workers process (REPUTATION_RATE_PER_SECOND, 20). */
  ratePerSecond: number;
  /** Lookups in flight per workers process (REPUTATION_CONCURRENCY, 5). */
  concurrency: number;
}

/** A paid refresh of a number answers every fresh request of that number for this long, without a second charge. */
export const PAID_REFRESH_WINDOW_MS = 60_000;

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!(n > 0)) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

export function reputationSettings(env: NodeJS.ProcessEnv = process.env): ReputationSettings {
  const provider = (env.REPUTATION_PROVIDER || 'sandbox') as ReputationSettings['provider'];
  if (provider !== 'sandbox' && provider !== 'telnyx') throw new Error(`REPUTATION_PROVIDER must be sandbox or telnyx, got "${provider}"`);
  return {
    provider,
    freshnessMs: positive(env, 'REPUTATION_FRESHNESS_SECONDS', 86_400) * 1000,
    scanMs: positive(env, 'REPUTATION_SCAN_MS', 300_000),
    batchSize: Math.floor(positive(env, 'REPUTATION_BATCH_SIZE', 500)),
    ratePerSecond: Math.floor(positive(env, 'REPUTATION_RATE_PER_SECOND', 20)),
    concurrency: Math.floor(positive(env, 'REPUTATION_CONCURRENCY', 5)),
  };
}

const providers = new WeakMap<Db, ReputationProvider>();

/** The process's provider (one per database handle): the sandbox unless REPUTATION_PROVIDER=telnyx. */
export function reputationProvider(db: Db, sandboxTimeScale: number, env: NodeJS.ProcessEnv = process.env): ReputationProvider {
  let p = providers.get(db);
  if (!p) {
    p = reputationSettings(env).provider === 'telnyx'
      ? new TelnyxReputationProvider(telnyxSettingsFrom(env))
      : new SandboxReputationProvider(db, sandboxTimeScale);
    providers.set(db, p);
  }
  return p;
}
