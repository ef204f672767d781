// G.711 μ-law WAV files: the telephone network's own audio format (8 kHz, 8 bits per sample).

export const SAMPLE_RATE = 8000;
/** μ-law code of a zero sample (digital silence). */
export const MULAW_SILENCE = 0xff;

const BIAS = 0x84;
const CLIP = 32635;

/** Encodes one signed 16-bit linear sample as a μ-law byte (ITU-T G.711). */
export function linearToMulaw(sample: number): number {
  let s = Math.max(-32768, Math.min(32767, Math.round(sample)));
  const sign = s < 0 ? 0x80 : 0;
  if (sign) s = -s;
  if (s > CLIP) s = CLIP;
  s += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** Decodes a μ-law byte to a signed 16-bit linear sample. */
export function mulawToLinear(byte: number): number {
  const u = ~byte & 0xff;
  const exponent = (u >> 4) & 0x07;
  const magnitude = ((((u & 0x0f) << 3) + BIAS) << exponent) - BIAS;
  return u & 0x80 ? -magnitude : magnitude;
}

/** Decodes an A-law byte (G.711 PCMA) to a signed 16-bit linear sample. */
export function alawToLinear(byte: number): number {
  const a = byte ^ 0x55;
  const exponent = (a >> 4) & 0x07;
  const mantissa = a & 0x0f;
  const magnitude = exponent === 0 ? (mantissa << 4) + 8 : ((mantissa << 4) + 0x108) << (exponent - 1);
  return a & 0x80 ? magnitude : -magnitude;
}

/** Bytes before the samples in a μ-law WAV (RIFF, fmt with its cbSize, fact, data chunk headers). */
export const MULAW_WAV_HEADER_BYTES = 58;

/** The RIFF/WAVE header of `sampleCount` μ-law samples (format 7, mono, 8 kHz; non-PCM formats carry a fact chunk). */
export function mulawWavHeader(sampleCount: number): Buffer {
  const header = Buffer.alloc(MULAW_WAV_HEADER_BYTES);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(50 + sampleCount, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(18, 16); // fmt chunk size
  header.writeUInt16LE(7, 20); // WAVE_FORMAT_MULAW
  header.writeUInt16LE(1, 22); // channels
  header.writeUInt32LE(SAMPLE_RATE, 24);
  header.writeUInt32LE(SAMPLE_RATE, 28); // bytes per second
  header.writeUInt16LE(1, 32); // block align
  header.writeUInt16LE(8, 34); // bits per sample
  header.writeUInt16LE(0, 36); // no extra format bytes
  header.write('fact', 38, 'ascii');
  header.writeUInt32LE(4, 42);
  header.writeUInt32LE(sampleCount, 46); // sample frames
  header.write('data', 50, 'ascii');
  header.writeUInt32LE(sampleCount, 54);
  return header;
}

/** Wraps μ-law samples in a RIFF/WAVE container. */
export function mulawWav(samples: Buffer): Buffer {
  return Buffer.concat([mulawWavHeader(samples.length), samples]);
}
