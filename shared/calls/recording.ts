// Call recordings. The sandbox carrier has no media, so it renders a recorded call as audio the way its transcript
// describes it: each turn is a voiced, syllable-paced tone whose pitch tells the speakers apart, silence fills the
// rest of the talk time. Deterministic, so tests and integrations can check what they receive. The SIP trunk
// carrier's recordings are the call's real RTP, written by the media process (media/recorder.ts); the LiveKit
// carrier's would come from its media pipeline (LiveKit egress), which is not built yet.
import { MULAW_SILENCE, SAMPLE_RATE, linearToMulaw, mulawWav } from '../audio/mulaw-wav.ts';
import type { CallRow } from './model.ts';
import type { StoredTranscript, Turn } from './transcript.ts';

const PITCH_HZ: Record<Turn['speaker'], number> = { agent: 210, caller: 150, callee: 240 };
const SECONDS_PER_CHARACTER = 0.065;
const SYLLABLE_HZ = 4;

type RecordableCall = Pick<CallRow, 'id' | 'carrier' | 'record' | 'picked_up' | 'ended_at' | 'duration_seconds' | 'transcript'>;

/** A recording exists for an ended, answered, recorded call of the sandbox or SIP trunk carrier. */
export function hasRecording(c: RecordableCall): boolean {
  return (c.carrier === 'sandbox' || c.carrier === 'sip') && c.record && c.picked_up && c.ended_at !== null && c.duration_seconds !== null;
}

export const recordingPath = (callId: string) => `/v1/calls/${callId}/recording`;

/** Samples in the call's sandbox recording: exactly its talk time. */
export const sandboxSampleCount = (c: RecordableCall) => Math.max(0, c.duration_seconds ?? 0) * SAMPLE_RATE;

/** Samples [from, to) of the call's sandbox recording, computed on their own (so a long recording is rendered in
 *  small pieces): silence, with each turn voiced from its offset for as long as its text takes to say. */
export function renderSandboxSamples(c: RecordableCall, from: number, to: number): Buffer {
  const total = sandboxSampleCount(c);
  const out = Buffer.alloc(Math.max(0, Math.min(to, total) - from), MULAW_SILENCE);
  const turns = (c.transcript as StoredTranscript | null)?.turns ?? [];
  turns.forEach((turn, i) => {
    const start = Math.floor(turn.offset_seconds * SAMPLE_RATE);
    const nextStart = i + 1 < turns.length ? Math.floor(turns[i + 1].offset_seconds * SAMPLE_RATE) : total;
    // Speech lasts as long as its text takes to say, leaving a short pause before the next speaker.
    const end = Math.min(total, nextStart - SAMPLE_RATE / 4, start + Math.ceil(turn.text.length * SECONDS_PER_CHARACTER * SAMPLE_RATE));
    const f = PITCH_HZ[turn.speaker];
    for (let n = Math.max(start, from); n < Math.min(end, from + out.length); n++) {
      const t = (n - start) / SAMPLE_RATE;
      const envelope = 0.55 + 0.45 * Math.sin(2 * Math.PI * SYLLABLE_HZ * t); // syllables
      const voice = Math.sin(2 * Math.PI * f * t) + 0.35 * Math.sin(4 * Math.PI * f * t); // a fundamental and one harmonic
      out[n - from] = linearToMulaw(9000 * envelope * voice);
    }
  });
  return out;
}

/** The whole sandbox recording as a μ-law WAV in memory (small recordings and tests; the gateway streams a file
 *  rendered once, see recording-store.ts). */
export function sandboxRecordingWav(c: RecordableCall): Buffer {
  return mulawWav(renderSandboxSamples(c, 0, sandboxSampleCount(c)));
}
