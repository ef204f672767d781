// The SMS carrier the settings select (kept apart from the interface so the adapters can import it).
import type { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import { receiptsQueue, type SmsCarrier } from './carrier.ts';
import { SandboxSmsCarrier } from './sandbox-carrier.ts';

/** The configured SMS carrier. Only the sandbox exists so far: the LiveKit carrier carries no SMS. */
export function createSmsCarrier(redis: Redis, config: Config): SmsCarrier {
  return new SandboxSmsCarrier(receiptsQueue(redis, config.redisPrefix), config.sandboxTimeScale);
}
