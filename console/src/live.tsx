// Live call updates: one EventSource on GET /v1/calls/stream per tab (same origin, the session cookie authenticates
// it), shared by the pages that show calls. The stream has no Last-Event-ID resume, so every (re)connection after the first tells the
// page to re-list what it shows; between connections the indicator says the updates are paused.
import { useEffect, useRef, useState } from 'preact/hooks';

/** The `data` of an `event: call` message (the route's description in OpenAPI lists these fields). */
export interface CallEvent {
  call_id: string;
  status: string;
  type: string;
  direction: string;
  from_number: string;
  to_number: string;
  connect_number: string | null;
  call_outcome: string | null;
  failure_code: string | null;
  failure_category: string | null;
  disconnection_reason: string | null;
  duration_seconds: number | null;
  issued_by_user_id: string | null;
  created_at: string;
  answered_at: string | null;
  ended_at: string | null;
  updated_at: string;
}

export type LiveState = 'connecting' | 'live' | 'paused';

const STREAM_URL = '/v1/calls/stream';
/** After the browser gave up (the server refused, e.g. too many streams or signed out): our own retry, growing. */
const RETRY_MS = [2000, 5000, 10_000, 30_000];

const RANK: Record<string, number> = { QUEUED: 0, RINGING: 1, ANSWERED: 2 };
/** Statuses only move forward (QUEUED, RINGING, ANSWERED, then one terminal status). */
export const statusRank = (s: string) => RANK[s] ?? 3;
export const isTerminal = (s: string) => statusRank(s) === 3;

interface Listener { onEvent(e: CallEvent): void; onResync(): void; onState(s: LiveState): void }

/** The tab's one stream, shared by the pages that show calls: opened by the first of them and kept while signed in
 *  (going from page to page keeps it; a message no page listens to is dropped), ended on sign-out. */
class CallStream {
  private readonly listeners = new Set<Listener>();
  private source: EventSource | null = null;
  private retry: ReturnType<typeof setTimeout> | null = null;
  private attempt = 0;
  private opened = false;
  private stopped = false;
  state: LiveState = 'connecting';

  subscribe(l: Listener): () => void {
    this.listeners.add(l);
    if (this.stopped) {
      this.stopped = false;
      this.source?.close();
      this.source = null;
    }
    if (!this.source && !this.retry) this.connect();
    l.onState(this.state);
    return () => { this.listeners.delete(l); };
  }

  /** Reconnects at once (the "Reconnect now" button). */
  reconnect(): void {
    this.source?.close();
    this.source = null;
    if (this.retry) { clearTimeout(this.retry); this.retry = null; }
    this.connect();
  }

  private setState(s: LiveState): void {
    this.state = s;
    for (const l of this.listeners) l.onState(s);
  }

  private connect(): void {
    this.retry = null;
    if (this.listeners.size === 0) return;
    this.setState('connecting');
    const source = new EventSource(STREAM_URL, { withCredentials: true });
    this.source = source;
    source.addEventListener('open', () => {
      this.attempt = 0;
      this.setState('live');
      if (this.opened) for (const l of this.listeners) l.onResync();
      this.opened = true;
    });
    source.addEventListener('call', (m) => {
      let e: CallEvent;
      try { e = JSON.parse((m as MessageEvent<string>).data) as CallEvent; } catch { return; }
      for (const l of this.listeners) l.onEvent(e);
    });
    source.addEventListener('error', () => {
      if (this.source !== source) return;
      if (this.stopped) { source.close(); this.source = null; return; }
      this.setState('paused');
      // CONNECTING: the browser reconnects by itself (the stream's retry: field); CLOSED: it gave up (the server
      // refused: too many streams, signed out), so we retry later while a page still wants the stream.
      if (source.readyState === EventSource.CLOSED) {
        this.source = null;
        if (this.listeners.size) this.retry = setTimeout(() => this.connect(), RETRY_MS[Math.min(this.attempt++, RETRY_MS.length - 1)]);
      }
    });
  }

  /** Sign-out: the stream goes (the server ends it too) and is opened again by the next page that shows calls. */
  stop(): void {
    this.stopped = true;
    // An open stream is left to the server, which ends it with the session (closing it here would abort a request
    // in flight); it is closed on its end instead of reconnecting.
    if (this.source && this.source.readyState !== EventSource.OPEN) { this.source.close(); this.source = null; }
    if (this.retry) { clearTimeout(this.retry); this.retry = null; }
    this.opened = false;
    this.state = 'connecting';
  }
}

const stream = new CallStream();

/** Ends the tab's stream (on sign-out). */
export const stopCallStream = () => stream.stop();

/** Follows the call stream while the page is shown: `onEvent` for each call change, `onResync` after a reconnection
 *  (re-list: changes made while disconnected were not sent). */
export function useCallStream(onEvent: (e: CallEvent) => void, onResync: () => void): { state: LiveState; reconnect: () => void } {
  const [state, setState] = useState<LiveState>(stream.state);
  const handlers = useRef({ onEvent, onResync });
  handlers.current = { onEvent, onResync };
  useEffect(() => stream.subscribe({
    onEvent: (e) => handlers.current.onEvent(e),
    onResync: () => handlers.current.onResync(),
    onState: setState,
  }), []);
  return { state, reconnect: () => stream.reconnect() };
}

/** The visible, announced state of the live updates, with a way to reconnect at once when they are paused. */
export function LiveIndicator({ state, reconnect }: { state: LiveState; reconnect: () => void }) {
  const text = state === 'live' ? 'Live: updates as calls progress'
    : state === 'connecting' ? 'Connecting to live updates…'
    : 'Live updates paused: reconnecting';
  return (
    <div class={`live live-${state}`}>
      <span class="dot" aria-hidden="true" />
      <span role="status" aria-live="polite">{text}</span>
      {state === 'paused' && <button type="button" class="secondary small" onClick={reconnect}>Reconnect now</button>}
    </div>
  );
}
