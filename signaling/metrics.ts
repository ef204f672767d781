// /metrics of one signaling process (Prometheus text): what this process holds (softphone sockets, the browser legs
// of its calls, its link to media) and what it did (redemptions, refusals), plus what every process counts (call
// transitions applied here, the default process metrics). Platform-wide gauges (live calls, channels in use, live
// legs of every organization) are the workers' (shared/metrics/platform-gauges.ts), so that nothing global is read
// once per signaling process.
import type { MediaFleet } from './media-fleet.ts';
import type { SipService } from './sip/service.ts';
import type { Softphone } from './softphone.ts';
import { gaugeLines } from '../shared/metrics/exposition.ts';
import { renderProcessMetrics } from '../shared/metrics/process-metrics.ts';
import type { Logger } from '../shared/log.ts';

export function renderMetrics(phone: Softphone, media: MediaFleet | null, log: Logger, sip: SipService | null = null): Promise<string> {
  return renderProcessMetrics([{ name: 'signaling', collect: () => {
    const out = [
      ...gaugeLines('openline_signaling_sockets', 'Softphone WebSockets open on this process.', [[{}, phone.stats.sockets]]),
      ...gaugeLines('openline_signaling_legs', 'Call legs this process holds, by role (browser: a softphone socket with a call).',
        [[{ role: 'browser' }, phone.heldCalls]]),
      '# HELP openline_signaling_tickets_redeemed_total Tickets and room tokens redeemed on this process.',
      '# TYPE openline_signaling_tickets_redeemed_total counter',
      `openline_signaling_tickets_redeemed_total ${phone.stats.redeemed}`,
      '# HELP openline_signaling_errors_total Error frames sent on this process, by code.',
      '# TYPE openline_signaling_errors_total counter',
      ...[...phone.stats.refused].map(([code, n]) => `openline_signaling_errors_total{code="${code}"} ${n}`),
    ];
    if (media) out.push(...gaugeLines('openline_signaling_media_link_up', '1 while the event stream to a media process is open.',
      [[{}, media.connected ? 1 : 0]]));
    if (media?.fleetMode) {
      // MEDIA_FLEET=1: each media process this one talks to, with the load it announced.
      const members = media.list();
      out.push(...gaugeLines('openline_signaling_media_fleet_up', 'Per media process of the fleet: 1 while its event stream is open.',
        members.map((m) => [{ media: m.instance }, m.connected ? 1 : 0])));
      out.push(...gaugeLines('openline_signaling_media_fleet_sessions', 'Per media process of the fleet: sessions (routers) it announced.',
        members.map((m) => [{ media: m.instance }, m.sessions])));
      out.push(...gaugeLines('openline_signaling_media_fleet_draining', 'Per media process of the fleet: 1 while it drains.',
        members.map((m) => [{ media: m.instance }, m.draining ? 1 : 0])));
    }
    if (sip) out.push(...sip.metrics());
    return out;
  } }], log);
}
