// Optimize: the organization's website tests (GET /v1/optimize/tests) and, for the one opened, its results
// (GET /v1/optimize/tests/{id}/results): per variant the counts, conversion rate with its 95 % interval, lift and
// probability to beat the control, the decision and the sample-ratio check, and a chart of each variant's cumulative
// conversion rate per UTC day with its 95 % (Wilson) interval as a band, its values in a table. With optimize:write:
// start or resume (PATCH status=running), pause (PATCH status=paused) and ship a variant after a confirmation
// (POST .../ship). Tests are created with the API (docs/reference/optimize.md).
import { useEffect, useMemo, useState } from 'preact/hooks';
import type uPlot from 'uplot';
import { api, messageOf, type Session } from '../api/client.ts';
import { axis, Chart, ChartTable, DAY_INCRS, Legend, periodSeconds, utc } from '../chart.tsx';
import { Confirm, ErrorLine, Loading, TableWrap } from '../components.tsx';
import { dateTime } from '../format.ts';
import { PageTitle } from '../router.tsx';
import type { paths } from '../api/schema';
import { detailOf } from './numbers.tsx';

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type OptimizeTest = Json<paths['/v1/optimize/tests']['get']['responses'][200]>['data'][number];
type Results = Json<paths['/v1/optimize/tests/{id}/results']['get']['responses'][200]>['data'];

const COLORS = ['#0b57d0', '#b3261e', '#146c2e', '#8a4b00', '#6f2da8', '#00696b', '#a3006f', '#3d4f00', '#4d5560', '#1b1f24'];
const Z = 1.959963984540054;

/** The Wilson score interval (95 %) of x successes in n trials: steady for small n and rates near 0 or 1. */
export function wilson(x: number, n: number): [number, number] {
  if (n <= 0) return [0, 1];
  const p = Math.min(x, n) / n;
  const z2 = Z * Z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (Z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / (1 + z2 / n);
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

const pct = (r: number | null | undefined, digits = 1) => (r === null || r === undefined ? '—' : `${(r * 100).toFixed(digits)} %`);
const signedPct = (r: number | null | undefined) => (r === null || r === undefined ? '—' : `${r >= 0 ? '+' : ''}${(r * 100).toFixed(1)} %`);
const pValue = (p: unknown) => (typeof p === 'number' ? (p < 0.0001 ? '< 0.0001' : p.toFixed(4)) : '—');
const dayName = (d: string) => new Date(`${d}T00:00:00Z`).toLocaleDateString(undefined, { dateStyle: 'medium', timeZone: 'UTC' });
const STATUS_WORDS: Record<string, string> = {
  draft: 'Draft', running: 'Running', paused: 'Paused', completed: 'Completed', shipped: 'Shipped', archived: 'Archived',
};

export function OptimizePage({ session }: { session: Session }) {
  const canWrite = session.scopes.includes('optimize:write');
  const [tests, setTests] = useState<OptimizeTest[] | null>(null);
  const [total, setTotal] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [openId, setOpenId] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const load = async () => {
    setError(null);
    try {
      const { data, error: err, response } = await api.GET('/v1/optimize/tests', { params: { query: { limit: 100 } } });
      if (!data) return setError(messageOf(err, response));
      setTests(data.data);
      setTotal(data.meta.total_results);
    } catch {
      setError('The server could not be reached.');
    }
  };
  useEffect(() => { void load(); }, []);

  const changed = (t: OptimizeTest, message: string) => {
    setTests((ts) => ts && ts.map((x) => (x.id === t.id ? t : x)));
    setNotice(message);
  };
  const open = tests?.find((t) => t.id === openId) ?? null;

  return (
    <>
      <PageTitle title="Optimize">Optimize</PageTitle>
      <p class="lead">A/B tests of your website: each visitor sees one variant of a page, and the results say which converts better, with honest statistics.</p>
      {notice && <p role="status" class="notice">{notice}</p>}
      <section aria-labelledby="tests-heading">
        <div class="heading-row">
          <h2 id="tests-heading">Website tests{total !== null ? ` (${total})` : ''}</h2>
          <button type="button" class="secondary small" onClick={() => void load()}>Refresh tests</button>
        </div>
        {error ? <ErrorLine message={`The tests could not be loaded: ${error}`} retry={() => void load()} />
          : !tests ? <Loading what="tests" />
          : tests.length === 0 ? (
            <p class="empty">No website tests yet. Register your website (POST /v1/optimize/properties), paste its script tag
              (GET /v1/optimize/snippet) into your pages, then create a test with POST /v1/optimize/tests: its results show here.</p>
          ) : (
            <TableWrap label="Website tests">
              <table aria-label="Website tests">
                <thead>
                  <tr><th scope="col">Test</th><th scope="col">Status</th><th scope="col">Page</th><th scope="col">Variants</th>
                    <th scope="col">Started</th><th scope="col" class="hidden-label-col"><span class="visually-hidden">Actions</span></th></tr>
                </thead>
                <tbody>
                  {tests.map((t) => (
                    <tr key={t.id}>
                      <th scope="row">{t.name}</th>
                      <td class="status">{STATUS_WORDS[t.status] ?? t.status}</td>
                      <td class="test-url">{t.page_url}</td>
                      <td>{t.variants.length}</td>
                      <td>{dateTime(t.started_at)}</td>
                      <td class="actions-cell">
                        <button type="button" class="secondary small" aria-label={`Results of ${t.name}`} aria-pressed={openId === t.id}
                          onClick={() => setOpenId(openId === t.id ? null : t.id)}>Results</button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
      </section>
      {open && <TestResults key={open.id} test={open} canWrite={canWrite} onChanged={changed} />}
    </>
  );
}

function TestResults({ test, canWrite, onChanged }: { test: OptimizeTest; canWrite: boolean; onChanged: (t: OptimizeTest, message: string) => void }) {
  const [results, setResults] = useState<Results | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [shipping, setShipping] = useState<string | null>(null);

  const load = async () => {
    setError(null);
    try {
      const { data, error: err, response } = await api.GET('/v1/optimize/tests/{id}/results', { params: { path: { id: test.id } } });
      if (!data) return setError(messageOf(err, response));
      setResults(data.data);
      // Reading results applies the completion rule: a decided test is completed now.
      if (data.data.status !== test.status) {
        const t = await api.GET('/v1/optimize/tests/{id}', { params: { path: { id: test.id } } });
        if (t.data) onChanged(t.data.data, `${test.name} is now ${t.data.data.status}.`);
      }
    } catch {
      setError('The server could not be reached.');
    }
  };
  useEffect(() => { void load(); }, [test.id]);

  const setStatus = async (status: 'running' | 'paused', done: string) => {
    setActionError(null);
    setBusy(true);
    try {
      const { data, error: err, response } = await api.PATCH('/v1/optimize/tests/{id}', { params: { path: { id: test.id } }, body: { status } });
      if (!data) return setActionError(detailOf(err, response));
      onChanged(data.data, `${done} ${data.data.name}.`);
    } catch {
      setActionError('The server could not be reached.');
    } finally {
      setBusy(false);
    }
  };

  const ship = async (variantId: string) => {
    setActionError(null);
    setBusy(true);
    try {
      const { data, error: err, response } = await api.POST('/v1/optimize/tests/{id}/ship', { params: { path: { id: test.id } }, body: { variant_id: variantId } });
      if (!data) return setActionError(detailOf(err, response));
      const name = data.data.variants.find((v) => v.id === variantId)?.name ?? 'the variant';
      onChanged(data.data, `Shipped ${name} of ${data.data.name}: every visitor now sees it.`);
    } catch {
      setActionError('The server could not be reached.');
    } finally {
      setBusy(false);
      setShipping(null);
    }
  };

  const canShip = test.status === 'running' || test.status === 'paused' || test.status === 'completed';
  const shippedName = test.variants.find((v) => v.id === test.shipped_variant_id)?.name;
  const heading = `Results of ${test.name}`;

  return (
    <section aria-labelledby="results-heading" class="card">
      <div class="heading-row">
        <h2 id="results-heading">{heading}</h2>
        <button type="button" class="secondary small" onClick={() => void load()}>Refresh results</button>
      </div>
      <p>
        <span class="status">{STATUS_WORDS[test.status] ?? test.status}</span>
        {shippedName ? `: ${shippedName} is shipped to every visitor.` : ''} Goal: <code>{test.goal.type}</code>
        {test.hypothesis ? <> · Hypothesis: {test.hypothesis}</> : null}
      </p>
      {canWrite && (
        <div class="row test-actions">
          {test.status === 'draft' && <button type="button" disabled={busy} onClick={() => void setStatus('running', 'Started')}>Start test</button>}
          {test.status === 'paused' && <button type="button" disabled={busy} onClick={() => void setStatus('running', 'Resumed')}>Resume test</button>}
          {test.status === 'running' && <button type="button" class="secondary" disabled={busy} onClick={() => void setStatus('paused', 'Paused')}>Pause test</button>}
          {canShip && <ShipForm test={test} results={results} busy={busy} onShip={setShipping} />}
        </div>
      )}
      {actionError && <p role="alert" class="error">{actionError}</p>}
      {shipping && (
        <Confirm title="Ship this variant?" confirmLabel="Ship variant" busy={busy} onConfirm={() => void ship(shipping)} onCancel={() => setShipping(null)}>
          <p><strong>{test.variants.find((v) => v.id === shipping)?.name}</strong> becomes permanent: the tag shows it to every visitor of {test.page_url} and the test counts nothing more. This cannot be undone.</p>
        </Confirm>
      )}
      {error ? <ErrorLine message={`The results could not be loaded: ${error}`} retry={() => void load()} />
        : !results ? <Loading what="results" />
        : <ResultsView test={test} results={results} />}
    </section>
  );
}

function ShipForm({ test, results, busy, onShip }: { test: OptimizeTest; results: Results | null; busy: boolean; onShip: (variantId: string) => void }) {
  // The winner when there is one, else the best rate so far.
  const best = results?.decision.winner_variant_id
    ?? [...(results?.variants ?? [])].sort((a, b) => b.conversion_rate - a.conversion_rate)[0]?.variant_id
    ?? test.variants[0].id;
  const [chosen, setChosen] = useState(best);
  useEffect(() => setChosen(best), [best]);
  return (
    <form class="inline" onSubmit={(e) => { e.preventDefault(); onShip(chosen); }}>
      <div class="field">
        <label for={`ship-${test.id}`}>Variant to ship</label>
        <select id={`ship-${test.id}`} value={chosen} onChange={(e) => setChosen(e.currentTarget.value)}>
          {test.variants.map((v) => <option key={v.id} value={v.id}>{v.name}{v.is_control ? ' (control)' : ''}</option>)}
        </select>
      </div>
      <button type="submit" class="danger" disabled={busy}>Ship…</button>
    </form>
  );
}

interface Point { day: string; n: number; x: number; rate: number; low: number; high: number }

/** Each variant's cumulative counts at the end of every day any variant has a row (days without a row carry over). */
function cumulative(results: Results): { days: string[]; byVariant: Map<string, Point[]> } {
  const days = [...new Set(results.daily.map((d) => d.day))].sort();
  const byVariant = new Map<string, Point[]>();
  for (const v of results.variants) {
    let n = 0;
    let x = 0;
    byVariant.set(v.variant_id, days.map((day) => {
      for (const r of results.daily) if (r.variant_id === v.variant_id && r.day === day) { n += r.impressions; x += r.conversions; }
      const [low, high] = wilson(x, n);
      return { day, n, x, rate: n ? Math.min(x, n) / n : 0, low, high };
    }));
  }
  return { days, byVariant };
}

function ResultsView({ test, results }: { test: OptimizeTest; results: Results }) {
  const { days, byVariant } = useMemo(() => cumulative(results), [results]);
  const decision = results.decision as Results['decision'] & { explanation?: string };
  const impressions = results.variants.reduce((s, v) => s + v.impressions, 0);
  const colorOf = (i: number) => COLORS[i % COLORS.length];

  const data = useMemo<uPlot.AlignedData>(() => {
    const cols: (number | null)[][] = [];
    for (const v of results.variants) {
      const pts = byVariant.get(v.variant_id)!;
      cols.push(pts.map((p) => (p.n ? p.rate * 100 : null)), pts.map((p) => (p.n ? p.high * 100 : null)), pts.map((p) => (p.n ? p.low * 100 : null)));
    }
    return [days.map(periodSeconds), ...cols] as uPlot.AlignedData;
  }, [days, byVariant]);

  const last = results.variants.map((v) => ({ v, p: byVariant.get(v.variant_id)!.at(-1) }));
  const label = `Cumulative conversion rate per variant by day, with 95 % intervals: ${last.map(({ v, p }) => `${v.name} ${pct(p?.rate ?? 0)}`).join(', ')}.`;

  return (
    <>
      <p class="decision"><strong>Decision: {decision.reason.replace('_', ' ')}.</strong> {decision.explanation ?? ''}</p>
      {results.srm.mismatch && <p role="alert" class="error">Sample-ratio mismatch: {results.srm.warning} Do not trust these results until the traffic split is fixed.</p>}
      <TableWrap label={`Variants of ${test.name}`}>
        <table aria-label={`Variants of ${test.name}`}>
          <thead>
            <tr><th scope="col">Variant</th><th scope="col">Visitors</th><th scope="col">Conversions</th><th scope="col">Conversion rate</th>
              <th scope="col">95 % interval</th><th scope="col">Lift</th><th scope="col">Chance to beat control</th><th scope="col">p-value (Holm)</th></tr>
          </thead>
          <tbody>
            {results.variants.map((v) => {
              const [low, high] = wilson(v.conversions, v.impressions);
              const adjusted = (v as { adjusted_p_value?: unknown }).adjusted_p_value;
              return (
                <tr key={v.variant_id}>
                  <th scope="row">{v.name}{v.is_control ? ' (control)' : ''}{results.decision.winner_variant_id === v.variant_id ? ' · winner' : ''}</th>
                  <td>{v.impressions.toLocaleString()}</td>
                  <td>{v.conversions.toLocaleString()}</td>
                  <td>{pct(v.conversion_rate)}</td>
                  <td>{v.impressions ? `${pct(low)} – ${pct(high)}` : '—'}</td>
                  <td>{signedPct(v.lift)}</td>
                  <td>{pct(v.probability_to_beat_control, 0)}</td>
                  <td>{pValue(adjusted ?? v.p_value)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </TableWrap>
      <h3 class="chart-heading">Conversion rate over time</h3>
      {impressions === 0 || days.length === 0 ? (
        <p class="empty">No visitors counted yet. {test.status === 'draft' ? 'Start the test' : 'Once the tag on your page shows the test to visitors'}, their visits and conversions are counted within seconds.</p>
      ) : (
        <>
          <Legend items={results.variants.map((v, i) => ({ label: v.name, color: colorOf(i) }))} />
          <Chart label={label} data={data} options={() => ({
            tzDate: utc,
            legend: { show: false },
            cursor: { show: false },
            scales: { x: { time: true, range: (_u, lo, hi) => (lo === hi ? [lo - 86_400, hi + 86_400] : [lo, hi]) }, y: { range: (_u, _lo, hi) => [0, Math.min(100, Math.max(1, hi * 1.1))] } },
            axes: [axis({ values: '{M}/{D}', incrs: DAY_INCRS }), axis({ values: (_u, ticks) => ticks.map((v) => `${v.toFixed(v < 10 ? 1 : 0)} %`), size: 56 })],
            series: [{}, ...results.variants.flatMap((v, i): uPlot.Series[] => [
              { label: v.name, stroke: colorOf(i), width: 2, points: { show: true, size: 6 } },
              { label: `${v.name} upper`, stroke: colorOf(i), width: 1, dash: [4, 4], points: { show: false } },
              { label: `${v.name} lower`, stroke: colorOf(i), width: 1, dash: [4, 4], points: { show: false } },
            ])],
            bands: results.variants.map((_v, i) => ({ series: [2 + 3 * i, 3 + 3 * i] as [number, number], fill: `${colorOf(i)}22` })),
          })} />
          <p class="hint">Each line is a variant's conversion rate from the start to the end of each UTC day; the shaded band (dashed edges) is its 95 % interval.</p>
          <ChartTable label="Conversion rate per variant by day">
            <thead>
              <tr><th scope="col">Day</th><th scope="col">Variant</th><th scope="col">Visitors so far</th><th scope="col">Conversions so far</th>
                <th scope="col">Conversion rate</th><th scope="col">95 % interval</th></tr>
            </thead>
            <tbody>
              {days.flatMap((day, d) => results.variants.map((v) => {
                const p = byVariant.get(v.variant_id)![d];
                return (
                  <tr key={`${day}-${v.variant_id}`}>
                    <th scope="row">{dayName(day)}</th><td>{v.name}</td><td>{p.n}</td><td>{p.x}</td>
                    <td>{p.n ? pct(p.rate) : '—'}</td><td>{p.n ? `${pct(p.low)} – ${pct(p.high)}` : '—'}</td>
                  </tr>
                );
              }))}
            </tbody>
          </ChartTable>
        </>
      )}
    </>
  );
}
