// The SMS carrier the settings select (kept apart from the interface so the adapters can import it).
import type { Config } from '../config.ts';
import type { QueueRegistry } from '../queues/registry.ts';
import { receiptsQueue, type SmsCarrier } from './carrier.ts';
import { SandboxSmsCarrier } from './sandbox-carrier.ts';

/** The configured SMS carrier. Only the sandbox exists so far: the LiveKit carrier carries no SMS. */
export function createSmsCarrier(queues: QueueRegistry, config: Config): SmsCarrier {
  return new SandboxSmsCarrier(receiptsQueue(queues), config.sandboxTimeScale);
}
