// Calls: the call log (GET /v1/calls) with status and direction filters and cursor paging, newest first; live
// (GET /v1/calls/stream): a row's status changes as its call progresses, and a new call appears at the top of the
// unfiltered first page.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, messageOf, type Call, type CallsQuery, type Session } from '../api/client.ts';
import { ErrorLine, Loading, TableWrap } from '../components.tsx';
import { isTerminal, LiveIndicator, statusRank, useCallStream, type CallEvent } from '../live.tsx';
import { dateTime, money, seconds } from '../format.ts';
import { BASE, Link, PageTitle } from '../router.tsx';

export const STATUSES = ['QUEUED', 'RINGING', 'ANSWERED', 'COMPLETED', 'BUSY', 'NO_ANSWER', 'VOICEMAIL', 'FAILED', 'CANCELED'] as const;
const PAGE_SIZE = 25;

export function CallsPage(_: { session: Session }) {
  const [status, setStatus] = useState('');
  const [direction, setDirection] = useState('');
  // The cursors of the pages seen so far: Previous goes back without the API needing a backward cursor.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [calls, setCalls] = useState<Call[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const cursor = cursors[cursors.length - 1];
  const view = useRef({ cursor, status, direction });
  view.current = { cursor, status, direction };

  const load = async (quiet = false) => {
    setError(null);
    if (!quiet) setCalls(null);
    const query: CallsQuery = { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}),
      ...(status ? { status: status as CallsQuery['status'] } : {}), ...(direction ? { direction: direction as CallsQuery['direction'] } : {}) };
    try {
      const { data, error: err, response } = await api.GET('/v1/calls', { params: { query } });
      if (!data) return setError(messageOf(err, response));
      setCalls(data.data);
      setNext(data.meta.cursor ?? null);
    } catch {
      setError('The server could not be reached.');
    }
  };
  useEffect(() => { void load(); }, [status, direction, cursor]);

  /** The call as GET /v1/calls/{id} answers it now (cost and legs are not in the stream's messages). */
  const fetchCall = async (id: string): Promise<Call | null> => {
    try {
      const { data } = await api.GET('/v1/calls/{id}', { params: { path: { id } } });
      return data?.data ?? null;
    } catch {
      return null;
    }
  };
  const upsert = (c: Call, onTop: boolean) => setCalls((list) => {
    if (!list) return list;
    const i = list.findIndex((x) => x.id === c.id);
    if (i >= 0) return statusRank(c.status) >= statusRank(list[i].status) ? list.map((x) => (x.id === c.id ? c : x)) : list;
    return onTop ? [c, ...list] : list;
  });
  const onEvent = (e: CallEvent) => {
    const v = view.current;
    const firstUnfiltered = !v.cursor && !v.status && !v.direction;
    setCalls((list) => {
      if (!list) return list;
      const known = list.find((x) => x.id === e.call_id);
      if (known) {
        if (statusRank(e.status) < statusRank(known.status)) return list;
        return list.map((x) => (x.id === e.call_id ? { ...x, status: e.status as Call['status'], call_outcome: e.call_outcome,
          duration_seconds: e.duration_seconds, answered_at: e.answered_at, ended_at: e.ended_at,
          disconnection_reason: e.disconnection_reason, failure_code: e.failure_code, failure_category: e.failure_category } as Call : x));
      }
      return list;
    });
    // A new call (top of the unfiltered first page) and a call's end (its cost) are read once in full.
    const shown = calls?.some((x) => x.id === e.call_id);
    if ((!shown && firstUnfiltered) || (shown && isTerminal(e.status))) {
      void fetchCall(e.call_id).then((c) => { if (c) upsert(c, firstUnfiltered); });
    }
  };
  const live = useCallStream(onEvent, () => void load(true));

  const filter = (set: (v: string) => void) => (e: Event) => { set((e.currentTarget as HTMLSelectElement).value); setCursors([undefined]); };

  return (
    <>
      <PageTitle title="Calls">Calls</PageTitle>
      <LiveIndicator {...live} />
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter calls">
        <div class="field">
          <label for="calls-status">Status</label>
          <select id="calls-status" value={status} onChange={filter(setStatus)}>
            <option value="">Any status</option>
            {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </div>
        <div class="field">
          <label for="calls-direction">Direction</label>
          <select id="calls-direction" value={direction} onChange={filter(setDirection)}>
            <option value="">Any direction</option>
            <option value="outbound">Outbound</option>
            <option value="inbound">Inbound</option>
          </select>
        </div>
        <button type="button" class="secondary" onClick={() => void load()}>Refresh</button>
      </form>
      {error ? <ErrorLine message={`The calls could not be loaded: ${error}`} retry={() => void load()} />
        : !calls ? <Loading what="calls" />
        : calls.length === 0 ? <p class="empty">{status || direction ? 'No calls match these filters.' : 'No calls yet. Calls placed through the API or the Phone page appear here as they start.'}</p>
        : (
          <TableWrap label="Call log">
            <table aria-label="Call log">
              <thead>
                <tr><th scope="col">Started</th><th scope="col">To</th><th scope="col">From</th><th scope="col">Type</th>
                  <th scope="col">Direction</th><th scope="col">Status</th><th scope="col">Duration</th><th scope="col">Cost</th></tr>
              </thead>
              <tbody>
                {calls.map((c) => (
                  <tr key={c.id}>
                    <td><Link href={`${BASE}/calls/${c.id}`}>{dateTime(c.created_at)}</Link></td>
                    <td>{c.to_number}</td>
                    <td>{c.from_number}</td>
                    <td>{c.type}</td>
                    <td>{c.direction}</td>
                    <td><span class={`status s-${c.status.toLowerCase()}`}>{c.status}</span></td>
                    <td>{seconds(c.duration_seconds)}</td>
                    <td>{money(c.cost_cents)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
      <nav class="pager" aria-label="Call log pages">
        <button type="button" class="secondary" disabled={cursors.length === 1} onClick={() => setCursors((c) => c.slice(0, -1))}>Previous page</button>
        <span>Page {cursors.length}</span>
        <button type="button" class="secondary" disabled={!next || !calls} onClick={() => next && setCursors((c) => [...c, next])}>Next page</button>
      </nav>
    </>
  );
}
