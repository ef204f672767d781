// The CNAM provider the settings select (kept apart from the interface so the adapters can import it).
import type { CnamSettings } from '../config.ts';
import { sandboxCnamProvider, type CnamProvider } from './provider.ts';
import { TelnyxCnamProvider } from './telnyx.ts';

/** The configured provider: Telnyx when CNAM_PROVIDER=telnyx, else the sandbox. */
export function cnamProvider(settings: CnamSettings): CnamProvider {
  return settings.telnyx ? new TelnyxCnamProvider(settings.telnyx.apiKey, settings.telnyx.baseUrl) : sandboxCnamProvider;
}
