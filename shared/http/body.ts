// The request body reader of every HTTP stack: the whole body up to a byte limit, from uWS (`res.onData`, whose
// chunks are valid only during the call, so they are copied) or from node:http (via nodeBodySource). A body over
// the limit is drained and dropped, and reported as too big; a uWS request that declares a Content-Length over the
// limit is answered without reading it. The gateway's Exchange registers onAborted before reading: an aborted
// request's answer is never written.
import type { IncomingMessage } from 'node:http';

/** Where a body comes from: uWS's HttpResponse satisfies this as it is. */
export interface BodySource {
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): void;
}

/** The gateway's limit (1 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024;

export type BodyDone = (body: Buffer | null, tooBig: boolean) => void;

/** Reads the whole body; `declaredLength` is the Content-Length header (when it already exceeds the limit, nothing
 *  is read). */
export function readBody(src: BodySource, declaredLength: string | undefined, limit: number, done: BodyDone): void {
  if (Number(declaredLength ?? 0) > limit) return done(null, true);
  const chunks: Buffer[] = [];
  let size = 0;
  let tooBig = false;
  src.onData((chunk, isLast) => {
    if (!tooBig) {
      size += chunk.byteLength;
      if (size > limit) tooBig = true;
      else chunks.push(Buffer.from(chunk.slice(0)));
    }
    if (isLast) done(tooBig ? null : Buffer.concat(chunks), tooBig);
  });
}

/** A node:http request as a BodySource (its chunks are its own, so copying them again is cheap and rare: the
 *  stacks on node:http are internal ones with small bodies). A request that fails midway ends the body as is. */
export function nodeBodySource(req: IncomingMessage): BodySource {
  return {
    onData(handler) {
      let ended = false;
      const end = () => { if (!ended) { ended = true; handler(new ArrayBuffer(0), true); } };
      req.on('data', (c: Buffer) => handler(c.buffer.slice(c.byteOffset, c.byteOffset + c.byteLength) as ArrayBuffer, false));
      req.on('end', end);
      req.on('error', end);
    },
  };
}

/** The body of a node:http request, as a promise (the internal stacks' async body stage). */
export function readNodeBody(req: IncomingMessage, limit: number): Promise<{ body: Buffer | null; tooBig: boolean }> {
  return new Promise((resolve) => readBody(nodeBodySource(req), undefined, limit, (body, tooBig) => resolve({ body, tooBig })));
}
