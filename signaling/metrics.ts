// /metrics of signaling (Prometheus text): live legs per organization and role, channels in use per organization
// (both from Redis, so every signaling process shows the same), and this process's sockets and redemptions.
import type { CallRuntime } from '../shared/calls/runtime.ts';
import type { SipService } from './sip/service.ts';
import type { Softphone } from './softphone.ts';

const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

export async function renderMetrics(rt: CallRuntime, phone: Softphone, sip: SipService | null = null): Promise<string> {
  const out: string[] = [];
  out.push('# HELP openline_live_legs Live call legs per organization and role (browser, destination, connect).');
  out.push('# TYPE openline_live_legs gauge');
  for (const [org, roles] of await phone.legs.counts()) {
    for (const [role, n] of roles) out.push(`openline_live_legs{organization_id="${esc(org)}",role="${esc(role)}"} ${n}`);
  }
  out.push('# HELP openline_channels_in_use Channels held per organization.');
  out.push('# TYPE openline_channels_in_use gauge');
  for (const org of await rt.channels.organizationsHolding()) {
    out.push(`openline_channels_in_use{organization_id="${esc(org)}"} ${await rt.channels.used(org)}`);
  }
  out.push('# HELP signaling_sockets Softphone WebSockets open on this process.');
  out.push('# TYPE signaling_sockets gauge');
  out.push(`signaling_sockets ${phone.stats.sockets}`);
  out.push('# HELP signaling_tickets_redeemed_total Tickets and room tokens redeemed on this process.');
  out.push('# TYPE signaling_tickets_redeemed_total counter');
  out.push(`signaling_tickets_redeemed_total ${phone.stats.redeemed}`);
  out.push('# HELP signaling_errors_total Error frames sent, by code.');
  out.push('# TYPE signaling_errors_total counter');
  for (const [code, n] of phone.stats.refused) out.push(`signaling_errors_total{code="${code}"} ${n}`);
  if (sip) out.push(...sip.metrics());
  return out.join('\n') + '\n';
}
