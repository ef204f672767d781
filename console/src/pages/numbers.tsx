// Numbers: the organization's numbers (GET /v1/phone-numbers, cursor paging) with their settings; with
// phone_numbers:write, each number's name, caller name (CNAM) and inbound routing are changed in a dialog
// (PATCH /v1/phone-numbers/{id}, only the fields changed), and a sandbox number is bought after a search
// (GET /v1/phone-numbers/available, POST /v1/phone-numbers), and a number is released after a confirmation
// (DELETE /v1/phone-numbers/{id}). Without the scope there is nothing to change, buy or release.
// With caller_trust:read each number also shows its Number Health state with the reasons (GET
// /v1/number-health/numbers) and the Number Sets it belongs to (GET /v1/number-health/sets, for their names), and
// the Number Sets are listed below the numbers, made and changed there with phone_numbers:write (number-sets.tsx).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, messageOf, type AvailableNumber, type FleetItem, type NumberSet, type PhoneNumber, type Session } from '../api/client.ts';
import { Confirm, ErrorLine, Loading, TableWrap, useSubmit } from '../components.tsx';
import { dateTime } from '../format.ts';
import { PageTitle } from '../router.tsx';
import { NumberSets } from './number-sets.tsx';

const PAGE_SIZE = 25;
/** The sandbox inventory's area codes (GET /v1/phone-numbers/available's description). */
const AREA_CODES = ['415', '212', '312', '206', '617', '512', '303', '404', '305', '702'];
const INBOUND_LABEL: Record<string, string> = { softphone: 'Ring softphones', reject: 'Reject' };
/** Number Health's evidence states in words (docs/reference/number-health.md). */
const EVIDENCE_LABEL: Record<string, string> = {
  CLEAN_OBSERVED: 'Clean (observed)', NEEDS_DATA: 'Needs data', WATCH: 'Watch', FLAGGED: 'Flagged',
  SETUP_INCOMPLETE: 'Setup incomplete', RETIRED: 'Retired',
};
const ACTION_LABEL: Record<string, string> = {
  COMPLETE_SETUP: 'complete its setup', REQUEST_REMEDIATION: 'request remediation', MONITOR: 'keep monitoring',
  FRESH_CHECK: 'a fresh (paid) provider check', RUN_SPAM_TEST: 'run a spam-test session',
};
/** Health evidence is read for at most this many numbers at once (the fleet list's largest page). */
const FLEET_LIMIT = 100;

interface Health { fleet: Map<number, FleetItem>; sets: Map<string, string> }

/** The error envelope's message with its fields, for forms. */
export function detailOf(err: unknown, response?: Response): string {
  const fields = (err as { error?: { fields?: Record<string, string> } } | undefined)?.error?.fields;
  return messageOf(err, response) + (fields ? ` (${Object.entries(fields).map(([k, v]) => `${k} ${v}`).join('; ')})` : '');
}

export function NumbersPage({ session }: { session: Session }) {
  const canWrite = session.scopes.includes('phone_numbers:write');
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [numbers, setNumbers] = useState<PhoneNumber[] | null>(null);
  const [total, setTotal] = useState<number | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState<PhoneNumber | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [releasing, setReleasing] = useState<PhoneNumber | null>(null);
  const [releaseBusy, setReleaseBusy] = useState(false);
  const [health, setHealth] = useState<Health | null>(null);
  const [healthError, setHealthError] = useState<string | null>(null);
  const canHealth = session.scopes.includes('caller_trust:read');
  const cursor = cursors[cursors.length - 1];

  /** Number Health evidence and set names for the numbers shown (not fatal: the numbers show without them). */
  const loadHealth = async () => {
    if (!canHealth) return;
    setHealthError(null);
    try {
      const [fleet, sets] = await Promise.all([
        api.GET('/v1/number-health/numbers', { params: { query: { limit: FLEET_LIMIT } } }),
        api.GET('/v1/number-health/sets', { params: { query: { limit: FLEET_LIMIT } } }),
      ]);
      if (!fleet.data) return setHealthError(messageOf(fleet.error, fleet.response));
      if (!sets.data) return setHealthError(messageOf(sets.error, sets.response));
      setHealth({
        fleet: new Map(fleet.data.data.map((f) => [f.phone_id, f])),
        sets: new Map(sets.data.data.map((x: NumberSet) => [x.id, x.name])),
      });
    } catch {
      setHealthError('The server could not be reached.');
    }
  };

  const load = async () => {
    setError(null);
    try {
      const { data, error: err, response } = await api.GET('/v1/phone-numbers', { params: { query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } } });
      if (!data) return setError(messageOf(err, response));
      setNumbers(data.data);
      setTotal(data.meta.total_results ?? null);
      setNext(data.meta.cursor ?? null);
    } catch {
      setError('The server could not be reached.');
    }
  };
  useEffect(() => { setNumbers(null); void load(); void loadHealth(); }, [cursor]);

  const release = async (n: PhoneNumber) => {
    setReleaseBusy(true);
    const { data, error: err, response } = await api.DELETE('/v1/phone-numbers/{id}', { params: { path: { id: n.id } } })
      .catch(() => ({ data: undefined, error: undefined, response: undefined }));
    setReleaseBusy(false);
    setReleasing(null);
    if (!data) return setNotice(`Could not release ${n.phone_number}: ${detailOf(err, response)}`);
    setNumbers((ns) => ns && ns.map((x) => (x.id === n.id ? { ...x, status: data.data.status, is_active: data.data.is_active } : x)));
    setNotice(`Released ${n.phone_number}: it places no more calls; its record stays here as history.`);
  };

  const saved = (n: PhoneNumber) => {
    setEditing(null);
    setNumbers((ns) => ns && ns.map((x) => (x.id === n.id ? n : x)));
    setNotice(`Saved the settings of ${n.phone_number}.`);
  };

  return (
    <>
      <PageTitle title="Numbers">Numbers</PageTitle>
      <p class="lead">The numbers your organization holds: calls are placed from them, and what answers calls to them is set here.</p>
      {notice && <p role="status" class="notice">{notice}</p>}
      {canWrite && <BuyNumber onBought={(n) => { setNotice(`Bought ${n.phone_number}: it is PROVISIONING and turns ACTIVE within seconds (Refresh to see it).`); setCursors([undefined]); void load(); }} />}
      <section aria-labelledby="numbers-heading">
        <div class="heading-row">
          <h2 id="numbers-heading">Your numbers{total !== null ? ` (${total})` : ''}</h2>
          <button type="button" class="secondary small" onClick={() => { void load(); void loadHealth(); }}>Refresh</button>
        </div>
        {healthError && <ErrorLine message={`Number Health could not be loaded: ${healthError}`} retry={() => void loadHealth()} />}
        {error ? <ErrorLine message={`The numbers could not be loaded: ${error}`} retry={() => void load()} />
          : !numbers ? <Loading what="numbers" />
          : numbers.length === 0 ? <p class="empty">No numbers yet.{canWrite ? ' Buy one above to place calls from it.' : ' An owner, admin or developer of your organization can buy one.'}</p>
          : (
            <TableWrap label="Phone numbers">
              <table aria-label="Phone numbers">
                <thead>
                  <tr><th scope="col">Number</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Inbound calls</th>
                    <th scope="col">Caller name (CNAM)</th>
                    {canHealth && <><th scope="col">Number Health</th><th scope="col">Number Sets</th></>}
                    <th scope="col">Source</th><th scope="col">Acquired</th>
                    {canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr>
                </thead>
                <tbody>
                  {numbers.map((n) => (
                    <tr key={n.id}>
                      <th scope="row">{n.phone_number}</th>
                      <td>{n.name}</td>
                      <td><span class={`status s-${n.status.toLowerCase()}`}>{n.status}</span></td>
                      <td>{INBOUND_LABEL[n.inbound] ?? n.inbound}</td>
                      <td>{n.cnam_display_name || '—'} <span class="hint">({n.cnam_status}{n.cnam_rejection_reason ? `: ${n.cnam_rejection_reason}` : ''})</span></td>
                      {canHealth && <NumberHealthCells item={health?.fleet.get(n.id)} sets={health?.sets} loaded={health !== null} />}
                      <td>{n.source}</td>
                      <td>{dateTime(n.created_at)}</td>
                      {canWrite && (
                        <td class="row-actions">
                          <button type="button" class="secondary small" aria-label={`Settings of ${n.phone_number}`} onClick={() => { setNotice(null); setEditing(n); }}>Settings</button>
                          {n.status !== 'RELEASED' && (
                            <button type="button" class="danger small" aria-label={`Release ${n.phone_number}`} onClick={() => { setNotice(null); setReleasing(n); }}>Release</button>
                          )}
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
        <nav class="pager" aria-label="Number pages">
          <button type="button" class="secondary" disabled={cursors.length === 1} onClick={() => setCursors((c) => c.slice(0, -1))}>Previous page</button>
          <span>Page {cursors.length}</span>
          <button type="button" class="secondary" disabled={!next || !numbers} onClick={() => next && setCursors((c) => [...c, next])}>Next page</button>
        </nav>
      </section>
      {canHealth && <NumberSets canWrite={canWrite} onChanged={() => void loadHealth()} />}
      {editing && <NumberSettings number={editing} onSaved={saved} onCancel={() => setEditing(null)} />}
      {releasing && (
        <Confirm title={`Release ${releasing.phone_number}?`} confirmLabel="Release number" busy={releaseBusy}
          onConfirm={() => void release(releasing)} onCancel={() => setReleasing(null)}>
          <p>The number is given back: it places no more calls, calls still queued with it as caller ID are canceled, and
            its registrations are withdrawn. This cannot be undone; the number may not be available to buy again.</p>
        </Confirm>
      )}
    </>
  );
}

/** A number's Number Health state with its reasons, and the Number Sets it belongs to (with role and state). */
function NumberHealthCells({ item, sets, loaded }: { item?: FleetItem; sets?: Map<string, string>; loaded: boolean }) {
  if (!loaded) return <><td class="hint">…</td><td class="hint">…</td></>;
  if (!item) return <><td class="hint">No evidence yet</td><td>—</td></>;
  const reasons = [item.health_warning, item.identity.missing.length ? `Identity missing: ${item.identity.missing.join(', ')}` : null].filter(Boolean);
  return (
    <>
      <td>
        <span class={`status h-${item.evidence_state.toLowerCase()}`}>{EVIDENCE_LABEL[item.evidence_state] ?? item.evidence_state}</span>
        {reasons.map((r) => <p key={r} class="hint">{r}</p>)}
        {item.recommended_action !== 'NONE' && <p class="hint">Next: {ACTION_LABEL[item.recommended_action] ?? item.recommended_action}</p>}
      </td>
      <td>
        {item.set_memberships.length === 0 ? '—' : (
          <ul class="plain">
            {item.set_memberships.map((m) => (
              <li key={m.number_set_id}>{sets?.get(m.number_set_id) ?? m.number_set_id} <span class="hint">({m.role.toLowerCase()}, {m.state.toLowerCase()})</span></li>
            ))}
          </ul>
        )}
      </td>
    </>
  );
}

/** The settings dialog of one number: only the fields changed are sent. */
function NumberSettings({ number, onSaved, onCancel }: { number: PhoneNumber; onSaved: (n: PhoneNumber) => void; onCancel: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const [name, setName] = useState(number.name);
  const [cnam, setCnam] = useState(number.cnam_display_name);
  const [inbound, setInbound] = useState(number.inbound);
  const { busy, error, setError, run } = useSubmit();
  useEffect(() => {
    const d = ref.current!;
    if (!d.open) d.showModal();
    return () => d.close();
  }, []);

  const submit = (e: Event) => run(e, async () => {
    const body: { name?: string; cnam_display_name?: string; inbound?: PhoneNumber['inbound'] } = {};
    if (name !== number.name) body.name = name;
    if (cnam !== number.cnam_display_name) body.cnam_display_name = cnam;
    if (inbound !== number.inbound) body.inbound = inbound;
    if (Object.keys(body).length === 0) return 'Nothing changed.';
    const { data, error: err, response } = await api.PATCH('/v1/phone-numbers/{id}', { params: { path: { id: number.id } }, body });
    if (!data) return detailOf(err, response);
    onSaved(data.data);
  });

  return (
    <dialog ref={ref} aria-labelledby="number-settings-title" onCancel={(e) => { e.preventDefault(); onCancel(); }}>
      <h2 id="number-settings-title">Settings of {number.phone_number}</h2>
      <form onSubmit={(e) => void submit(e)}>
        <div class="field">
          <label for="number-name">Name</label>
          <input id="number-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="number-cnam">Caller name (CNAM)</label>
          <input id="number-cnam" maxLength={15} value={cnam} onInput={(e) => setCnam(e.currentTarget.value)} aria-describedby="number-cnam-hint" />
          <p id="number-cnam-hint" class="hint">Shown to the people you call: at most 15 letters, digits, spaces and simple punctuation. A new name is registered within seconds.</p>
        </div>
        <div class="field">
          <label for="number-inbound">Inbound calls</label>
          <select id="number-inbound" value={inbound} onChange={(e) => setInbound(e.currentTarget.value as PhoneNumber['inbound'])} aria-describedby="number-inbound-hint">
            <option value="softphone">Ring softphones</option>
            <option value="reject">Reject</option>
          </select>
          <p id="number-inbound-hint" class="hint">Ring softphones: the console's Phone pages listening for this number ring (SIP trunk carrier, and the sandbox's simulated incoming calls). Reject: callers hear the number is unavailable.</p>
        </div>
        {error && <p role="alert" class="error">{error}</p>}
        <div class="actions">
          <button type="submit" disabled={busy}>{busy ? 'Saving…' : 'Save settings'}</button>
          <button type="button" class="secondary" onClick={() => { setError(null); onCancel(); }}>Cancel</button>
        </div>
      </form>
    </dialog>
  );
}

/** Search the sandbox inventory by area code, then buy one of the numbers found. */
function BuyNumber({ onBought }: { onBought: (n: PhoneNumber) => void }) {
  const [area, setArea] = useState('');
  const [found, setFound] = useState<AvailableNumber[] | null>(null);
  const [buying, setBuying] = useState<string | null>(null);
  const [buyError, setBuyError] = useState<string | null>(null);
  const search = useSubmit();

  const find = (e: Event) => search.run(e, async () => {
    setFound(null);
    setBuyError(null);
    const { data, error: err, response } = await api.GET('/v1/phone-numbers/available', { params: { query: { limit: 5, ...(area ? { area_code: area } : {}) } } });
    if (!data) return detailOf(err, response);
    setFound(data.data);
  });

  const buy = async (phone: string) => {
    setBuying(phone);
    setBuyError(null);
    const { data, error: err, response } = await api.POST('/v1/phone-numbers', { body: { phone_number: phone } })
      .catch(() => ({ data: undefined, error: undefined, response: undefined }));
    setBuying(null);
    if (!data) return setBuyError(`Could not buy ${phone}: ${detailOf(err, response)}`);
    setFound(null);
    onBought(data.data);
  };

  return (
    <section aria-labelledby="buy-heading" class="card">
      <h2 id="buy-heading">Buy a number</h2>
      <form class="inline" onSubmit={(e) => void find(e)}>
        <div class="field">
          <label for="buy-area">Area code</label>
          <select id="buy-area" value={area} onChange={(e) => setArea(e.currentTarget.value)}>
            <option value="">Any area code</option>
            {AREA_CODES.map((a) => <option key={a} value={a}>{a}</option>)}
          </select>
        </div>
        <button type="submit" disabled={search.busy}>{search.busy ? 'Searching…' : 'Search numbers'}</button>
      </form>
      {search.error && <p role="alert" class="error">{search.error}</p>}
      {buyError && <p role="alert" class="error">{buyError}</p>}
      {found && (found.length === 0 ? <p class="empty">No free number{area ? ` in ${area}` : ''}: try another area code.</p> : (
        <ul class="found" aria-label="Numbers free to buy">
          {found.map((n) => (
            <li key={n.phone_number}>
              <span class="mono">{n.phone_number}</span> <span class="hint">({n.area_code}, {n.iso_country})</span>{' '}
              <button type="button" class="small" disabled={buying !== null} onClick={() => void buy(n.phone_number)}>
                {buying === n.phone_number ? 'Buying…' : `Buy ${n.phone_number}`}
              </button>
            </li>
          ))}
        </ul>
      ))}
    </section>
  );
}
