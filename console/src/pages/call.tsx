// One call: its summary, the timeline of its states with times (from the record's timestamps and its legs'), the
// legs, cost, the recording when there is one, and the transcript. Live: each change of the call on the call stream
// (GET /v1/calls/stream) reads it again, so its status, timeline and legs move without a reload. With webhooks:read,
// the webhook deliveries the call caused: each call-event subscription's attempts filtered by call_id.
import { useEffect, useState } from 'preact/hooks';
import { api, messageOf, type Call, type DeliveryAttempt, type Session, type Subscription, type Transcript } from '../api/client.ts';
import { ErrorLine, Loading, TableWrap } from '../components.tsx';
import { LiveIndicator, useCallStream } from '../live.tsx';
import { dateTime, money, seconds } from '../format.ts';
import { BASE, Link, PageTitle } from '../router.tsx';

interface Moment { at: string; what: string }

/** The call's states in time order: accepted (QUEUED), each leg dialed / answered / ended, answered, ended. */
export function timeline(c: Call): Moment[] {
  const m: Moment[] = [{ at: c.created_at, what: 'Accepted (QUEUED)' }];
  for (const l of c.legs) {
    if (l.originated_at) m.push({ at: l.originated_at, what: `Dialing the ${l.role} leg ${l.number} (RINGING)` });
    if (l.answered_at) m.push({ at: l.answered_at, what: `The ${l.role} leg answered` });
    if (l.ended_at) m.push({ at: l.ended_at, what: `The ${l.role} leg ended${l.end_reason ? ` (${l.end_reason})` : ''}` });
  }
  if (c.answered_at) m.push({ at: c.answered_at, what: 'Answered (ANSWERED)' });
  if (c.ended_at) m.push({ at: c.ended_at, what: `Ended: ${c.status}${c.disconnection_reason ? ` (${c.disconnection_reason})` : ''}` });
  return m.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
}

export function CallPage({ session, id }: { session: Session; id: string }) {
  const [call, setCall] = useState<Call | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [transcript, setTranscript] = useState<Transcript | null>(null);
  const [transcriptError, setTranscriptError] = useState<string | null>(null);
  const canTranscript = session.scopes.includes('transcripts:read');

  const load = async () => {
    setError(null);
    try {
      const { data, error: err, response } = await api.GET('/v1/calls/{id}', { params: { path: { id } } });
      if (!data) return setError(response.status === 404 ? 'There is no such call.' : messageOf(err, response));
      setCall(data.data);
      if (canTranscript) {
        const t = await api.GET('/v1/calls/{id}/transcript', { params: { path: { id } } });
        if (t.data) setTranscript(t.data.data);
        else setTranscriptError(messageOf(t.error, t.response));
      }
    } catch {
      setError('The server could not be reached.');
    }
  };
  useEffect(() => { void load(); }, [id]);
  const live = useCallStream((e) => { if (e.call_id === id) void load(); }, () => void load());

  return (
    <>
      <p class="crumbs"><Link href={`${BASE}/calls`}>← All calls</Link></p>
      <PageTitle title="Call">{call ? `Call to ${call.to_number}` : 'Call'}</PageTitle>
      <LiveIndicator {...live} />
      {error ? <ErrorLine message={`The call could not be loaded: ${error}`} retry={() => void load()} />
        : !call ? <Loading what="the call" />
        : (
          <>
            <div class="row">
              <span class={`status s-${call.status.toLowerCase()}`}>{call.status}</span>
              <button type="button" class="secondary" onClick={() => void load()}>Refresh</button>
            </div>
            <section aria-labelledby="summary-heading">
              <h2 id="summary-heading">Summary</h2>
              <dl class="summary">
                <dt>Type</dt><dd>{call.type} ({call.direction})</dd>
                <dt>From</dt><dd>{call.from_number}</dd>
                <dt>To</dt><dd>{call.to_number}</dd>
                {call.connect_number && <><dt>Your phone</dt><dd>{call.connect_number}</dd></>}
                <dt>Outcome</dt><dd>{call.call_outcome ?? '—'}</dd>
                <dt>Duration</dt><dd>{seconds(call.duration_seconds)}</dd>
                <dt>Cost</dt><dd>{money(call.cost_cents)}</dd>
                <dt>Placed by</dt><dd>{call.issued_by_user_id === session.user.id ? 'you' : call.issued_by_user_id ?? '—'}{call.api_key_id ? ' with an API key' : ''}</dd>
                <dt>Call id</dt><dd><code>{call.id}</code></dd>
              </dl>
            </section>
            <section aria-labelledby="timeline-heading">
              <h2 id="timeline-heading">Timeline</h2>
              <ol class="timeline">
                {timeline(call).map((m, i) => (
                  <li key={i}><time dateTime={m.at}>{dateTime(m.at)}</time> <span>{m.what}</span></li>
                ))}
              </ol>
            </section>
            <section aria-labelledby="legs-heading">
              <h2 id="legs-heading">Legs</h2>
              {call.legs.length === 0 ? <p class="empty">No leg was dialed.</p> : (
                <TableWrap label="Legs">
                  <table aria-label="Legs">
                    <thead><tr><th scope="col">Role</th><th scope="col">Number</th><th scope="col">Status</th><th scope="col">Dialed</th>
                      <th scope="col">Answered</th><th scope="col">Ended</th><th scope="col">End reason</th></tr></thead>
                    <tbody>
                      {call.legs.map((l) => (
                        <tr key={l.role}><th scope="row">{l.role}</th><td>{l.number}</td><td>{l.status}</td><td>{dateTime(l.originated_at)}</td>
                          <td>{dateTime(l.answered_at)}</td><td>{dateTime(l.ended_at)}</td><td>{l.end_reason ?? '—'}</td></tr>
                      ))}
                    </tbody>
                  </table>
                </TableWrap>
              )}
            </section>
            <section aria-labelledby="recording-heading">
              <h2 id="recording-heading">Recording</h2>
              {call.recording_url
                ? <audio controls preload="none" src={call.recording_url} aria-label="Call recording" />
                : <p class="empty">{call.recording_url === undefined ? 'Your role cannot listen to recordings.' : 'This call has no recording.'}</p>}
            </section>
            {session.scopes.includes('webhooks:read') && <CallDeliveries callId={call.id} refresh={call.status} />}
            <section aria-labelledby="transcript-heading">
              <h2 id="transcript-heading">Transcript</h2>
              {!canTranscript ? <p class="empty">Your role cannot read transcripts.</p>
                : transcriptError ? <ErrorLine message={`The transcript could not be loaded: ${transcriptError}`} />
                : !transcript ? <Loading what="the transcript" />
                : transcript.status !== 'available' ? <p class="empty">No transcript ({transcript.reason?.replace(/_/g, ' ') ?? transcript.status}).</p>
                : (
                  <ol class="transcript">
                    {transcript.turns.map((t, i) => (
                      <li key={i}><span class="speaker">{t.speaker}</span> <span class="offset">{seconds(Math.round(t.offset_seconds))}</span> <span>{t.text}</span></li>
                    ))}
                  </ol>
                )}
            </section>
          </>
        )}
    </>
  );
}

/** The subscription event types whose events are a call's (their data.id is the call id). */
const CALL_EVENT_TYPES = new Set(['new_call', 'call_completed', 'call_no_answer', 'call_voicemail', 'call_busy', 'call_failed', 'phone_call.ended']);

/** Every delivery attempt of the call's events, to every call-event subscription (newest first). */
function CallDeliveries({ callId, refresh }: { callId: string; refresh: string }) {
  const [rows, setRows] = useState<{ sub: Subscription; a: DeliveryAttempt }[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = async () => {
    setError(null);
    try {
      const subs = await api.GET('/api/v1/webhook_subscriptions', { params: { query: { limit: 100 } } });
      if (!subs.data) return setError(messageOf(subs.error, subs.response));
      const mine = subs.data.data.filter((s) => CALL_EVENT_TYPES.has(s.event_type));
      const lists = await Promise.all(mine.map(async (sub) => {
        const r = await api.GET('/api/v1/webhook_subscriptions/{id}/deliveries', { params: { path: { id: sub.id }, query: { call_id: callId, limit: 100 } } });
        if (!r.data) throw new Error(messageOf(r.error, r.response));
        return r.data.data.map((a) => ({ sub, a }));
      }));
      setRows(lists.flat().sort((x, y) => Date.parse(y.a.attempted_at) - Date.parse(x.a.attempted_at)));
    } catch (e) {
      setError(e instanceof Error && e.message ? e.message : 'The server could not be reached.');
    }
  };
  useEffect(() => { void load(); }, [callId, refresh]);
  return (
    <section aria-labelledby="call-deliveries-heading">
      <div class="heading-row">
        <h2 id="call-deliveries-heading">Webhook deliveries</h2>
        <button type="button" class="secondary small" onClick={() => void load()}>Refresh webhook deliveries</button>
      </div>
      {error ? <ErrorLine message={`The webhook deliveries could not be loaded: ${error}`} retry={() => void load()} />
        : !rows ? <Loading what="webhook deliveries" />
        : rows.length === 0 ? <p class="empty">No webhook delivery for this call. Subscribe a URL to call events (new_call, call_completed, …) on the <Link href="/webhooks">Webhooks</Link> page.</p>
        : (
          <TableWrap label="Webhook deliveries of this call">
            <table aria-label="Webhook deliveries of this call">
              <thead>
                <tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">URL</th><th scope="col">Attempt</th>
                  <th scope="col">Outcome</th><th scope="col">Status code</th><th scope="col">Latency</th><th scope="col">Error</th></tr>
              </thead>
              <tbody>
                {rows.map(({ sub, a }) => (
                  <tr key={a.id}>
                    <td>{dateTime(a.attempted_at)}</td>
                    <td><code>{a.event_type}</code></td>
                    <td class="url">{sub.webhook_url}</td>
                    <td>{a.attempt}</td>
                    <td>{a.outcome}</td>
                    <td>{a.response_status ?? '—'}</td>
                    <td>{a.latency_ms} ms</td>
                    <td>{a.error ?? '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
    </section>
  );
}
