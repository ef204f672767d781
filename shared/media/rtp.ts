// Just enough RTP (RFC 3550) for the sandbox far end, the tests and the benchmark: read a packet's header, find
// its payload, write a plain 12-byte header.
import { linearToMulaw, SAMPLE_RATE } from '../audio/mulaw-wav.ts';

/** Payload type of audio/PCMU (static, RFC 3551). */
export const PCMU_PAYLOAD_TYPE = 0;
/** 20 ms of 8 kHz audio: the packetization every PSTN leg uses. */
export const PCMU_SAMPLES_PER_PACKET = 160;
export const PACKET_INTERVAL_MS = 20;

export interface RtpHeader {
  payloadType: number;
  marker: boolean;
  sequenceNumber: number;
  timestamp: number;
  ssrc: number;
  /** Offset of the payload within the packet. */
  payloadOffset: number;
  /** Payload length (padding excluded). */
  payloadLength: number;
}

/** True for RTCP sharing the port with RTP (rtcp-mux, RFC 5761): packet types 192..223 sit where RTP's
 *  marker+payload type byte is. */
export function isRtcp(packet: Buffer): boolean {
  return packet.length >= 2 && packet[1] >= 192 && packet[1] <= 223;
}

/** Parses an RTP header; null when the packet is not RTP version 2 or is truncated. */
export function parseRtp(packet: Buffer): RtpHeader | null {
  if (packet.length < 12 || packet[0] >> 6 !== 2 || isRtcp(packet)) return null;
  const csrcCount = packet[0] & 0x0f;
  let offset = 12 + csrcCount * 4;
  if (packet[0] & 0x10) { // header extension: 4 bytes of profile + length, then length 32-bit words
    if (packet.length < offset + 4) return null;
    offset += 4 + packet.readUInt16BE(offset + 2) * 4;
  }
  let end = packet.length;
  if (packet[0] & 0x20) end -= packet[packet.length - 1]; // padding: the last byte counts it
  if (offset > end) return null;
  return {
    payloadType: packet[1] & 0x7f,
    marker: (packet[1] & 0x80) !== 0,
    sequenceNumber: packet.readUInt16BE(2),
    timestamp: packet.readUInt32BE(4),
    ssrc: packet.readUInt32BE(8),
    payloadOffset: offset,
    payloadLength: end - offset,
  };
}

/** Writes a 12-byte RTP header (no CSRC, no extension, no padding) at the start of `into`. */
export function writeRtpHeader(into: Buffer, h: { payloadType: number; marker?: boolean; sequenceNumber: number; timestamp: number; ssrc: number }): void {
  into[0] = 0x80;
  into[1] = (h.marker ? 0x80 : 0) | (h.payloadType & 0x7f);
  into.writeUInt16BE(h.sequenceNumber & 0xffff, 2);
  into.writeUInt32BE(h.timestamp >>> 0, 4);
  into.writeUInt32BE(h.ssrc >>> 0, 8);
}

/** A new RTP packet: header + payload. */
export function rtpPacket(h: { payloadType: number; marker?: boolean; sequenceNumber: number; timestamp: number; ssrc: number }, payload: Buffer): Buffer {
  const packet = Buffer.allocUnsafe(12 + payload.length);
  writeRtpHeader(packet, h);
  payload.copy(packet, 12);
  return packet;
}

/** `ms` of a sine tone as μ-law samples (8 kHz), at about -12 dBFS. */
export function mulawTone(frequencyHz: number, ms: number): Buffer {
  const samples = Math.round((SAMPLE_RATE * ms) / 1000);
  const out = Buffer.allocUnsafe(samples);
  for (let i = 0; i < samples; i++) out[i] = linearToMulaw(8000 * Math.sin((2 * Math.PI * frequencyHz * i) / SAMPLE_RATE));
  return out;
}

/** RFC 3550 §6.4.1 interarrival jitter, fed with (arrival, send) times in the same unit; reads in that unit. */
export class InterarrivalJitter {
  private lastTransit: number | null = null;
  jitter = 0;

  update(arrival: number, sent: number): void {
    const transit = arrival - sent;
    if (this.lastTransit !== null) this.jitter += (Math.abs(transit - this.lastTransit) - this.jitter) / 16;
    this.lastTransit = transit;
  }
}
