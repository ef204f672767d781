// A softphone test client: a WebSocket (undici's; Node 20 has no global one) that records every frame and the close.
import { WebSocket } from 'undici';
import { eventually } from '../helpers/env.ts';
import type { Proc } from '../helpers/env.ts';

export class Phone {
  readonly frames: any[] = [];
  closed: { code: number; reason: string } | null = null;
  private readonly ws: WebSocket;
  readonly opened: Promise<void>;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.opened = new Promise((resolve, reject) => {
      this.ws.addEventListener('open', () => resolve());
      this.ws.addEventListener('error', (e) => reject(new Error(`websocket error: ${String((e as any).message ?? e)}`)));
    });
    this.ws.addEventListener('message', (ev) => this.frames.push(JSON.parse(String(ev.data))));
    this.ws.addEventListener('close', (ev) => { this.closed = { code: ev.code, reason: ev.reason }; });
  }

  static async connect(url: string) {
    const p = new Phone(url);
    await p.opened;
    return p;
  }

  send(msg: unknown) { this.ws.send(typeof msg === 'string' ? msg : JSON.stringify(msg)); }
  close() { this.ws.close(); }

  /** The first frame of this type (waits for it). */
  frame(type: string, timeoutMs = 20_000) {
    return eventually(async () => this.frames.find((f) => f.type === type), timeoutMs);
  }

  types() { return this.frames.map((f) => f.type); }

  waitClosed(timeoutMs = 20_000) { return eventually(async () => this.closed, timeoutMs); }
}

/** The softphone URL a signaling process logged when it became ready. */
export function softphoneUrl(p: Proc): string {
  const m = /"softphone":"(ws:[^"]+)"/.exec(p.output);
  if (!m) throw new Error(`no softphone URL in the output:\n${p.output}`);
  return m[1];
}

export const httpBase = (wsUrl: string) => wsUrl.replace(/^ws:/, 'http:').replace(/\/v1\/softphone$/, '');
