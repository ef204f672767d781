// Caller trust: the organization's enterprise registration and its Branded Calling display (docs/reference/caller-trust.md).
// Registration: with none yet (and caller_trust:write), a guided form in four steps (business details, address,
// contact, review) creates the DRAFT (POST /v1/caller-trust/enterprise); a DRAFT's Letter of Authorization is
// generated (POST .../{id}/generate-loa), previewed in the page (an <iframe> of GET .../{id}/loa, same origin, the
// session cookie authenticates it; the console's CSP allows frame-src 'self') and signed there
// (POST .../{id}/sign-and-submit); a REJECTED one is signed again with an optional EIN correction (POST .../{id}/resign).
// The status says what happens next; while vetting runs the page reads the registration again every few seconds
// (there is no live stream of registrations). Branded Calling: the Display Identity Record's form (PUT
// /v1/caller-trust/brand with the logo as base64, previewed before it is sent and as stored by GET .../brand/logo),
// submit for review (POST .../brand/submit), its review status and per-network rollout. Read-only roles see the same
// states without a single write control.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, messageOf, type Session } from '../api/client.ts';
import type { paths } from '../api/schema';
import { ErrorLine, Loading, TableWrap, useSubmit } from '../components.tsx';
import { dateTime } from '../format.ts';
import { PageTitle } from '../router.tsx';
import { detailOf } from './numbers.tsx';

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
export type Registration = Json<paths['/v1/caller-trust/enterprise/{id}']['get']['responses'][200]>['data'];
type NewRegistration = NonNullable<paths['/v1/caller-trust/enterprise']['post']['requestBody']>['content']['application/json'];
export type Brand = Json<paths['/v1/caller-trust/brand']['get']['responses'][200]>['data'];
type BrandBody = NonNullable<paths['/v1/caller-trust/brand']['put']['requestBody']>['content']['application/json'];
type LogoType = 'image/png' | 'image/jpeg' | 'image/webp';

const BUSINESS_TYPES: [NewRegistration['business_type'], string][] = [
  ['sole_proprietorship', 'Sole proprietorship'], ['partnership', 'Partnership'], ['llc', 'Limited liability company (LLC)'],
  ['corporation', 'Corporation'], ['nonprofit', 'Nonprofit organization'], ['government', 'Government entity'],
];
const STATUS_LABEL: Record<Registration['status'], string> = {
  DRAFT: 'Draft', PENDING_VETTING: 'Vetting in progress', APPROVED: 'Approved', REJECTED: 'Rejected',
};
const BRAND_STATUS_LABEL: Record<Brand['status'], string> = { draft: 'Draft', submitted: 'In review', approved: 'Approved' };
const NETWORK_LABEL: Record<string, string> = { ATT: 'AT&T', TMOBILE: 'T-Mobile', VERIZON: 'Verizon' };
/** How often a registration in vetting or a brand in review/rollout is read again. */
const REFRESH_MS = 3000;

/** A URL of ours as a path on this origin: the API answers absolute URLs (its configured public base), the page
 *  loads them from the origin it was served from (same cookie, same CSP). */
const samePath = (url: string): string => { const u = new URL(url, location.origin); return `${u.pathname}${u.search}`; };

/** Reads something every REFRESH_MS while `on`, and stops when the page leaves. */
function useRefresh(on: boolean, fn: () => void) {
  const f = useRef(fn);
  f.current = fn;
  useEffect(() => {
    if (!on) return;
    const id = setInterval(() => f.current(), REFRESH_MS);
    return () => clearInterval(id);
  }, [on]);
}

export function CallerTrustPage({ session }: { session: Session }) {
  const can = (s: string) => session.scopes.includes(s);
  return (
    <>
      <PageTitle title="Caller trust">Caller trust</PageTitle>
      <p class="lead">Register your business once (legal details and a signed Letter of Authorization), then show your name, logo and
        call reason on the phones you call with Branded Calling.</p>
      {can('caller_trust:read') && <EnterpriseSection canWrite={can('caller_trust:write')} canReadNumbers={can('phone_numbers:read')} />}
      {can('brand:read') && <BrandSection canWrite={can('brand:write')} />}
    </>
  );
}

// ---------------------------------------------------------------------------------------------------------------------
// Enterprise registration

function EnterpriseSection({ canWrite, canReadNumbers }: { canWrite: boolean; canReadNumbers: boolean }) {
  const [reg, setReg] = useState<Registration | null | undefined>(undefined); // undefined: loading; null: none yet
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [editing, setEditing] = useState(false);

  const load = async () => {
    try {
      const { data, error: err, response } = await api.GET('/v1/caller-trust/enterprise');
      // A status moved on since the last notice (vetting decided): the notice is about the past, the status says it all.
      if (data && reg && data.data.status !== reg.status) setNotice(null);
      if (data) { setError(null); setReg(data.data); } else if (response.status === 404) { setError(null); setReg(null); } else setError(messageOf(err, response));
    } catch {
      setError('The server could not be reached.');
    }
  };
  useEffect(() => { void load(); }, []);
  useRefresh(reg?.status === 'PENDING_VETTING', () => void load());

  const changed = (r: Registration, message: string) => { setReg(r); setEditing(false); setNotice(message); };

  return (
    <section aria-labelledby="enterprise-heading">
      <h2 id="enterprise-heading">Enterprise registration</h2>
      {notice && <p role="status" class="notice">{notice}</p>}
      {error && reg === undefined ? <ErrorLine message={`The registration could not be loaded: ${error}`} retry={() => void load()} />
        : reg === undefined ? <Loading what="the registration" />
        : reg === null ? (canWrite
          ? <RegistrationWizard canReadNumbers={canReadNumbers} onDone={(r) => changed(r, 'Registration saved as a draft. Next: review and sign the Letter of Authorization below.')} />
          : <p class="empty">No enterprise registration yet. An owner, admin or developer of your organization can register the business here.</p>)
        : editing ? <RegistrationWizard canReadNumbers={canReadNumbers} initial={reg} onCancel={() => setEditing(false)}
            onDone={(r) => changed(r, 'Draft updated. The letter is generated again from the new details.')} />
        : (
          <>
            {error && <ErrorLine message={`The registration could not be refreshed: ${error}`} retry={() => void load()} />}
            <RegistrationStatus reg={reg} onRefresh={() => void load()} />
            <RegistrationDetails reg={reg} />
            {canWrite && reg.status === 'DRAFT' && (
              <p><button type="button" class="secondary" onClick={() => { setNotice(null); setEditing(true); }}>Edit the business details</button></p>
            )}
            <LetterOfAuthorization reg={reg} canWrite={canWrite} onChanged={changed} />
          </>
        )}
    </section>
  );
}

/** The status with what happens next. */
function RegistrationStatus({ reg, onRefresh }: { reg: Registration; onRefresh: () => void }) {
  const next: Record<Registration['status'], string> = {
    DRAFT: reg.loa.unsigned
      ? 'Next: read the Letter of Authorization below and sign it; signing submits the registration for vetting.'
      : 'Next: generate the Letter of Authorization below, read it and sign it; signing submits the registration for vetting.',
    PENDING_VETTING: 'The vetting provider is checking the business details and the signed letter. This page updates when it decides; nothing is needed from you.',
    APPROVED: 'Your business is registered. Branded Calling can now be submitted for review, and own-brand reputation remediation is available.',
    REJECTED: 'Vetting refused the registration for the reasons below. Correct what was wrong and sign the letter again to start a new vetting round.',
  };
  return (
    <div class={`card status-card reg-${reg.status.toLowerCase()}`}>
      <p class="heading-row">
        <span>Status: <span class="status" data-testid="registration-status">{STATUS_LABEL[reg.status]}</span></span>
        {reg.status === 'PENDING_VETTING' && <button type="button" class="secondary small" onClick={onRefresh}>Refresh status</button>}
      </p>
      <p role="status">{next[reg.status]}</p>
      {reg.rejection_reasons.length > 0 && (
        <>
          <h3>Why it was rejected</h3>
          <ul aria-label="Rejection reasons">{reg.rejection_reasons.map((r) => <li key={r}>{r}</li>)}</ul>
        </>
      )}
      <p class="hint">Created {dateTime(reg.created_at)}{reg.submitted_at ? ` · submitted ${dateTime(reg.submitted_at)}` : ''}{reg.decided_at ? ` · decided ${dateTime(reg.decided_at)}` : ''}</p>
    </div>
  );
}

function RegistrationDetails({ reg }: { reg: Registration }) {
  const a = reg.registered_address;
  const c = reg.authorized_contact;
  return (
    <details class="card">
      <summary>Business details of {reg.legal_name}</summary>
      <dl class="summary">
        <dt>Legal name</dt><dd>{reg.legal_name}</dd>
        <dt>EIN</dt><dd>{reg.ein}</dd>
        <dt>Business type</dt><dd>{BUSINESS_TYPES.find(([v]) => v === reg.business_type)?.[1] ?? reg.business_type}</dd>
        <dt>Industry</dt><dd>{reg.industry}</dd>
        <dt>Website</dt><dd>{reg.website}</dd>
        <dt>Registered address</dt><dd>{[a.line1, a.line2, `${a.city}, ${a.state} ${a.postal_code}`, a.country].filter(Boolean).join(', ')}</dd>
        <dt>Authorized contact</dt><dd>{c.name}, {c.title} ({c.email}, {c.phone})</dd>
        <dt>Numbers covered</dt><dd>{reg.phone_numbers.join(', ')}</dd>
      </dl>
    </details>
  );
}

type Draft = {
  legal_name: string; ein: string; business_type: NewRegistration['business_type']; industry: string; website: string;
  line1: string; line2: string; city: string; state: string; postal_code: string;
  contact_name: string; contact_title: string; contact_email: string; contact_phone: string; phone_numbers: string[];
};

const draftOf = (r?: Registration): Draft => ({
  legal_name: r?.legal_name ?? '', ein: r?.ein ?? '', business_type: r?.business_type ?? 'llc', industry: r?.industry ?? '',
  website: r?.website ?? '', line1: r?.registered_address.line1 ?? '', line2: r?.registered_address.line2 ?? '',
  city: r?.registered_address.city ?? '', state: r?.registered_address.state ?? '', postal_code: r?.registered_address.postal_code ?? '',
  contact_name: r?.authorized_contact.name ?? '', contact_title: r?.authorized_contact.title ?? '',
  contact_email: r?.authorized_contact.email ?? '', contact_phone: r?.authorized_contact.phone ?? '', phone_numbers: r?.phone_numbers ?? [],
});

const bodyOf = (d: Draft): NewRegistration => ({
  legal_name: d.legal_name.trim(), ein: d.ein.trim(), business_type: d.business_type, industry: d.industry.trim(), website: d.website.trim(),
  registered_address: { line1: d.line1.trim(), line2: d.line2.trim() || null, city: d.city.trim(), state: d.state.trim().toUpperCase(),
    postal_code: d.postal_code.trim(), country: 'US' },
  authorized_contact: { name: d.contact_name.trim(), title: d.contact_title.trim(), email: d.contact_email.trim(), phone: d.contact_phone.trim() },
  phone_numbers: d.phone_numbers,
});

const STEPS = ['Business details', 'Address', 'Contact', 'Review'] as const;
/** The step a field of the API's `fields` belongs to (a refusal sends the person back to it). */
const stepOfField = (f: string): number =>
  f.startsWith('registered_address') ? 1 : f.startsWith('authorized_contact') || f.startsWith('phone_numbers') ? 2 : f === 'body' ? 3 : 0;

/** The guided form: one step at a time (the browser checks each step's fields before the next), a review of
 *  everything, then one POST (or, for a draft being edited, one PATCH). */
function RegistrationWizard({ initial, canReadNumbers, onDone, onCancel }: {
  initial?: Registration; canReadNumbers: boolean; onDone: (r: Registration) => void; onCancel?: () => void;
}) {
  const [step, setStep] = useState(0);
  const [d, setD] = useState<Draft>(() => draftOf(initial));
  const [numbers, setNumbers] = useState<string[] | null>(null);
  const [numbersError, setNumbersError] = useState<string | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const { busy, error, setError, run } = useSubmit();
  const set = <K extends keyof Draft>(k: K) => (v: Draft[K]) => setD((x) => ({ ...x, [k]: v }));
  const input = (k: keyof Draft) => ({ value: d[k] as string, onInput: (e: Event) => set(k)((e.currentTarget as HTMLInputElement).value as never) });

  useEffect(() => {
    if (!canReadNumbers) return;
    (async () => {
      const { data, error: err, response } = await api.GET('/v1/phone-numbers', { params: { query: { limit: 100 } } });
      if (!data) return setNumbersError(messageOf(err, response));
      setNumbers(data.data.filter((n) => n.status !== 'RELEASED').map((n) => n.phone_number));
    })().catch(() => setNumbersError('The server could not be reached.'));
  }, []);

  const go = (to: number) => { setStep(to); setTimeout(() => heading.current?.focus(), 0); };
  const nextStep = (e: Event) => {
    e.preventDefault();
    setError(null);
    if (step === 2 && d.phone_numbers.length === 0) return setError('Choose at least one number for the letter to cover.');
    go(step + 1);
  };
  const submit = (e: Event) => run(e, async () => {
    const body = bodyOf(d);
    const res = initial
      ? await api.PATCH('/v1/caller-trust/enterprise/{id}', { params: { path: { id: initial.id } }, body })
      : await api.POST('/v1/caller-trust/enterprise', { body });
    if (res.data) return onDone(res.data.data);
    const fields = (res.error as { error?: { fields?: Record<string, string> } } | undefined)?.error?.fields;
    if (fields) go(Math.min(...Object.keys(fields).map(stepOfField)));
    return detailOf(res.error, res.response);
  });

  const stepTitle = `Step ${step + 1} of ${STEPS.length}: ${STEPS[step]}`;
  return (
    <div class="card wizard">
      <h3>{initial ? 'Edit the registration' : 'Register your business'}</h3>
      <ol class="steps" aria-label="Registration steps">
        {STEPS.map((s, i) => (
          <li key={s} class={i < step ? 'done' : i === step ? 'current' : ''} aria-current={i === step ? 'step' : undefined}>
            <span class="step-n" aria-hidden="true">{i + 1}</span> {s}{i < step ? <span class="visually-hidden"> (done)</span> : null}
          </li>
        ))}
      </ol>
      <progress max={STEPS.length} value={step + 1} aria-label="Registration progress">{step + 1} of {STEPS.length}</progress>
      <h4 ref={heading} tabIndex={-1}>{stepTitle}</h4>
      <form onSubmit={(e) => (step < 3 ? nextStep(e) : void submit(e))} aria-label={stepTitle}>
        {step === 0 && (
          <>
            <div class="field">
              <label for="ent-legal-name">Legal business name</label>
              <input id="ent-legal-name" required maxLength={200} autoComplete="organization" {...input('legal_name')} aria-describedby="ent-legal-name-hint" />
              <p id="ent-legal-name-hint" class="hint">Exactly as registered with the IRS, e.g. Acme Dental Group, LLC.</p>
            </div>
            <div class="field">
              <label for="ent-ein">EIN</label>
              <input id="ent-ein" required pattern="[0-9]{2}-[0-9]{7}" inputMode="numeric" {...input('ein')} aria-describedby="ent-ein-hint" />
              <p id="ent-ein-hint" class="hint">Employer Identification Number, as NN-NNNNNNN.</p>
            </div>
            <div class="field">
              <label for="ent-type">Business type</label>
              <select id="ent-type" value={d.business_type} onChange={(e) => set('business_type')(e.currentTarget.value as Draft['business_type'])}>
                {BUSINESS_TYPES.map(([v, l]) => <option key={v} value={v}>{l}</option>)}
              </select>
            </div>
            <div class="field">
              <label for="ent-industry">Industry</label>
              <input id="ent-industry" required maxLength={100} {...input('industry')} />
            </div>
            <div class="field">
              <label for="ent-website">Website</label>
              <input id="ent-website" type="url" required maxLength={300} placeholder="https://" {...input('website')} />
            </div>
          </>
        )}
        {step === 1 && (
          <>
            <div class="field">
              <label for="ent-line1">Street address</label>
              <input id="ent-line1" required maxLength={200} autoComplete="address-line1" {...input('line1')} />
            </div>
            <div class="field">
              <label for="ent-line2">Suite, floor or unit (optional)</label>
              <input id="ent-line2" maxLength={200} autoComplete="address-line2" {...input('line2')} />
            </div>
            <div class="field">
              <label for="ent-city">City</label>
              <input id="ent-city" required maxLength={100} autoComplete="address-level2" {...input('city')} />
            </div>
            <div class="field">
              <label for="ent-state">State</label>
              <input id="ent-state" required maxLength={2} pattern="[A-Za-z]{2}" autoComplete="address-level1" {...input('state')} aria-describedby="ent-state-hint" />
              <p id="ent-state-hint" class="hint">The two-letter code of a US state or territory, e.g. TX.</p>
            </div>
            <div class="field">
              <label for="ent-zip">ZIP code</label>
              <input id="ent-zip" required pattern="[0-9]{5}(-[0-9]{4})?" inputMode="numeric" autoComplete="postal-code" {...input('postal_code')} />
            </div>
            <p class="hint">Country: United States (the only country registrations are taken for).</p>
          </>
        )}
        {step === 2 && (
          <>
            <div class="field">
              <label for="ent-contact-name">Contact name</label>
              <input id="ent-contact-name" required maxLength={200} autoComplete="name" {...input('contact_name')} />
            </div>
            <div class="field">
              <label for="ent-contact-title">Contact title</label>
              <input id="ent-contact-title" required maxLength={200} autoComplete="organization-title" {...input('contact_title')} />
            </div>
            <div class="field">
              <label for="ent-contact-email">Contact email</label>
              <input id="ent-contact-email" type="email" required autoComplete="email" {...input('contact_email')} />
            </div>
            <div class="field">
              <label for="ent-contact-phone">Contact phone</label>
              <input id="ent-contact-phone" type="tel" required pattern="\+[1-9][0-9]{6,14}" autoComplete="tel" {...input('contact_phone')} aria-describedby="ent-contact-phone-hint" />
              <p id="ent-contact-phone-hint" class="hint">In international format, e.g. +15125550100.</p>
            </div>
            <fieldset>
              <legend>Numbers the letter covers</legend>
              {!canReadNumbers ? <p class="hint">Your role cannot list the organization's numbers.</p>
                : numbersError ? <p role="alert" class="error">The numbers could not be loaded: {numbersError}</p>
                : !numbers ? <Loading what="numbers" />
                : numbers.length === 0 ? <p class="empty">Your organization holds no numbers yet: buy one on the Numbers page first.</p>
                : (
                  <div class="checks">
                    {numbers.map((n) => (
                      <label class="check" key={n}>
                        <input type="checkbox" checked={d.phone_numbers.includes(n)}
                          onChange={(e) => set('phone_numbers')(e.currentTarget.checked ? [...d.phone_numbers, n] : d.phone_numbers.filter((x) => x !== n))} />
                        {n}
                      </label>
                    ))}
                  </div>
                )}
            </fieldset>
          </>
        )}
        {step === 3 && (
          <dl class="summary" aria-label="Review">
            <dt>Legal name</dt><dd>{d.legal_name}</dd>
            <dt>EIN</dt><dd>{d.ein}</dd>
            <dt>Business type</dt><dd>{BUSINESS_TYPES.find(([v]) => v === d.business_type)?.[1]}</dd>
            <dt>Industry</dt><dd>{d.industry}</dd>
            <dt>Website</dt><dd>{d.website}</dd>
            <dt>Registered address</dt><dd>{[d.line1, d.line2, `${d.city}, ${d.state.toUpperCase()} ${d.postal_code}`, 'US'].filter(Boolean).join(', ')}</dd>
            <dt>Authorized contact</dt><dd>{d.contact_name}, {d.contact_title} ({d.contact_email}, {d.contact_phone})</dd>
            <dt>Numbers covered</dt><dd>{d.phone_numbers.join(', ')}</dd>
          </dl>
        )}
        {error && <p role="alert" class="error">{error}</p>}
        <div class="actions wizard-actions">
          {onCancel && <button type="button" class="secondary" onClick={onCancel}>Cancel</button>}
          {step > 0 && <button type="button" class="secondary" onClick={() => { setError(null); go(step - 1); }}>Back</button>}
          {step < 3 ? <button type="submit">Next</button>
            : <button type="submit" disabled={busy}>{busy ? 'Saving…' : initial ? 'Save changes' : 'Create registration'}</button>}
        </div>
      </form>
    </div>
  );
}

/** The letter: generate it, preview it in the page, sign it (or sign again after a rejection). */
function LetterOfAuthorization({ reg, canWrite, onChanged }: {
  reg: Registration; canWrite: boolean; onChanged: (r: Registration, message: string) => void;
}) {
  const gen = useSubmit();
  const generate = (e: Event) => gen.run(e, async () => {
    const { data, error, response } = await api.POST('/v1/caller-trust/enterprise/{id}/generate-loa', { params: { path: { id: reg.id } } });
    if (!data) return detailOf(error, response);
    onChanged(data.data, 'The Letter of Authorization is ready: read it below, then sign it.');
  });
  const signed = reg.loa.signed;
  const unsigned = reg.loa.unsigned;
  const shown = signed ?? unsigned;
  const version = signed ? 'signed' : 'unsigned';
  const signable = canWrite && (reg.status === 'DRAFT' || reg.status === 'REJECTED');
  return (
    <section aria-labelledby="loa-heading" class="card">
      <h3 id="loa-heading">Letter of Authorization</h3>
      <p class="hint">The letter authorizes the platform's operator and its partners to vet your business and register your numbers and
        display with the carriers. {reg.loa.signature_method === 'uploaded' ? 'The signed letter was uploaded.' : ''}</p>
      {!shown ? (
        canWrite && reg.status === 'DRAFT'
          ? <form onSubmit={(e) => void generate(e)}>
              <p class="empty">No letter yet: generate it from the business details to read and sign it.</p>
              {gen.error && <p role="alert" class="error">{gen.error}</p>}
              <button type="submit" disabled={gen.busy}>{gen.busy ? 'Generating…' : 'Generate the letter'}</button>
            </form>
          : <p class="empty">No letter has been generated yet.</p>
      ) : (
        <>
          <iframe class="pdf" src={samePath(shown.url)} title={`Letter of Authorization (${version})`} />
          <p class="hint">
            <a href={samePath(shown.url)} target="_blank" rel="noopener">Open the {version} letter (PDF)</a>
            {' '}· generated {dateTime(shown.created_at)} · SHA-256 <span class="mono sha">{shown.sha256}</span>
          </p>
        </>
      )}
      {signable && (shown || reg.status === 'REJECTED') && <SignForm reg={reg} onSigned={(r) => onChanged(r, 'Signed and submitted: vetting has started.')} />}
    </section>
  );
}

function SignForm({ reg, onSigned }: { reg: Registration; onSigned: (r: Registration) => void }) {
  const c = reg.authorized_contact;
  const [name, setName] = useState(c.name);
  const [title, setTitle] = useState(c.title);
  const [email, setEmail] = useState(c.email);
  const [typed, setTyped] = useState('');
  const [consent, setConsent] = useState(false);
  const [ein, setEin] = useState(reg.ein);
  const { busy, error, run } = useSubmit();
  const resign = reg.status === 'REJECTED';

  const submit = (e: Event) => run(e, async () => {
    if (!consent) return 'Tick the consent box to sign.';
    const body = { signer_name: name.trim(), signer_title: title.trim(), signer_email: email.trim(), typed_signature: typed.trim(), consent: true as const };
    const res = resign
      ? await api.POST('/v1/caller-trust/enterprise/{id}/resign', { params: { path: { id: reg.id } },
          body: { ...body, ...(ein.trim() !== reg.ein ? { changes: { ein: ein.trim() } } : {}) } })
      : await api.POST('/v1/caller-trust/enterprise/{id}/sign-and-submit', { params: { path: { id: reg.id } }, body });
    if (!res.data) return detailOf(res.error, res.response);
    onSigned(res.data.data);
  });

  return (
    <form class="sign" onSubmit={(e) => void submit(e)} aria-labelledby="sign-heading">
      <h4 id="sign-heading">{resign ? 'Correct and sign again' : 'Sign the letter'}</h4>
      {resign && (
        <div class="field">
          <label for="sign-ein">EIN</label>
          <input id="sign-ein" required pattern="[0-9]{2}-[0-9]{7}" value={ein} onInput={(e) => setEin(e.currentTarget.value)} aria-describedby="sign-ein-hint" />
          <p id="sign-ein-hint" class="hint">Correct it if it was wrong; a new letter is generated with it and signed.</p>
        </div>
      )}
      <div class="field">
        <label for="sign-name">Signer name</label>
        <input id="sign-name" required maxLength={200} autoComplete="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="sign-title">Signer title</label>
        <input id="sign-title" required maxLength={200} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="sign-email">Signer email</label>
        <input id="sign-email" type="email" required autoComplete="email" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="sign-typed">Signature (type your full name)</label>
        <input id="sign-typed" required maxLength={120} class="signature" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} aria-describedby="sign-typed-hint" />
        <p id="sign-typed-hint" class="hint">Printed on the letter in a script face, with an audit-trail page (who signed, when, from where).</p>
      </div>
      <label class="check">
        <input type="checkbox" checked={consent} onChange={(e) => setConsent(e.currentTarget.checked)} />
        I am authorized to sign for {reg.legal_name} and agree to sign this letter electronically.
      </label>
      {error && <p role="alert" class="error">{error}</p>}
      <div class="actions">
        <button type="submit" disabled={busy}>{busy ? 'Signing…' : resign ? 'Sign again and resubmit' : 'Sign and submit'}</button>
      </div>
    </form>
  );
}

// ---------------------------------------------------------------------------------------------------------------------
// Branded Calling

function BrandSection({ canWrite }: { canWrite: boolean }) {
  const [brand, setBrand] = useState<Brand | null | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const submitting = useSubmit();

  const load = async () => {
    try {
      const { data, error: err, response } = await api.GET('/v1/caller-trust/brand');
      if (data && brand && data.data.status !== brand.status) setNotice(null);
      if (data) { setError(null); setBrand(data.data); } else if (response.status === 404) { setError(null); setBrand(null); } else setError(messageOf(err, response));
    } catch {
      setError('The server could not be reached.');
    }
  };
  useEffect(() => { void load(); }, []);
  const rollingOut = brand?.status === 'submitted' || (brand?.status === 'approved' && brand.networks.some((n) => n.status !== 'live'));
  useRefresh(!!rollingOut, () => void load());

  const submit = (e: Event) => submitting.run(e, async () => {
    setNotice(null);
    const { data, error: err, response } = await api.POST('/v1/caller-trust/brand/submit');
    if (!data) return detailOf(err, response);
    setBrand(data.data);
    setNotice('Submitted for review: the carriers show your display once it is approved and rolled out.');
  });

  const complete = !!brand && !!brand.display_name && !!brand.call_reason && !!brand.logo;
  return (
    <section aria-labelledby="brand-heading">
      <h2 id="brand-heading">Branded Calling</h2>
      <p class="hint">What called phones show: your business name, a logo and why you call. It needs an approved enterprise registration,
        and the display name must be the approved legal name (a trailing LLC, Inc. and the like may be left out).</p>
      {notice && <p role="status" class="notice">{notice}</p>}
      {error && brand === undefined ? <ErrorLine message={`Branded Calling could not be loaded: ${error}`} retry={() => void load()} />
        : brand === undefined ? <Loading what="Branded Calling" />
        : (
          <>
            {error && <ErrorLine message={`Branded Calling could not be refreshed: ${error}`} retry={() => void load()} />}
            {brand === null
              ? <p class="empty">No branded display yet.{canWrite ? ' Fill in the form below and save it as a draft, then submit it for review.' : ' An owner, admin or developer of your organization can set it up here.'}</p>
              : <BrandStatus brand={brand} />}
            {canWrite && brand?.status !== 'submitted' && (
              <BrandForm brand={brand} onSaved={(b) => { setBrand(b); setNotice(b.status === 'draft' ? 'Saved as a draft. Submit it for review when it is ready.' : 'Saved.'); }} />
            )}
            {canWrite && brand?.status === 'draft' && (
              <form onSubmit={(e) => void submit(e)} class="card">
                <h3>Submit for review</h3>
                <p class="hint">{complete ? 'The reviewer checks the display against your approved registration, then each carrier turns it on.'
                  : 'A display name, a call reason and a logo are needed before it can be submitted.'}</p>
                {submitting.error && <p role="alert" class="error">{submitting.error}</p>}
                <button type="submit" disabled={submitting.busy || !complete}>{submitting.busy ? 'Submitting…' : 'Submit for review'}</button>
              </form>
            )}
          </>
        )}
    </section>
  );
}

function BrandStatus({ brand }: { brand: Brand }) {
  const live = brand.networks.filter((n) => n.status === 'live').length;
  const next = brand.status === 'draft' ? 'Not shown to anyone yet: submit it for review when the name, reason and logo are right.'
    : brand.status === 'submitted' ? 'In review: the reviewer checks the display against your approved registration. This page updates by itself.'
    : live === brand.networks.length ? 'Live on every network: called phones show your name, logo and call reason. A change needs a new review.'
    : `Approved, rolling out: live on ${live} of ${brand.networks.length} networks. This page updates by itself.`;
  return (
    <div class="card brand-card">
      <div class="brand-preview">
        {brand.logo
          ? <img src={samePath(brand.logo.url)} width={96} height={96} alt={`Logo of ${brand.display_name ?? 'your business'} as stored`} />
          : <div class="no-logo" aria-hidden="true">No logo</div>}
        <div>
          <p class="display-name">{brand.display_name ?? '—'}</p>
          <p class="hint">{brand.call_reason ?? 'No call reason yet'}</p>
        </div>
      </div>
      <p>Review status: <span class="status" data-testid="brand-status">{BRAND_STATUS_LABEL[brand.status]}</span></p>
      <p role="status">{next}</p>
      {brand.networks.length > 0 && (
        <TableWrap label="Rollout per network">
          <table aria-label="Rollout per network">
            <thead><tr><th scope="col">Network</th><th scope="col">Status</th><th scope="col">Updated</th></tr></thead>
            <tbody>
              {brand.networks.map((n) => (
                <tr key={n.network}><th scope="row">{NETWORK_LABEL[n.network] ?? n.network}</th><td>{n.status}</td><td>{dateTime(n.updated_at)}</td></tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      {brand.logo && <p class="hint">Logo as stored: {brand.logo.width} × {brand.logo.height} px PNG, {Math.ceil(brand.logo.size_bytes / 1024)} KiB.</p>}
      {brand.submitted_at && <p class="hint">Submitted {dateTime(brand.submitted_at)}{brand.approved_at ? ` · approved ${dateTime(brand.approved_at)}` : ''}</p>}
    </div>
  );
}

const LOGO_TYPES: LogoType[] = ['image/png', 'image/jpeg', 'image/webp'];
const LOGO_MAX_BYTES = 512 * 1024;

/** Reads a file as a data: URL (the console's CSP allows data: images, not blob:). */
const dataUrlOf = (f: File) => new Promise<string>((resolve, reject) => {
  const r = new FileReader();
  r.onload = () => resolve(r.result as string);
  r.onerror = () => reject(r.error);
  r.readAsDataURL(f);
});

function BrandForm({ brand, onSaved }: { brand: Brand | null; onSaved: (b: Brand) => void }) {
  const [name, setName] = useState(brand?.display_name ?? '');
  const [reason, setReason] = useState(brand?.call_reason ?? '');
  const [logo, setLogo] = useState<{ type: LogoType; url: string; side: string } | null>(null);
  const [logoError, setLogoError] = useState<string | null>(null);
  const fileRef = useRef<HTMLInputElement>(null);
  const { busy, error, run } = useSubmit();

  const pick = async (f: File | undefined) => {
    setLogo(null);
    setLogoError(null);
    if (!f) return;
    if (!LOGO_TYPES.includes(f.type as LogoType)) return setLogoError('Choose a PNG, JPEG or WebP image.');
    if (f.size > LOGO_MAX_BYTES) return setLogoError(`The image is ${Math.ceil(f.size / 1024)} KiB; at most 512 KiB.`);
    const url = await dataUrlOf(f);
    const side = await new Promise<string>((resolve) => {
      const img = new Image();
      img.onload = () => resolve(img.naturalWidth === img.naturalHeight ? `${img.naturalWidth} × ${img.naturalHeight} px`
        : `${img.naturalWidth} × ${img.naturalHeight} px: not square, it will be refused`);
      img.onerror = () => resolve('the browser cannot show it');
      img.src = url;
    });
    setLogo({ type: f.type as LogoType, url, side });
  };

  const save = (e: Event) => run(e, async () => {
    const body: BrandBody = {};
    if (name.trim() !== (brand?.display_name ?? '')) body.display_name = name.trim();
    if (reason.trim() !== (brand?.call_reason ?? '')) body.call_reason = reason.trim();
    if (logo) body.logo = { content_type: logo.type, data: logo.url.slice(logo.url.indexOf(',') + 1) };
    if (Object.keys(body).length === 0) return 'Nothing changed.';
    const { data, error: err, response } = await api.PUT('/v1/caller-trust/brand', { body });
    if (!data) return detailOf(err, response);
    setLogo(null);
    if (fileRef.current) fileRef.current.value = '';
    onSaved(data.data);
  });

  return (
    <form class="card" onSubmit={(e) => void save(e)} aria-labelledby="brand-form-heading">
      <h3 id="brand-form-heading">{brand ? 'Change the display' : 'Set up the display'}</h3>
      {brand?.status === 'approved' && <p class="hint">Saving a change turns the display back into a draft that needs a new review.</p>}
      <div class="field">
        <label for="brand-name">Display name</label>
        <input id="brand-name" required maxLength={64} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="brand-reason">Call reason</label>
        <input id="brand-reason" required maxLength={120} value={reason} onInput={(e) => setReason(e.currentTarget.value)} aria-describedby="brand-reason-hint" />
        <p id="brand-reason-hint" class="hint">Shown under the name, e.g. Appointment reminders and scheduling.</p>
      </div>
      <div class="field">
        <label for="brand-logo">Logo</label>
        <input id="brand-logo" ref={fileRef} type="file" accept={LOGO_TYPES.join(',')} onChange={(e) => void pick(e.currentTarget.files?.[0])} aria-describedby="brand-logo-hint" />
        <p id="brand-logo-hint" class="hint">A square PNG, JPEG or WebP image, 200 to 4096 px a side, at most 512 KiB.{brand?.logo ? ' Leave empty to keep the current logo.' : ''}</p>
      </div>
      {logoError && <p role="alert" class="error">{logoError}</p>}
      {logo && (
        <div class="brand-preview">
          <img src={logo.url} width={96} height={96} alt="Preview of the chosen logo" />
          <p class="hint">{logo.side}. Not saved yet.</p>
        </div>
      )}
      {error && <p role="alert" class="error">{error}</p>}
      <div class="actions">
        <button type="submit" disabled={busy}>{busy ? 'Saving…' : 'Save draft'}</button>
      </div>
    </form>
  );
}
