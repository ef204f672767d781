// SDP of a SIP leg (sdp-transform): our offer, and what we take from the far end's answer. The offer names only the
// leg's RTP (and RTCP) port in media and the codecs; nothing about the call or its other leg (o= user "-", s= "-").
import { isIP } from 'node:net';
import { parse, write, type SessionDescription } from 'sdp-transform';
import type { G711 } from '../../shared/media/protocol.ts';

export const DTMF_PAYLOAD_TYPE = 101;
const G711_BY_PAYLOAD: Record<number, G711> = { 0: 'audio/PCMU', 8: 'audio/PCMA' };

/** Where a leg's media listens: its RTP port and, when RTCP is not on the next port, its RTCP port (a=rtcp). */
export interface LegMedia { ip: string; port: number; rtcpPort?: number }
interface SdpAt extends LegMedia { sessionId: number; version: number }
type Rtp = SessionDescription['media'][number]['rtp'];

/** One audio stream at `ip`:`port` with these payload types; o= user "-" and s= "-" name nothing of the call. */
function audioSdp(o: SdpAt, rtp: Rtp, fmtp: SessionDescription['media'][number]['fmtp']): string {
  const ipVer = isIP(o.ip) === 6 ? 6 : 4;
  const sdp: SessionDescription = {
    version: 0,
    origin: { username: '-', sessionId: o.sessionId, sessionVersion: o.version, netType: 'IN', ipVer, address: o.ip },
    name: '-',
    connection: { version: ipVer, ip: o.ip },
    timing: { start: 0, stop: 0 },
    media: [{
      type: 'audio', port: o.port, protocol: 'RTP/AVP', payloads: rtp.map((r) => r.payload).join(' '),
      rtp, fmtp, ptime: 20, direction: 'sendrecv',
      ...(o.rtcpPort !== undefined && o.rtcpPort !== o.port + 1 ? { rtcp: { port: o.rtcpPort } } : {}),
    }],
  };
  return write(sdp);
}

/** An audio offer: PCMU, PCMA and telephone-event at `ip`:`port`. */
export function offer(o: SdpAt): string {
  return audioSdp(o, [
    { payload: 0, codec: 'PCMU', rate: 8000 },
    { payload: 8, codec: 'PCMA', rate: 8000 },
    { payload: DTMF_PAYLOAD_TYPE, codec: 'telephone-event', rate: 8000 },
  ], [{ payload: DTMF_PAYLOAD_TYPE, config: '0-16' }]);
}

/** Our answer to an inbound offer: one G.711 codec (PCMU when offered, which browsers speak, else PCMA) at the leg's
 *  RTP port (the relay takes no telephone-event: DTMF is not carried yet). */
export function answer(o: SdpAt & { payload: 0 | 8 }): string {
  return audioSdp(o, [{ payload: o.payload, codec: o.payload === 0 ? 'PCMU' : 'PCMA', rate: 8000 }], []);
}

export interface Answer { ip: string; port: number; rtcpPort: number; mimeType: G711 }

/** The far end's RTP address, RTCP port and chosen codec (its first G.711 one, or `prefer` when it lists that: an
 *  offer's choice is ours), or why the answer cannot be used. */
export function readAnswer(text: string | undefined, prefer?: G711): Answer | { error: string } {
  if (!text || !/^v=0\r?\n/.test(text)) return { error: 'the answer carries no SDP' };
  let sdp: SessionDescription;
  try {
    sdp = parse(text);
  } catch {
    return { error: 'the SDP answer does not parse' };
  }
  const audio = (sdp.media ?? []).find((m) => m.type === 'audio' && Number.isInteger(m.port) && m.port > 0 && m.port < 65536);
  if (!audio) return { error: 'the SDP answer accepts no audio stream' };
  if (audio.protocol !== 'RTP/AVP') return { error: `the SDP answer's audio uses ${audio.protocol}, not RTP/AVP` };
  const ip = audio.connection?.ip ?? sdp.connection?.ip;
  if (!ip || !isIP(ip)) return { error: 'the SDP answer names no RTP address' };
  const payloads = String(audio.payloads ?? '').split(' ').map(Number).filter((p) => p in G711_BY_PAYLOAD);
  const payload = payloads.find((p) => G711_BY_PAYLOAD[p] === prefer) ?? payloads[0];
  if (payload === undefined) return { error: 'the SDP answer chose neither PCMU nor PCMA' };
  const rtcpPort = audio.rtcpMux ? audio.port : audio.rtcp?.port ?? (audio.port < 65535 ? audio.port + 1 : audio.port);
  return { ip, port: audio.port, rtcpPort, mimeType: G711_BY_PAYLOAD[payload] };
}
