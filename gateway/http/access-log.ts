import { pino, type Logger } from 'pino';
import { STANDARD_METHODS } from './types.ts';

const INFO = 30;

export interface AccessEntry {
  requestId: string;
  method: string;
  path: string;
  status: number;
  ms: number;
  orgId?: string;
}

/** Lines are held until this many characters are waiting or FLUSH_MS has passed: a write per event-loop turn
 *  still cost ~4% of a busy gateway. On a crash at most FLUSH_MS of access lines are lost. */
const FLUSH_CHARS = 32 * 1024;
const FLUSH_MS = 25;

/** The per-request access log: one JSON line per request in exactly the shape of the logger's own info lines
 *  ({"level":30,"time":...,<bindings>,"req_id",...,"msg":"request"}) and to the same destination. Every request
 *  writes one, so the line is assembled directly and lines go out in batches; through pino's generic path they
 *  cost more than the rest of a cached request. Each line carries its own time, so a batch may land after
 *  other log lines written meanwhile. */
export class AccessLog {
  private readonly stream: { write(s: string): unknown };
  private readonly bindings: string;
  private buffered = '';
  private timer: NodeJS.Timeout | null = null;
  private isoMs = -1;
  private iso = '';

  constructor(private readonly log: Logger) {
    const l = log as unknown as Record<symbol, unknown>;
    this.stream = l[pino.symbols.streamSym] as { write(s: string): unknown };
    this.bindings = (l[pino.symbols.chindingsSym] as string | undefined) ?? '';
  }

  write(e: AccessEntry): void {
    if (this.log.levelVal > INFO) return;
    const now = Date.now();
    if (now !== this.isoMs) { this.isoMs = now; this.iso = new Date(now).toISOString(); }
    const method = STANDARD_METHODS.has(e.method) ? `"${e.method}"` : JSON.stringify(e.method);
    const org = e.orgId ? `,"org":"${e.orgId}"` : '';
    this.buffered += `{"level":30,"time":"${this.iso}"${this.bindings},"req_id":"${e.requestId}","method":${method},` +
      `"path":${JSON.stringify(e.path)},"status":${e.status},"ms":${e.ms}${org},"msg":"request"}\n`;
    if (this.buffered.length >= FLUSH_CHARS) this.flush();
    else if (this.timer === null) {
      this.timer = setTimeout(() => this.flush(), FLUSH_MS);
      this.timer.unref();
    }
  }

  flush(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (!this.buffered) return;
    const out = this.buffered;
    this.buffered = '';
    this.stream.write(out);
  }
}
