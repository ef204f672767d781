// Phone: a softphone in the console. Pick a caller ID (the organization's ACTIVE numbers), type or paste a number or
// use the dial pad, call, mute, hang up; a call timer, the live state and live quality from the SDK's getStats().
// The ticket is minted through the session (POST /v1/webrtc-token: cookie + X-CSRF-Token) and the call runs in the
// SDK's Softphone (sdk/softphone.ts), loaded on demand: the rest of the console never downloads mediasoup-client.
// Incoming calls: while the page is open it listens (the SDK's IncomingCalls) for calls to the organization's active
// numbers whose inbound setting is `softphone`, with client tokens it mints through the session (POST
// /v1/client-tokens); a ringing call shows a panel (caller, number called, Accept, Decline) announced by a live
// region; Accept turns it into the same in-call view as a dialed call. Another tab that did not accept stops ringing.
// On the sandbox carrier (the session's `carrier`), roles with calls:write get "Simulate incoming call": a form (the
// number called, the caller) that posts POST /v1/sandbox/calls/inbound {ring: true}; the call then rings here (and in
// every tab listening for the number) like a call from a SIP trunk.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { IncomingCall, IncomingCalls } from '../../../sdk/incoming.ts';
import type { AudioStats, CallState, EndedDetail, Softphone } from '../../../sdk/softphone.ts';
import { api, messageOf, type Session } from '../api/client.ts';
import { ErrorLine, Loading } from '../components.tsx';
import { BASE, Link, PageTitle } from '../router.tsx';

type PhoneNumber = { phone_number: string; name: string; status: string; inbound?: string };

/** The client token's bound: at most 20 numbers to listen for. */
const LISTEN_MAX = 20;

const E164 = /^\+[1-9]\d{6,14}$/;
const PAD = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '+', '0', '#'] as const;

/** What a person typed or pasted, without the spaces, dashes, dots and brackets people write numbers with. */
export const cleanNumber = (s: string) => s.replace(/[\s().\-\u00a0]/g, '');

/** A signaling URL naming an any-address host (HOST=0.0.0.0) means "this host": use the page's host name. */
function reachable(url: string): string {
  const u = new URL(url);
  if (u.hostname === '0.0.0.0' || u.hostname === '[::]' || u.hostname === '::') u.hostname = location.hostname;
  return u.toString();
}

/** The microphone, or a sentence saying why not (asked before the call is placed: no call without audio). */
async function openMicrophone(): Promise<MediaStreamTrack | string> {
  if (!navigator.mediaDevices?.getUserMedia) {
    return 'This browser cannot use a microphone on this page: open the console over https (or on localhost).';
  }
  try {
    const s = await navigator.mediaDevices.getUserMedia({ audio: true, video: false });
    return s.getAudioTracks()[0] ?? 'No microphone was found: connect one and try again.';
  } catch (e) {
    const name = (e as DOMException).name;
    if (name === 'NotAllowedError' || name === 'SecurityError') {
      return 'Microphone access is blocked: allow the microphone for this site in the browser\'s address bar, then call again.';
    }
    if (name === 'NotFoundError' || name === 'OverconstrainedError') return 'No microphone was found: connect one and try again.';
    if (name === 'NotReadableError') return 'The microphone is in use by another application or could not be started.';
    return `The microphone could not be opened (${name || String(e)}).`;
  }
}

const two = (n: number) => String(n).padStart(2, '0');
const clock = (s: number) => (s >= 3600 ? `${Math.floor(s / 3600)}:${two(Math.floor(s / 60) % 60)}:${two(s % 60)}` : `${two(Math.floor(s / 60))}:${two(s % 60)}`);
const ms = (seconds: number | null) => (seconds === null ? '—' : `${Math.round(seconds * 1000)} ms`);

function endedLine(e: EndedDetail): string {
  if (e.error) return `Ended: ${e.error.message} (${e.error.code})`;
  const why = [e.callOutcome, e.failureCode ?? e.disconnectionReason].filter(Boolean).join(', ');
  return `Ended: ${e.status ?? 'call over'}${why ? ` (${why})` : ''}`;
}

const STATE_TEXT: Record<CallState, string> = {
  idle: 'Ready', connecting: 'Connecting…', ringing: 'Ringing…', answered: 'Answered', ended: 'Ended',
};

export function PhonePage({ session }: { session: Session }) {
  const [numbers, setNumbers] = useState<PhoneNumber[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [toError, setToError] = useState<string | null>(null);
  const [callError, setCallError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [state, setState] = useState<CallState>('idle');
  const [ended, setEnded] = useState<EndedDetail | null>(null);
  const [callId, setCallId] = useState<string | null>(null);
  const [muted, setMuted] = useState(false);
  const [answeredAt, setAnsweredAt] = useState<number | null>(null);
  const [now, setNow] = useState(Date.now());
  const [stats, setStats] = useState<AudioStats | null>(null);
  const [direction, setDirection] = useState<'outbound' | 'inbound'>('outbound');
  const [ringing, setRinging] = useState<IncomingCall[]>([]);
  const [listeningTo, setListeningTo] = useState<string[]>([]);
  const [listenError, setListenError] = useState<string | null>(null);
  const [announce, setAnnounce] = useState('');
  const [simTo, setSimTo] = useState('');
  const [simFrom, setSimFrom] = useState('+12125550187');
  const [simTalk, setSimTalk] = useState('60');
  const [simError, setSimError] = useState<{ field: 'from' | 'talk' | null; message: string } | null>(null);
  const [simBusy, setSimBusy] = useState(false);
  const [simNotice, setSimNotice] = useState<string | null>(null);
  const listener = useRef<IncomingCalls | null>(null);
  const phone = useRef<Softphone | null>(null);
  const mic = useRef<MediaStreamTrack | null>(null);
  const audio = useRef<HTMLAudioElement>(null);
  const input = useRef<HTMLInputElement>(null);

  const load = async () => {
    setLoadError(null);
    setNumbers(null);
    try {
      const { data, error, response } = await api.GET('/v1/phone-numbers', { params: { query: { limit: 100 } } });
      if (!data) return setLoadError(messageOf(error, response));
      const active = data.data.filter((n) => n.status === 'ACTIVE');
      setNumbers(active);
      setFrom((f) => (active.some((n) => n.phone_number === f) ? f : active[0]?.phone_number ?? ''));
      setSimTo((f) => (active.some((n) => n.phone_number === f) ? f : active[0]?.phone_number ?? ''));
    } catch {
      setLoadError('The server could not be reached.');
    }
  };
  useEffect(() => { void load(); }, []);

  // Leaving the page ends the call (the server sees the socket close), frees the microphone and stops listening.
  useEffect(() => () => { phone.current?.leave(); mic.current?.stop(); listener.current?.stop(); }, []);

  // Listening for incoming calls to the numbers set to ring softphones (a role without voice:webrtc does not listen).
  const ringable = (numbers ?? []).filter((n) => n.inbound === undefined || n.inbound === 'softphone').map((n) => n.phone_number).slice(0, LISTEN_MAX);
  const canListen = session.scopes.includes('voice:webrtc') && session.scopes.includes('tokens:mint');
  const listenKey = canListen ? ringable.join(',') : '';
  useEffect(() => {
    if (!listenKey) return;
    let gone = false;
    let l: IncomingCalls | null = null;
    const mint = async () => {
      const { data, error, response } = await api.POST('/v1/client-tokens', { body: { from_numbers: listenKey.split(','), ttl_seconds: 3600 } });
      if (!data) throw new Error(messageOf(error, response));
      return data.data.token;
    };
    void (async () => {
      const { IncomingCalls } = await import('../../../sdk/incoming.ts');
      if (gone) return;
      l = new IncomingCalls({ url: reachable(session.softphone_url), token: mint });
      listener.current = l;
      const sync = () => setRinging(l!.ringing);
      l.addEventListener('listening', (ev) => { setListeningTo((ev as CustomEvent<{ numbers: string[] }>).detail.numbers); setListenError(null); });
      l.addEventListener('incoming', (ev) => {
        const c = (ev as CustomEvent<IncomingCall>).detail;
        setAnnounce(`Incoming call from ${c.from} to ${c.to}`);
        sync();
      });
      l.addEventListener('stopped', (ev) => {
        const { reason } = (ev as CustomEvent<{ callId: string; reason: string }>).detail;
        if (reason === 'answered_elsewhere') setAnnounce('The incoming call was answered elsewhere');
        else if (reason === 'ended') setAnnounce('The incoming call stopped ringing');
        sync();
      });
      l.addEventListener('closed', () => { setListeningTo([]); sync(); });
      l.addEventListener('error', (ev) => setListenError((ev as CustomEvent<{ message: string }>).detail.message));
      l.start().catch((e: Error) => setListenError(e.message));
    })();
    return () => { gone = true; l?.stop(); if (listener.current === l) listener.current = null; setRinging([]); setListeningTo([]); };
  }, [listenKey, session.softphone_url]);

  const live = state === 'connecting' || state === 'ringing' || state === 'answered';

  // While the call is up: the timer ticks and the quality figures refresh every second.
  useEffect(() => {
    if (!live) return;
    const tick = setInterval(() => {
      setNow(Date.now());
      phone.current?.stats().then(setStats, () => undefined);
    }, 1000);
    return () => clearInterval(tick);
  }, [live]);

  const press = (key: string) => {
    setTo((v) => v + key);
    setToError(null);
    input.current?.focus();
  };

  const call = async (e: Event) => {
    e.preventDefault();
    const number = cleanNumber(to);
    setTo(number);
    setCallError(null);
    if (!E164.test(number)) {
      setToError('Enter the number in international (E.164) form: a + then the country code and number, digits only, e.g. +14155550123.');
      input.current?.focus();
      return;
    }
    setToError(null);
    setBusy(true);
    setEnded(null);
    setStats(null);
    setAnsweredAt(null);
    setCallId(null);
    try {
      const track = await openMicrophone();
      if (typeof track === 'string') return setCallError(track);
      mic.current = track;
      track.enabled = !muted;
      let ticket;
      try {
        const { data, error, response } = await api.POST('/v1/webrtc-token', { body: { from_number: from, to_number: number } });
        if (!data) {
          track.stop();
          return setCallError(messageOf(error, response));
        }
        ticket = data.data;
      } catch {
        track.stop();
        return setCallError('The server could not be reached.');
      }
      setCallId(ticket.call_id);
      setDirection('outbound');
      const { Softphone } = await import('../../../sdk/softphone.ts');
      const p = new Softphone({ url: reachable(session.softphone_url), token: ticket.token, audio: audio.current ?? undefined, microphone: track });
      follow(p, track);
      await p.start();
    } finally {
      setBusy(false);
    }
  };

  /** The page's view follows a call's Softphone (dialed or accepted). */
  const follow = (p: Softphone, track: MediaStreamTrack) => {
    phone.current = p;
    p.setMuted(muted);
    setState(p.state);
    p.addEventListener('state', (ev) => {
      const s = (ev as CustomEvent<{ state: CallState }>).detail.state;
      setState(s);
      if (s === 'answered') setAnsweredAt(Date.now());
    });
    p.addEventListener('ended', (ev) => {
      setEnded((ev as CustomEvent<EndedDetail>).detail);
      track.stop();
      mic.current = null;
    });
  };

  const acceptCall = async (c: IncomingCall) => {
    setCallError(null);
    setBusy(true);
    try {
      const track = await openMicrophone();
      if (typeof track === 'string') return setCallError(track);
      mic.current = track;
      track.enabled = !muted;
      setEnded(null);
      setStats(null);
      setAnsweredAt(null);
      setCallId(c.callId);
      setDirection('inbound');
      setTo(c.from);
      let p: Softphone;
      try {
        p = c.accept({ audio: audio.current ?? undefined, microphone: track });
      } catch (e) {
        track.stop();
        mic.current = null;
        setRinging(listener.current?.ringing ?? []);
        return setCallError(`The call could not be answered: ${(e as Error).message}.`);
      }
      setRinging([]);
      setAnnounce('');
      follow(p, track);
    } finally {
      setBusy(false);
    }
  };
  const declineCall = (c: IncomingCall) => { c.decline(); setAnnounce(''); };

  // The sandbox's inbound simulation (sandbox carrier, calls:write): the call rings the listening tabs.
  const canSimulate = session.carrier === 'sandbox' && session.scopes.includes('calls:write');
  const simulate = async (e: Event) => {
    e.preventDefault();
    const caller = cleanNumber(simFrom);
    setSimFrom(caller);
    setSimNotice(null);
    if (!E164.test(caller)) {
      setSimError({ field: 'from', message: 'Enter the caller in international (E.164) form, e.g. +12125550187.' });
      return;
    }
    const talk = Number(simTalk);
    if (!Number.isInteger(talk) || talk < 1 || talk > 3600) {
      setSimError({ field: 'talk', message: 'The talk time is a whole number of seconds from 1 to 3600.' });
      return;
    }
    setSimError(null);
    setSimBusy(true);
    try {
      const { data, error, response } = await api.POST('/v1/sandbox/calls/inbound', { body: { from_number: caller, to_number: simTo, ring: true, talk_seconds: talk } });
      if (!data) return setSimError({ field: null, message: messageOf(error, response) });
      setSimNotice(`Calling ${simTo} from ${caller}: it rings the tabs listening for ${simTo}.`);
    } catch {
      setSimError({ field: null, message: 'The server could not be reached.' });
    } finally {
      setSimBusy(false);
    }
  };

  const hangUp = () => { void phone.current?.hangup(); };
  const toggleMute = () => {
    const m = !muted;
    setMuted(m);
    phone.current?.setMuted(m);
    if (!phone.current && mic.current) mic.current.enabled = !m;
  };

  // `now` stops moving when the call ends (the interval stops), so the timer stays at the call's length.
  const seconds = answeredAt ? Math.max(0, Math.floor((now - answeredAt) / 1000)) : 0;

  return (
    <>
      <PageTitle title="Phone">Phone</PageTitle>
      {loadError && <ErrorLine message={`The numbers could not be loaded: ${loadError}`} retry={() => void load()} />}
      {!loadError && numbers === null && <Loading what="your numbers" />}
      {numbers && numbers.length === 0 && (
        <div class="card">
          <h2>No number to call from yet</h2>
          <p>Calls go out from one of your organization's active numbers. Buy one with <code>POST /v1/phone-numbers</code>
            (or <code>npm run admin</code>), or ask an owner or admin of your organization to buy or import one; it
            appears here once it is ACTIVE.</p>
          <button type="button" class="secondary" onClick={() => void load()}>Check again</button>
        </div>
      )}
      <div role="status" aria-live="assertive" class="visually-hidden">{announce}</div>
      {ringing.length > 0 && (
        <section class="card incoming" aria-labelledby="incoming-title">
          <h2 id="incoming-title">Incoming call</h2>
          <ul class="incoming-calls">
            {ringing.map((c) => (
              <li key={c.callId} aria-label={`Call from ${c.from}`}>
                <dl class="summary">
                  <dt>Caller</dt><dd class="mono">{c.from}</dd>
                  <dt>Number called</dt><dd class="mono">{c.to}</dd>
                </dl>
                <div class="row actions">
                  <button type="button" disabled={live || busy} onClick={() => void acceptCall(c)}>Accept</button>
                  <button type="button" class="secondary" onClick={() => declineCall(c)}>Decline</button>
                </div>
              </li>
            ))}
          </ul>
        </section>
      )}
      {numbers && numbers.length > 0 && (
        <div class="phone">
          <form onSubmit={(e) => void call(e)} class="dialer" aria-label="Place a call" noValidate>
            <div class="field">
              <label for="phone-from">Caller ID</label>
              <select id="phone-from" value={from} disabled={live || busy} onChange={(e) => setFrom(e.currentTarget.value)}>
                {numbers.map((n) => <option key={n.phone_number} value={n.phone_number}>{n.phone_number}{n.name ? ` (${n.name})` : ''}</option>)}
              </select>
            </div>
            <div class="field">
              <label for="phone-to">Number to call</label>
              <input id="phone-to" ref={input} type="tel" inputMode="tel" autoComplete="tel" class="mono" value={to} disabled={live || busy}
                aria-invalid={toError ? 'true' : undefined} aria-describedby={toError ? 'phone-to-error' : 'phone-to-hint'}
                placeholder="+14155550123"
                onInput={(e) => { setTo(e.currentTarget.value); setToError(null); }} />
              <p id="phone-to-hint" class="hint">International form, e.g. +14155550123. Paste works; spaces and dashes are dropped.</p>
              {toError && <p id="phone-to-error" role="alert" class="error">{toError}</p>}
            </div>
            <div class="dialpad" role="group" aria-label="Dial pad">
              {PAD.map((k) => (
                <button key={k} type="button" class="secondary" disabled={live || busy} aria-label={k === '+' ? 'Plus' : k === '#' ? 'Hash' : k} onClick={() => press(k)}>{k}</button>
              ))}
              <button type="button" class="secondary" disabled={live || busy || !to} aria-label="Delete last digit" onClick={() => setTo((v) => v.slice(0, -1))}>⌫</button>
            </div>
            <div class="row actions">
              {!live && <button type="submit" disabled={busy || !from}>{busy ? 'Calling…' : 'Call'}</button>}
              {live && <button type="button" class="danger" onClick={hangUp}>Hang up</button>}
              <button type="button" class="secondary" aria-pressed={muted ? 'true' : 'false'} onClick={toggleMute}>{muted ? 'Unmute' : 'Mute'}</button>
            </div>
            {callError && <p role="alert" class="error">{callError}</p>}
            <p class="hint" aria-label="Incoming calls">
              {!canListen ? 'Your role cannot take calls.'
                : listeningTo.length ? `Incoming calls to ${listeningTo.join(', ')} ring here.`
                  : ringable.length ? 'Connecting to ring incoming calls…'
                    : 'No number is set to ring the browser (Numbers: inbound calls: softphone).'}
            </p>
            {listenError && <p class="error">Incoming calls: {listenError}</p>}
          </form>

          <section class="card" aria-labelledby="phone-call-title">
            <h2 id="phone-call-title">Call</h2>
            <p role="status" class="call-state">{ended ? endedLine(ended) : STATE_TEXT[state]}</p>
            {callId && direction === 'inbound' && <p>Incoming call from <span class="mono">{to}</span></p>}
            <p>Call time: <span role="timer" aria-label="Call time">{clock(seconds)}</span></p>
            {callId && (state === 'ended' || ended) && <p><Link href={`${BASE}/calls/${callId}`}>View this call</Link></p>}
            <h3>Quality</h3>
            <dl class="summary" aria-label="Call quality">
              <dt>Packets sent</dt><dd data-stat="sent">{stats?.packetsSent ?? 0}</dd>
              <dt>Packets received</dt><dd data-stat="received">{stats?.packetsReceived ?? 0}</dd>
              <dt>Loss</dt><dd data-stat="loss">{lossText(stats)}</dd>
              <dt>Jitter</dt><dd data-stat="jitter">{ms(stats?.jitter ?? null)}</dd>
              <dt>Round trip</dt><dd data-stat="rtt">{ms(stats?.roundTripTime ?? null)}</dd>
            </dl>
            <audio ref={audio} autoPlay />
          </section>
        </div>
      )}
      {numbers && numbers.length > 0 && canSimulate && (
        <form onSubmit={(e) => void simulate(e)} class="card simulate" aria-labelledby="simulate-title" noValidate>
          <h2 id="simulate-title">Simulate incoming call</h2>
          <p class="hint">Sandbox carrier: a pretend caller dials one of your numbers and it rings here like a real call.</p>
          <div class="field">
            <label for="simulate-to">Number to ring</label>
            <select id="simulate-to" value={simTo} disabled={simBusy} onChange={(e) => setSimTo(e.currentTarget.value)}>
              {numbers.map((n) => <option key={n.phone_number} value={n.phone_number}>{n.phone_number}{n.name ? ` (${n.name})` : ''}</option>)}
            </select>
          </div>
          <div class="field">
            <label for="simulate-from">Caller number</label>
            <input id="simulate-from" type="tel" inputMode="tel" class="mono" value={simFrom} disabled={simBusy}
              aria-invalid={simError?.field === 'from' ? 'true' : undefined} aria-describedby={simError?.field === 'from' ? 'simulate-error' : 'simulate-hint'}
              onInput={(e) => { setSimFrom(e.currentTarget.value); setSimError(null); }} />
            <p id="simulate-hint" class="hint">Any number in international form: the caller the call shows.</p>
          </div>
          <div class="field">
            <label for="simulate-talk">Talk time (seconds)</label>
            <input id="simulate-talk" type="number" min={1} max={3600} step={1} value={simTalk} disabled={simBusy}
              aria-invalid={simError?.field === 'talk' ? 'true' : undefined} aria-describedby={simError?.field === 'talk' ? 'simulate-error' : 'simulate-talk-hint'} onInput={(e) => { setSimTalk(e.currentTarget.value); setSimError(null); }} />
            <p id="simulate-talk-hint" class="hint">Once you accept, the caller hangs up after this long (sandbox seconds), unless you hang up first.</p>
          </div>
          {simError && <p id="simulate-error" role="alert" class="error">{simError.message}</p>}
          <div class="row actions">
            <button type="submit" class="secondary" disabled={simBusy || !simTo}>{simBusy ? 'Calling…' : 'Simulate incoming call'}</button>
          </div>
          {simNotice && <p class="hint">{simNotice}</p>}
        </form>
      )}
    </>
  );
}

function lossText(s: AudioStats | null): string {
  if (!s || s.packetsReceived + s.packetsLost === 0) return '—';
  const pct = (100 * s.packetsLost) / (s.packetsReceived + s.packetsLost);
  return `${pct.toFixed(1)}% (${s.packetsLost} lost)`;
}
