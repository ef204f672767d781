// The bundle's entry (GET /softphone/sdk.js): exposes the SDK as the global `Openline`, and runs the softphone page
// when the document is that page.
import { mountPage } from './page.ts';

export { Softphone } from './softphone.ts';
export type { AudioStats, CallState, EndedDetail, ProgressDetail, SoftphoneError, SoftphoneOptions } from './softphone.ts';
export { IncomingCalls } from './incoming.ts';
export type { AcceptOptions, IncomingCall, IncomingStopped, ListenError, ListenOptions } from './incoming.ts';
export { PROTOCOL_VERSION } from './protocol.ts';

const root = typeof document !== 'undefined' ? document.getElementById('softphone-app') : null;
if (root) window.softphone = mountPage(root);
