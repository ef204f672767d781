// The softphone page's controller (GET /softphone): token field, Start / Hang up, state, progress log, and the
// window.softphone handle automation reads. Query: ?token=<ticket-or-room-token>&autostart=1&signaling=<ws url>.
import { signalingUrlFromToken } from './protocol.ts';
import { Softphone, type AudioStats, type CallState, type EndedDetail, type ProgressDetail, type SoftphoneError } from './softphone.ts';

/** What the page exposes as window.softphone (for people and for browser automation). */
export interface SoftphoneHandle {
  readonly state: CallState;
  readonly callId: string | null;
  /** The error that ended the last call, if one did. */
  readonly error: SoftphoneError | null;
  /** How the last call ended (the server's end report and the error), null until it has. */
  readonly ended: EndedDetail | null;
  /** Dials with the given token (or the one in the field). */
  start(token?: string): Promise<void>;
  hangup(): Promise<void>;
  stats(): Promise<AudioStats>;
}

declare global {
  interface Window { softphone: SoftphoneHandle }
}

export function mountPage(root: HTMLElement): SoftphoneHandle {
  const $ = <T extends HTMLElement>(id: string) => root.querySelector<T>(`#${id}`)!;
  const tokenField = $<HTMLTextAreaElement>('token');
  const startButton = $<HTMLButtonElement>('start');
  const hangupButton = $<HTMLButtonElement>('hangup');
  const stateView = $('state');
  const callIdView = $('call-id');
  const errorView = $('error');
  const log = $('log');
  const audio = $<HTMLAudioElement>('remote');
  const query = new URLSearchParams(location.search);
  let phone: Softphone | null = null;

  const line = (text: string) => {
    const li = document.createElement('li');
    li.textContent = `${new Date().toISOString().slice(11, 23)} ${text}`;
    log.append(li);
    log.scrollTop = log.scrollHeight;
  };
  const render = () => {
    const state = phone?.state ?? 'idle';
    stateView.textContent = state;
    callIdView.textContent = phone?.callId ?? '';
    const busy = state === 'connecting' || state === 'ringing' || state === 'answered';
    startButton.disabled = busy;
    hangupButton.disabled = !busy;
    tokenField.disabled = busy;
  };

  async function start(token = tokenField.value.trim()): Promise<void> {
    if (phone && phone.state !== 'idle' && phone.state !== 'ended') throw new Error('a call is in progress');
    errorView.hidden = true;
    tokenField.value = token;
    if (!token) return showError({ code: 'missing_token', message: 'paste a ticket or room token' });
    const url = query.get('signaling') || signalingUrlFromToken(token) || defaultSignalingUrl();
    if (!url) return showError({ code: 'no_signaling_url', message: 'no signaling URL: pass ?signaling=ws://…' });
    phone = new Softphone({ url, token, audio });
    phone.addEventListener('state', render);
    phone.addEventListener('progress', (e) => line((e as CustomEvent<ProgressDetail>).detail.message));
    phone.addEventListener('error', (e) => showError((e as CustomEvent<SoftphoneError>).detail));
    phone.addEventListener('ended', (e) => {
      const d = (e as CustomEvent<EndedDetail>).detail;
      if (d.durationSeconds !== null) line(`duration ${d.durationSeconds} s`);
      render();
    });
    render();
    await phone.start();
  }

  function showError(err: SoftphoneError) {
    errorView.textContent = `${err.code}: ${err.message}`;
    errorView.hidden = false;
  }

  startButton.addEventListener('click', () => { void start().catch((e) => showError({ code: 'start_failed', message: e.message })); });
  hangupButton.addEventListener('click', () => { void phone?.hangup(); });
  // Leaving the page drops the call rather than leaving the far end talking to nobody: the socket closes (an
  // abandoned setup before the answer, a normal end after it).
  addEventListener('pagehide', () => { phone?.leave(); });

  const handle: SoftphoneHandle = {
    get state() { return phone?.state ?? 'idle'; },
    get callId() { return phone?.callId ?? null; },
    get error() { return phone?.ended?.error ?? null; },
    get ended() { return phone?.ended ?? null; },
    start,
    hangup: async () => { await phone?.hangup(); },
    stats: async () => (phone ? phone.stats() : { packetsSent: 0, packetsReceived: 0, bytesReceived: 0, packetsLost: 0, jitter: null, roundTripTime: null }),
  };

  const token = query.get('token');
  const autostart = query.get('autostart') === '1';
  if (token) {
    tokenField.value = token;
    // A ticket is single-use: drop it from the address bar so a reload does not redial it.
    query.delete('token');
    query.delete('autostart');
    history.replaceState(null, '', `${location.pathname}${query.size ? `?${query}` : ''}${location.hash}`);
  }
  render();
  if (token && autostart) {
    void start(token).catch((e) => showError({ code: 'start_failed', message: e.message }));
  }
  return handle;
}

/** The gateway's default (meta openline-signaling), with "{host}" replaced by this page's host name. */
function defaultSignalingUrl(): string | null {
  const content = document.querySelector<HTMLMetaElement>('meta[name="openline-signaling"]')?.content ?? '';
  if (!/^wss?:\/\//.test(content)) return null;
  return content.replace('{host}', location.hostname);
}
