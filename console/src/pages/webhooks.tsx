// Webhooks: the organization's subscriptions (GET /api/v1/webhook_subscriptions), and with webhooks:write a new one
// per event checked for a URL (the API subscribes one URL to one event type; each subscription has its own signing
// secret, shown once), delete after a confirmation, re-enable a disabled one, send a test event to an active one (POST .../{id}/test). The delivery attempts of a
// subscription (GET .../{id}/deliveries): when, which event, attempt, outcome, the receiver's status code, latency,
// error and the next retry.
import { useEffect, useState } from 'preact/hooks';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../../shared/webhooks/event-types.ts';
import { api, messageOf, type CreatedSubscription, type DeliveryAttempt, type Session, type Subscription } from '../api/client.ts';
import { Confirm, ErrorLine, Loading, TableWrap, useSubmit } from '../components.tsx';
import { dateTime } from '../format.ts';
import { PageTitle } from '../router.tsx';
import { detailOf } from './numbers.tsx';

const PAGE_SIZE = 50;

export function WebhooksPage({ session }: { session: Session }) {
  const canWrite = session.scopes.includes('webhooks:write');
  const [subs, setSubs] = useState<Subscription[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [created, setCreated] = useState<CreatedSubscription[] | null>(null);
  const [deleting, setDeleting] = useState<Subscription | null>(null);
  const [deleteBusy, setDeleteBusy] = useState(false);
  const [shown, setShown] = useState<Subscription | null>(null);
  const [reloads, setReloads] = useState(0);
  const [testing, setTesting] = useState<string | null>(null);

  const load = async (cursor?: string) => {
    setError(null);
    try {
      const { data, error: err, response } = await api.GET('/api/v1/webhook_subscriptions', { params: { query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } } });
      if (!data) return setError(messageOf(err, response));
      setSubs((s) => (cursor ? [...(s ?? []), ...data.data] : data.data));
      setNext(data.meta.cursor ?? null);
    } catch {
      setError('The server could not be reached.');
    }
  };
  useEffect(() => { void load(); }, []);

  const remove = async (s: Subscription) => {
    setDeleteBusy(true);
    const { response, error: err } = await api.DELETE('/api/v1/webhook_subscriptions/{id}', { params: { path: { id: s.id } } })
      .catch(() => ({ response: undefined, error: undefined }));
    setDeleteBusy(false);
    setDeleting(null);
    if (!response?.ok) return setNotice(`Could not delete the subscription of ${s.event_type}: ${messageOf(err, response)}`);
    setNotice(`Deleted the subscription of ${s.webhook_url} to ${s.event_type}.`);
    setSubs((xs) => xs && xs.filter((x) => x.id !== s.id));
    if (shown?.id === s.id) setShown(null);
  };

  const enable = async (s: Subscription) => {
    const { data, error: err, response } = await api.POST('/api/v1/webhook_subscriptions/{id}/enable', { params: { path: { id: s.id } } })
      .catch(() => ({ data: undefined, error: undefined, response: undefined }));
    if (!data) return setNotice(`Could not re-enable the subscription: ${detailOf(err, response)}`);
    setNotice(`Re-enabled the subscription of ${s.webhook_url} to ${s.event_type}.`);
    setSubs((xs) => xs && xs.map((x) => (x.id === s.id ? data.data : x)));
  };

  /** POST .../test: one signed webhook.test delivery to this subscription; its attempts are then shown. */
  const sendTest = async (s: Subscription) => {
    setTesting(s.id);
    const { data, error: err, response } = await api.POST('/api/v1/webhook_subscriptions/{id}/test', { params: { path: { id: s.id } } })
      .catch(() => ({ data: undefined, error: undefined, response: undefined }));
    setTesting(null);
    if (!data) return setNotice(`Could not send a test event: ${detailOf(err, response)}`);
    setNotice(`Sent a test event (webhook.test, delivery ${data.data.webhook_id}) to ${s.webhook_url}: its attempt appears under Deliveries within seconds.`);
    setShown(s);
    setReloads((n) => n + 1);
  };

  return (
    <>
      <PageTitle title="Webhooks">Webhooks</PageTitle>
      <p class="lead">Webhooks POST each event you subscribe to to your URL, signed (Standard Webhooks), and retry until your receiver answers 2xx.</p>
      {notice && <p role="status" class="notice">{notice}</p>}
      {created && <NewSecrets created={created} onDone={() => setCreated(null)} />}
      {canWrite && !created && (
        <CreateSubscriptions onCreated={(made, failures) => {
          if (made.length) setCreated(made);
          setSubs((xs) => [...made, ...(xs ?? [])]);
          setNotice(failures.length ? `Not subscribed: ${failures.join('; ')}` : null);
        }} />
      )}
      <section aria-labelledby="subs-heading">
        <h2 id="subs-heading">Subscriptions</h2>
        {error ? <ErrorLine message={`The subscriptions could not be loaded: ${error}`} retry={() => void load()} />
          : !subs ? <Loading what="subscriptions" />
          : subs.length === 0 ? <p class="empty">No subscriptions yet.{canWrite ? ' Subscribe a URL to events above.' : ''}</p>
          : (
            <TableWrap label="Webhook subscriptions">
              <table aria-label="Webhook subscriptions">
                <thead>
                  <tr><th scope="col">URL</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Created</th>
                    <th scope="col"><span class="visually-hidden">Actions</span></th></tr>
                </thead>
                <tbody>
                  {subs.map((s) => (
                    <tr key={s.id}>
                      <th scope="row" class="url">{s.webhook_url}</th>
                      <td><code>{s.event_type}</code></td>
                      <td>{s.status}{s.disabled_reason ? ` (${s.disabled_reason})` : ''}</td>
                      <td>{dateTime(s.created_at)}</td>
                      <td class="actions-cell">
                        <button type="button" class="secondary small" aria-label={`Deliveries of ${s.event_type} to ${s.webhook_url}`}
                          aria-pressed={shown?.id === s.id} onClick={() => setShown(shown?.id === s.id ? null : s)}>Deliveries</button>
                        {canWrite && s.status === 'active' && (
                          <button type="button" class="secondary small" aria-label={`Send a test event to ${s.webhook_url} (${s.event_type})`}
                            disabled={testing !== null} onClick={() => void sendTest(s)}>{testing === s.id ? 'Sending…' : 'Send test event'}</button>
                        )}
                        {canWrite && s.status === 'disabled' && (
                          <button type="button" class="small" aria-label={`Re-enable ${s.event_type} to ${s.webhook_url}`} onClick={() => void enable(s)}>Re-enable</button>
                        )}
                        {canWrite && (
                          <button type="button" class="danger small" aria-label={`Delete ${s.event_type} to ${s.webhook_url}`} onClick={() => setDeleting(s)}>Delete</button>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
        {next && <button type="button" class="secondary" onClick={() => void load(next)}>Show more subscriptions</button>}
      </section>
      {shown && <Deliveries key={`${shown.id}-${reloads}`} sub={shown} />}
      {deleting && (
        <Confirm title="Delete this subscription?" confirmLabel="Delete subscription" busy={deleteBusy}
          onConfirm={() => void remove(deleting)} onCancel={() => setDeleting(null)}>
          <p><code>{deleting.event_type}</code> events stop being sent to <strong>{deleting.webhook_url}</strong>, and retries still pending are dropped.</p>
        </Confirm>
      )}
    </>
  );
}

/** One URL, several events: one POST per event checked (the API's subscriptions are one event type each). */
function CreateSubscriptions({ onCreated }: { onCreated: (made: CreatedSubscription[], failures: string[]) => void }) {
  const [url, setUrl] = useState('');
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const { busy, error, run } = useSubmit();
  const toggle = (s: string, on: boolean) => setChosen((c) => { const n = new Set(c); if (on) n.add(s); else n.delete(s); return n; });

  const submit = (e: Event) => run(e, async () => {
    if (chosen.size === 0) return 'Choose at least one event.';
    const made: CreatedSubscription[] = [];
    const failures: string[] = [];
    for (const event_type of SUBSCRIBABLE_EVENT_TYPES.filter((t) => chosen.has(t))) {
      const { data, error: err, response } = await api.POST('/api/v1/webhook_subscriptions', { body: { webhook_url: url, event_type } });
      if (data) made.push(data.data);
      else failures.push(`${event_type}: ${detailOf(err, response)}`);
    }
    if (made.length === 0) return failures.join('; ');
    setUrl('');
    setChosen(new Set());
    onCreated(made, failures);
  });

  return (
    <section aria-labelledby="subscribe-heading" class="card">
      <h2 id="subscribe-heading">Subscribe a URL</h2>
      <form onSubmit={(e) => void submit(e)}>
        <div class="field">
          <label for="webhook-url">Webhook URL</label>
          <input id="webhook-url" type="url" required maxLength={2048} value={url} onInput={(e) => setUrl(e.currentTarget.value)}
            aria-describedby="webhook-url-hint" placeholder="https://example.com/openline/events" />
          <p id="webhook-url-hint" class="hint">An HTTPS URL of your receiver, reachable from the internet.</p>
        </div>
        <fieldset>
          <legend>Events</legend>
          <div class="checks wide">
            {SUBSCRIBABLE_EVENT_TYPES.map((t) => (
              <label key={t} class="check">
                <input type="checkbox" checked={chosen.has(t)} onChange={(e) => toggle(t, e.currentTarget.checked)} /> {t}
              </label>
            ))}
          </div>
        </fieldset>
        {error && <p role="alert" class="error">{error}</p>}
        <button type="submit" disabled={busy}>{busy ? 'Subscribing…' : 'Subscribe'}</button>
      </form>
    </section>
  );
}

function NewSecrets({ created, onDone }: { created: CreatedSubscription[]; onDone: () => void }) {
  return (
    <section aria-labelledby="secrets-heading" class="card success">
      <h2 id="secrets-heading">Subscribed {created[0].webhook_url}</h2>
      <p><strong>Store the signing secrets now: they are shown this once.</strong> Your receiver checks each delivery's signature with the secret of its subscription.</p>
      {created.map((c) => (
        <div class="field" key={c.id}>
          <label for={`secret-${c.id}`}>Signing secret for {c.event_type}</label>
          <input id={`secret-${c.id}`} readOnly value={c.secret} class="mono" onFocus={(e) => e.currentTarget.select()} />
        </div>
      ))}
      <button type="button" class="secondary" onClick={onDone}>Done</button>
    </section>
  );
}

function Deliveries({ sub }: { sub: Subscription }) {
  const [attempts, setAttempts] = useState<DeliveryAttempt[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = async () => {
    setError(null);
    try {
      const { data, error: err, response } = await api.GET('/api/v1/webhook_subscriptions/{id}/deliveries', { params: { path: { id: sub.id }, query: { limit: 50 } } });
      if (!data) return setError(messageOf(err, response));
      setAttempts(data.data);
    } catch {
      setError('The server could not be reached.');
    }
  };
  useEffect(() => { void load(); }, [sub.id]);
  const label = `Deliveries of ${sub.event_type} to ${sub.webhook_url}`;
  return (
    <section aria-labelledby="deliveries-heading">
      <div class="heading-row">
        <h2 id="deliveries-heading">{label}</h2>
        <button type="button" class="secondary small" onClick={() => void load()}>Refresh deliveries</button>
      </div>
      {error ? <ErrorLine message={`The deliveries could not be loaded: ${error}`} retry={() => void load()} />
        : !attempts ? <Loading what="deliveries" />
        : attempts.length === 0 ? <p class="empty">No delivery yet: one is made when a {sub.event_type} event happens (or send a test event).</p>
        : (
          <TableWrap label={label}>
            <table aria-label="Delivery attempts">
              <thead>
                <tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">Delivery</th><th scope="col">Attempt</th><th scope="col">Outcome</th>
                  <th scope="col">Status code</th><th scope="col">Latency</th><th scope="col">Error</th><th scope="col">Next attempt</th>
                  <th scope="col">Request and response</th></tr>
              </thead>
              <tbody>
                {attempts.map((a) => (
                  <tr key={a.id}>
                    <td>{dateTime(a.attempted_at)}</td>
                    <td><code>{a.event_type}</code></td>
                    <td><code>{a.webhook_id}</code></td>
                    <td>{a.attempt}</td>
                    <td>{a.outcome}</td>
                    <td>{a.response_status ?? '—'}</td>
                    <td>{a.latency_ms} ms</td>
                    <td>{a.error ?? '—'}</td>
                    <td>{a.next_attempt_at ? dateTime(a.next_attempt_at) : '—'}</td>
                    <td><Exchange attempt={a} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
    </section>
  );
}

/** What one attempt sent (headers, the exact body) and what came back (the start of the answer), on demand. */
function Exchange({ attempt: a }: { attempt: DeliveryAttempt }) {
  if (!a.request && !a.response) return <span>—</span>;
  return (
    <details class="exchange">
      <summary>Show<span class="visually-hidden"> the request and response of attempt {a.attempt} of {a.webhook_id}</span></summary>
      {a.request && (
        <>
          <h3 class="exchange-heading">Request</h3>
          <pre>{Object.entries(a.request.headers).map(([k, v]) => `${k}: ${v}`).join('\n')}</pre>
          <pre>{a.request.body}</pre>
        </>
      )}
      <h3 class="exchange-heading">Response{a.response_status !== null ? ` (HTTP ${a.response_status})` : ''}</h3>
      {a.response
        ? <pre>{a.response.content_type ? `content-type: ${a.response.content_type}\n\n` : ''}{a.response.body || '(empty body)'}{a.response.truncated ? '\n… (only the first 2 KiB are kept)' : ''}</pre>
        : <p>No answer came.</p>}
    </details>
  );
}
