// SDP of a SIP leg (sdp-transform): our offer, and what we take from the far end's answer. The offer names only the
// leg's RTP port (media's relay) and the codecs; nothing about the call or its other leg (o= user "-", s= "-").
import { isIP } from 'node:net';
import { parse, write, type SessionDescription } from 'sdp-transform';
import type { G711 } from '../../shared/media/protocol.ts';

export const DTMF_PAYLOAD_TYPE = 101;
const G711_BY_PAYLOAD: Record<number, G711> = { 0: 'audio/PCMU', 8: 'audio/PCMA' };

/** An audio offer: PCMU, PCMA and telephone-event at `ip`:`port`. */
export function offer(o: { ip: string; port: number; sessionId: number; version: number }): string {
  const ipVer = isIP(o.ip) === 6 ? 6 : 4;
  const sdp: SessionDescription = {
    version: 0,
    origin: { username: '-', sessionId: o.sessionId, sessionVersion: o.version, netType: 'IN', ipVer, address: o.ip },
    name: '-',
    connection: { version: ipVer, ip: o.ip },
    timing: { start: 0, stop: 0 },
    media: [{
      type: 'audio', port: o.port, protocol: 'RTP/AVP', payloads: `0 8 ${DTMF_PAYLOAD_TYPE}`,
      rtp: [
        { payload: 0, codec: 'PCMU', rate: 8000 },
        { payload: 8, codec: 'PCMA', rate: 8000 },
        { payload: DTMF_PAYLOAD_TYPE, codec: 'telephone-event', rate: 8000 },
      ],
      fmtp: [{ payload: DTMF_PAYLOAD_TYPE, config: '0-16' }],
      ptime: 20,
      direction: 'sendrecv',
    }],
  };
  return write(sdp);
}

export interface Answer { ip: string; port: number; rtcpPort: number; mimeType: G711 }

/** The far end's RTP address, RTCP port and chosen codec, or why the answer cannot be used. */
export function readAnswer(text: string | undefined): Answer | { error: string } {
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
  const payload = String(audio.payloads ?? '').split(' ').map(Number).find((p) => p in G711_BY_PAYLOAD);
  if (payload === undefined) return { error: 'the SDP answer chose neither PCMU nor PCMA' };
  const rtcpPort = audio.rtcpMux ? audio.port : audio.rtcp?.port ?? (audio.port < 65535 ? audio.port + 1 : audio.port);
  return { ip, port: audio.port, rtcpPort, mimeType: G711_BY_PAYLOAD[payload] };
}
