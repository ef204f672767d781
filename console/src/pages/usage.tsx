// Usage: the plan and the limits with how close the account is to each (GET /v1/usage/summary: the daily spend cap
// and the plan's included voice minutes, the countries calls may reach; GET /v1/account: the plan's name and the numbers held), and spend per UTC day
// (the last 30 days) and per month (the last 12) as bar charts (GET /v1/usage, granularity day and month), each with
// its values in a table. Read-only: the plan and the limits are set by an operator (the admin CLI).
import { useEffect, useMemo, useState } from 'preact/hooks';
import type uPlot from 'uplot';
import { api, messageOf, type Session } from '../api/client.ts';
import { axis, bars, Chart, ChartTable, DAY_INCRS, periodSeconds, utc } from '../chart.tsx';
import { ErrorLine, Loading } from '../components.tsx';
import { money } from '../format.ts';
import { PageTitle } from '../router.tsx';
import type { paths } from '../api/schema';

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type Period = Json<paths['/v1/usage']['get']['responses'][200]>['data'][number];
type Summary = Json<paths['/v1/usage/summary']['get']['responses'][200]>['data'];
type Account = Json<paths['/v1/account']['get']['responses'][200]>['data'];

interface Loaded { summary: Summary; days: Period[]; months: Period[]; account: Account | null }

/** YYYY-MM-DD `n` days before the UTC day `day`. */
const daysBefore = (day: string, n: number) => new Date(Date.parse(`${day}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);
/** The first day of the month `n` months before the month of `day`. */
const monthsBefore = (day: string, n: number) => {
  const d = new Date(Date.UTC(Number(day.slice(0, 4)), Number(day.slice(5, 7)) - 1 - n, 1));
  return d.toISOString().slice(0, 10);
};
const percent = (part: number, whole: number) => (whole > 0 ? `${Math.round((part / whole) * 100)} %` : '—');
const monthName = (p: string) => new Date(`${p}-01T00:00:00Z`).toLocaleDateString(undefined, { month: 'long', year: 'numeric', timeZone: 'UTC' });
/** A country's name in the browser's language, with its code (the code alone where the browser has no name). */
const countryName = (code: string) => {
  let name: string | undefined;
  try { name = new Intl.DisplayNames(undefined, { type: 'region' }).of(code); } catch { /* an old browser: the code alone */ }
  return name && name !== code ? `${name} (${code})` : code;
};
const dayName = (p: string) => new Date(`${p}T00:00:00Z`).toLocaleDateString(undefined, { dateStyle: 'medium', timeZone: 'UTC' });

export function UsagePage({ session }: { session: Session }) {
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = async () => {
    setError(null);
    try {
      const s = await api.GET('/v1/usage/summary');
      if (!s.data) return setError(messageOf(s.error, s.response));
      // The server's UTC day, not the browser's clock, bounds the ranges.
      const today = s.data.data.today.period;
      const [d, m, a] = await Promise.all([
        api.GET('/v1/usage', { params: { query: { from: daysBefore(today, 29), to: today } } }),
        api.GET('/v1/usage', { params: { query: { from: monthsBefore(today, 11), to: today, granularity: 'month' } } }),
        session.scopes.includes('account:read') ? api.GET('/v1/account') : Promise.resolve(null),
      ]);
      if (!d.data) return setError(messageOf(d.error, d.response));
      if (!m.data) return setError(messageOf(m.error, m.response));
      setLoaded({ summary: s.data.data, days: d.data.data, months: m.data.data, account: a?.data?.data ?? null });
    } catch {
      setError('The server could not be reached.');
    }
  };
  useEffect(() => { void load(); }, []);

  return (
    <>
      <PageTitle title="Usage">Usage</PageTitle>
      <p class="lead">What your organization spent, per UTC day and month, and how close it is to its plan and limits. Calls count on the day they were placed, with their minutes and cost once they end.</p>
      {error ? <ErrorLine message={`Usage could not be loaded: ${error}`} retry={() => void load()} />
        : !loaded ? <Loading what="usage" />
        : (
          <>
            <div class="heading-row">
              <h2 id="plan-heading">Plan and limits</h2>
              <button type="button" class="secondary small" onClick={() => void load()}>Refresh usage</button>
            </div>
            <PlanAndLimits summary={loaded.summary} account={loaded.account} />
            <SpendChart id="daily" title="Spend per day (last 30 days)" periods={loaded.days} name={dayName}
              empty="No spend in the last 30 days. Place a call (the Phone page, or POST /v1/calls/dial with an API key): it shows here once it ends." />
            <SpendChart id="monthly" title="Spend per month (last 12 months)" periods={loaded.months} name={monthName}
              empty="No spend in the last 12 months yet." />
          </>
        )}
    </>
  );
}

function PlanAndLimits({ summary, account }: { summary: Summary; account: Account | null }) {
  const { plan, spend_cap: cap, month } = summary;
  return (
    <section aria-labelledby="plan-heading" class="limits">
      <dl class="summary">
        {account && <><dt>Plan</dt><dd>{account.plan}</dd></>}
        <dt>Subscription</dt>
        <dd>{plan.subscription_active ? 'Active: calls, SMS and paid checks are allowed.'
          : 'Inactive: calls, SMS and paid checks answer 402 no_active_subscription. Ask your operator to activate it.'}</dd>
        {account && <><dt>Phone numbers held</dt><dd>{account.footprint.phone_numbers}</dd></>}
        <dt>This month</dt>
        <dd>{month.calls.total} calls, {month.minutes.total} billed minutes, {month.sms_segments} SMS segments, {money(month.spend_cents.total)} spent</dd>
        <dt>Countries you can call</dt>
        <dd>The United States, Canada and the US territories{summary.limits.allow_countries.length === 0
          ? '. Calls to any other country are refused with destination_blocked until your operator allows it.'
          : <>, and: <ul class="plain" aria-label="Other countries allowed">{summary.limits.allow_countries.map((c) => <li key={c}>{countryName(c)}</li>)}</ul></>}</dd>
      </dl>
      <div class="meters">
        <Meter id="meter-spend" label="Daily spend cap" value={cap.today_cents} max={cap.daily_cap_cents}
          text={cap.daily_cap_cents > 0
            ? `${money(cap.today_cents)} of ${money(cap.daily_cap_cents)} spent today (${percent(cap.today_cents, cap.daily_cap_cents)}); ${money(cap.remaining_today_cents)} left before calls are refused with spend_cap_reached. Resets at midnight UTC.`
            : 'The daily spend cap is $0.00: every paid call is refused.'} />
        {plan.included_voice_minutes === null
          ? (
            <div class="meter">
              <p class="meter-label">Voice minutes</p>
              <p class="hint" id="meter-minutes-text">No monthly minute limit on your plan: {plan.used_voice_minutes} billed minutes this month.</p>
            </div>
          )
          : (
            <Meter id="meter-minutes" label="Voice minutes this month" value={plan.used_voice_minutes} max={plan.included_voice_minutes}
              text={`${plan.used_voice_minutes} of ${plan.included_voice_minutes} included minutes used (${percent(plan.used_voice_minutes, plan.included_voice_minutes)}); ${plan.remaining_voice_minutes ?? 0} left. At 0 calls are refused with voice_usage_exhausted until the 1st (UTC).`} />
          )}
        <Meter id="meter-channels" label="Channels in use" value={summary.limits.channels_in_use} max={summary.limits.channel_limit}
          text={`${summary.limits.channels_in_use} of ${summary.limits.channel_limit} channels held right now (a bridge call holds 2, an AI or browser call 1); a call beyond them is refused with channel_limit_exceeded.`} />
      </div>
      <p class="hint">At most {summary.limits.calls_per_minute} new calls per minute (more are refused with rate_limited). The limits are set by your operator.</p>
    </section>
  );
}

/** A labelled <meter> (high at 80 %, the colour turns) with its numbers in words. */
function Meter({ id, label, value, max, text }: { id: string; label: string; value: number; max: number; text: string }) {
  const near = max > 0 && value / max >= 0.8;
  return (
    <div class={`meter${near ? ' near' : ''}`}>
      <label class="meter-label" for={id}>{label}</label>
      <meter id={id} min={0} max={Math.max(max, 1)} value={Math.min(value, Math.max(max, 1))} low={max * 0.8} high={max * 0.95} optimum={0}
        aria-describedby={`${id}-text`} />
      <p class="hint" id={`${id}-text`}>{text}</p>
    </div>
  );
}

function SpendChart({ id, title, periods, name, empty }: { id: string; title: string; periods: Period[]; name: (p: string) => string; empty: string }) {
  const total = periods.reduce((s, p) => s + p.spend_cents.total, 0);
  const data = useMemo<uPlot.AlignedData>(() => [periods.map((p) => periodSeconds(p.period)), periods.map((p) => p.spend_cents.total / 100)], [periods]);
  const peak = periods.reduce((best, p) => (p.spend_cents.total > best.spend_cents.total ? p : best), periods[0]);
  const monthly = id === 'monthly';
  const label = `${title}: ${money(total)} in all${total > 0 ? `, the most ${money(peak.spend_cents.total)} on ${name(peak.period)}` : ''}.`;
  return (
    <section aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`}>{title}</h2>
      {total === 0 ? <p class="empty">{empty}</p> : (
        <Chart label={label} data={data} options={() => ({
          tzDate: utc,
          legend: { show: false },
          cursor: { show: false },
          scales: { x: { time: true, range: (_u, lo, hi) => [lo - (monthly ? 16 : 0.6) * 86_400, hi + (monthly ? 16 : 0.6) * 86_400] }, y: { range: (_u, _lo, hi) => [0, Math.max(hi * 1.1, 0.01)] } },
          axes: [axis(monthly ? { values: '{MMM}', splits: (u) => u.data[0] as number[] } : { values: '{M}/{D}', incrs: DAY_INCRS }), axis({ values: (_u, ticks) => ticks.map((v) => `$${v.toFixed(2)}`), size: 64 })],
          series: [{}, { label: 'Spend (USD)', stroke: '#0b57d0', fill: 'rgba(11, 87, 208, 0.55)', width: 1, paths: bars, points: { show: false } }],
        })} />
      )}
      <ChartTable label={`${title}, values`}>
        <thead>
          <tr><th scope="col">{monthly ? 'Month' : 'Day'}</th><th scope="col">Calls</th><th scope="col">Billed minutes</th>
            <th scope="col">SMS segments</th><th scope="col">Spend</th></tr>
        </thead>
        <tbody>
          {periods.map((p) => (
            <tr key={p.period} data-period={p.period}>
              <th scope="row">{name(p.period)}</th>
              <td>{p.calls.total}</td><td>{p.minutes.total}</td><td>{p.sms_segments}</td><td>{money(p.spend_cents.total)}</td>
            </tr>
          ))}
        </tbody>
      </ChartTable>
    </section>
  );
}
