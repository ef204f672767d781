// Files sent from disk (recordings): single byte ranges (RFC 9110 section 14), a per-gateway limit on streams in
// flight, and bounded memory per stream: one 64 KiB piece is read, written with uWS's tryEnd, and the next is read
// only once uWS has taken all of it (onWritable), so a slow client holds back the reading instead of piling up
// memory.
import { open } from 'node:fs/promises';
import type uWS from 'uWebSockets.js';
import { ApiError } from '../../shared/http/error-status.ts';
import type { FileBody, GatewayDeps } from './types.ts';

export const FILE_CHUNK_BYTES = 64 * 1024;


/** A file response decided by the pipeline: what to send, and the stream slot to give back when it ends. */
export interface FilePlan {
  status: 200 | 206;
  headers: Record<string, string>;
  path: string;
  /** First and last byte sent (inclusive). */
  start: number;
  end: number;
  release(): void;
}

/** Counts the file streams in flight on this gateway. */
export class StreamSlots {
  private active = 0;
  constructor(readonly max: number) {}
  get inUse(): number { return this.active; }

  tryAcquire(): (() => void) | null {
    if (this.active >= this.max) return null;
    this.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
    };
  }
}

/** One byte range of a file of `size` bytes: null when the header is absent or is to be ignored (not bytes, not one
 *  well-formed range: RFC 9110 lets a server ignore Range and send the whole file), 'unsatisfiable' when it starts
 *  past the end. */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  if (header === undefined) return null;
  const m = /^bytes=(\d*)-(\d*)$/i.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    // A suffix: the last N bytes.
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const last = m[2] === '' ? Infinity : Number(m[2]);
  if (!Number.isSafeInteger(start) || last < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end: Math.min(last, size - 1) };
}

/** Decides status and headers of a file response (200 whole, 206 one range, 416 past the end) and takes a stream
 *  slot (503 with Retry-After when the gateway streams its maximum already). */
export function planFile(file: FileBody, rangeHeader: string | undefined, slots: StreamSlots): FilePlan {
  const range = parseRange(rangeHeader, file.size);
  if (range === 'unsatisfiable') {
    throw new ApiError('validation_error', `The range is outside the ${file.size} bytes of this resource.`, {
      status: 416, fields: { Range: `must start before byte ${file.size}` }, headers: { 'Content-Range': `bytes */${file.size}` },
    });
  }
  const release = slots.tryAcquire();
  if (!release) {
    throw new ApiError('service_unavailable', `This gateway is already streaming ${slots.max} files; retry shortly.`, {
      headers: { 'Retry-After': '1' }, resolutionHint: 'Retry after the number of seconds in Retry-After.',
    });
  }
  const headers: Record<string, string> = { 'Accept-Ranges': 'bytes' };
  if (!range) return { status: 200, headers, path: file.path, start: 0, end: file.size - 1, release };
  headers['Content-Range'] = `bytes ${range.start}-${range.end}/${file.size}`;
  return { status: 206, headers, path: file.path, start: range.start, end: range.end, release };
}

/** The response side of a stream: whether the client went away, and a hook called when it does. */
export interface StreamTarget {
  readonly res: uWS.HttpResponse;
  readonly aborted: boolean;
  onAbort: (() => void) | null;
}

/** Sends plan's bytes after the status line and headers (already written). uWS adds Content-Length from tryEnd's
 *  total. Always gives the slot back. */
export async function pumpFile(target: StreamTarget, plan: FilePlan, log: GatewayDeps['log']): Promise<void> {
  const { res } = target;
  const total = plan.end - plan.start + 1;
  let wake: (() => void) | null = null;
  target.onAbort = () => wake?.();
  let fh: Awaited<ReturnType<typeof open>> | null = null;
  try {
    fh = await open(plan.path, 'r');
    const buf = Buffer.allocUnsafe(Math.min(FILE_CHUNK_BYTES, total));
    for (let sent = 0; sent < total && !target.aborted;) {
      const n = Math.min(FILE_CHUNK_BYTES, total - sent);
      const { bytesRead } = await fh.read(buf, 0, n, plan.start + sent);
      if (bytesRead !== n) throw new Error(`${plan.path} is shorter than expected`);
      if (target.aborted) break;
      const chunk = buf.subarray(0, n);
      const base = res.getWriteOffset();
      let ok = false;
      let done = false;
      res.cork(() => { [ok, done] = res.tryEnd(chunk, total); });
      if (!ok && !done) {
        // uWS took only part of the piece: the rest goes when the socket drains (or never, if the client leaves).
        await new Promise<void>((resolve) => {
          wake = resolve;
          res.onWritable((offset) => {
            const [more, finished] = res.tryEnd(chunk.subarray(offset - base), total);
            if (more || finished) resolve();
            return more;
          });
        });
        wake = null;
      }
      sent += n;
    }
  } catch (err) {
    log.error({ err, path: plan.path }, 'file stream failed');
    // The status and length are out already: cutting the connection is the only honest end.
    if (!target.aborted) res.cork(() => res.close());
  } finally {
    target.onAbort = null;
    plan.release();
    await fh?.close().catch(() => undefined);
  }
}
