// Sandbox recordings rendered once into files and served from there: a three-hour recording is 86 MB, which must not
// be rebuilt in memory per request. Each file is written in 64 KiB pieces to a temporary name and renamed into place
// (readers never see half a file; replicas sharing the directory at worst render the same bytes twice), and
// concurrent first requests in one process wait for the same rendering.
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MULAW_WAV_HEADER_BYTES, mulawWavHeader } from '../audio/mulaw-wav.ts';
import type { Logger } from '../log.ts';
import type { CallRow } from './model.ts';
import { renderSandboxSamples, sandboxSampleCount } from './recording.ts';

const CHUNK_SAMPLES = 64 * 1024;
// Part of every file name: a change to how recordings sound renders them anew instead of serving stale files.
const RENDER_VERSION = 'v1';

/** RECORDINGS_DIR: where the gateway keeps rendered recordings and the media process writes SIP calls' recordings
 *  (both must see the same directory). */
export const recordingsDirOf = (env: NodeJS.ProcessEnv): string => env.RECORDINGS_DIR || join(tmpdir(), 'openline-recordings');

/** Where the media process writes a SIP call's recording (media/recorder.ts), complete once it exists. */
export const sipRecordingFile = (dir: string, callId: string): string => join(dir, `${callId}.sip.wav`);

export interface RecordingFile { path: string; size: number }

type RenderableCall = Parameters<typeof renderSandboxSamples>[0] & Pick<CallRow, 'id'>;

export class RecordingStore {
  private readonly inFlight = new Map<string, Promise<RecordingFile>>();
  /** How many files this process has rendered (each also logs "recording rendered"). */
  rendered = 0;

  constructor(readonly dir: string, private readonly log?: Logger) {}

  /** The call's recording file: a sandbox call's is rendered on first use; a SIP call's is what the media process
   *  wrote (null until it finished writing, a moment after the call ended). */
  async file(call: RenderableCall): Promise<RecordingFile | null> {
    if (call.carrier === 'sip') {
      const path = sipRecordingFile(this.dir, call.id);
      const st = await stat(path).catch(() => null);
      return st ? { path, size: st.size } : null;
    }
    const path = join(this.dir, `${call.id}.${RENDER_VERSION}.wav`);
    const size = MULAW_WAV_HEADER_BYTES + sandboxSampleCount(call);
    const pending = this.inFlight.get(path);
    if (pending) return pending;
    const p = this.ensure(call, path, size).finally(() => this.inFlight.delete(path));
    this.inFlight.set(path, p);
    return p;
  }

  private async ensure(call: RenderableCall, path: string, size: number): Promise<RecordingFile> {
    const existing = await stat(path).catch(() => null);
    if (existing?.size === size) return { path, size };
    await mkdir(this.dir, { recursive: true });
    const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    const started = performance.now();
    try {
      const fh = await open(tmp, 'wx');
      try {
        const total = sandboxSampleCount(call);
        await fh.write(mulawWavHeader(total));
        for (let from = 0; from < total; from += CHUNK_SAMPLES) {
          await fh.write(renderSandboxSamples(call, from, Math.min(total, from + CHUNK_SAMPLES)));
        }
      } finally {
        await fh.close();
      }
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    this.rendered++;
    this.log?.info({ call_id: call.id, bytes: size, ms: Math.round(performance.now() - started) }, 'recording rendered');
    return { path, size };
  }
}

const stores = new Map<string, RecordingStore>();

/** One store per directory and process. */
export function recordingStore(dir: string, log?: Logger): RecordingStore {
  let s = stores.get(dir);
  if (!s) stores.set(dir, (s = new RecordingStore(dir, log)));
  return s;
}
