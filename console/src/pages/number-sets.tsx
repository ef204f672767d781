// Number Sets on the Numbers page (GET /v1/number-health/sets, caller_trust:read): each set with its members (role,
// state, outbound, priority: what caller-ID selection reads). With phone_numbers:write: create a set (name, use case,
// identification guidance, first members: POST), change its fields (PATCH), add a number or change a member's
// options (PATCH members, upserted by phone_id), remove a member (DELETE .../members/{phone_id}) and delete the set
// (DELETE, after a confirmation). The forms do not validate in the browser: the API's validation_error `fields` are
// shown next to the field each names, so there is one set of rules.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, messageOf, type NumberSet, type PhoneNumber } from '../api/client.ts';
import { Confirm, ErrorLine, Loading, TableWrap } from '../components.tsx';
import type { paths } from '../api/schema';

type Member = NumberSet['members'][number];
type MemberIn = NonNullable<NonNullable<paths['/v1/number-health/sets/{id}']['patch']['requestBody']>['content']['application/json']['members']>[number];
type Role = NonNullable<MemberIn['role']>;
type State = NonNullable<MemberIn['state']>;
type Fields = Record<string, string>;
/** Sets shown at once (the list's largest page); more are counted, not shown. */
const SETS_LIMIT = 100;
const ROLES = ['PRIMARY', 'ALTERNATE'] as const;
const STATES = ['ACTIVE', 'STANDBY', 'PREPARING', 'RETIRED'] as const;
const STATE_HINT = 'Active and Standby members are selected; Preparing and Retired ones are kept but never selected.';
const word = (s: string) => s.charAt(0) + s.slice(1).toLowerCase();

/** The error envelope's fields, with a prefix (e.g. "members[0].") taken off their names. */
function fieldsOf(err: unknown, strip?: RegExp): Fields {
  const f = (err as { error?: { fields?: Fields } } | undefined)?.error?.fields ?? {};
  return Object.fromEntries(Object.entries(f).map(([k, v]) => [strip ? k.replace(strip, '') : k, v]));
}

/** A form's answer: the message, and the fields named (shown next to their inputs). */
interface Answer { message: string; fields: Fields }
const answerOf = (err: unknown, response: Response | undefined, strip?: RegExp): Answer => ({
  message: messageOf(err, response), fields: fieldsOf(err, strip),
});

/** An input's error line, tied to it by aria-describedby. */
function FieldError({ id, fields, name }: { id: string; fields: Fields; name: string }) {
  return fields[name] ? <p id={id} class="error">{fields[name]}</p> : null;
}
const invalid = (fields: Fields, name: string, id: string, hint?: string) => ({
  'aria-invalid': fields[name] ? 'true' as const : undefined,
  'aria-describedby': [fields[name] ? id : null, hint ?? null].filter(Boolean).join(' ') || undefined,
});

function useDialog() {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current!;
    if (!d.open) d.showModal();
    return () => d.close();
  }, []);
  return ref;
}

export function NumberSets({ canWrite, onChanged }: { canWrite: boolean; onChanged: () => void }) {
  const [sets, setSets] = useState<NumberSet[] | null>(null);
  const [total, setTotal] = useState(0);
  const [numbers, setNumbers] = useState<PhoneNumber[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [editing, setEditing] = useState<NumberSet | 'new' | null>(null);
  const [deleting, setDeleting] = useState<NumberSet | null>(null);
  const [busy, setBusy] = useState(false);

  const load = async () => {
    setError(null);
    try {
      const [s, n] = await Promise.all([
        api.GET('/v1/number-health/sets', { params: { query: { limit: SETS_LIMIT } } }),
        canWrite ? api.GET('/v1/phone-numbers', { params: { query: { limit: 100 } } }) : Promise.resolve(null),
      ]);
      if (!s.data) return setError(messageOf(s.error, s.response));
      setSets(s.data.data);
      setTotal(s.data.meta.total_results ?? s.data.data.length);
      if (n?.data) setNumbers(n.data.data.filter((x) => x.status !== 'RELEASED'));
    } catch {
      setError('The server could not be reached.');
    }
  };
  useEffect(() => { void load(); }, []);

  /** A set changed: shown at once, and the numbers table's memberships are read again. */
  const replace = (s: NumberSet) => { setSets((xs) => xs && xs.map((x) => (x.id === s.id ? s : x))); onChanged(); };

  const removeMember = async (set: NumberSet, m: Member) => {
    setNotice(null);
    const { data, error: err, response } = await api.DELETE('/v1/number-health/sets/{id}/members/{phone_id}', { params: { path: { id: set.id, phone_id: m.phone_id } } })
      .catch(() => ({ data: undefined, error: undefined, response: undefined }));
    if (!data) return setNotice(`Could not remove ${m.phone_number} from ${set.name}: ${messageOf(err, response)}`);
    replace(data.data);
    setNotice(`Removed ${m.phone_number} from ${set.name}. The number itself is kept.`);
  };

  const deleteSet = async (set: NumberSet) => {
    setBusy(true);
    const { error: err, response } = await api.DELETE('/v1/number-health/sets/{id}', { params: { path: { id: set.id } } })
      .catch(() => ({ error: undefined, response: undefined }));
    setBusy(false);
    setDeleting(null);
    if (!response?.ok) return setNotice(`Could not delete ${set.name}: ${messageOf(err, response)}`);
    setSets((xs) => xs && xs.filter((x) => x.id !== set.id));
    setTotal((n) => n - 1);
    onChanged();
    setNotice(`Deleted the Number Set ${set.name}. Its numbers are kept.`);
  };

  return (
    <section aria-labelledby="sets-heading">
      <div class="heading-row">
        <h2 id="sets-heading">Number Sets{sets ? ` (${total})` : ''}</h2>
        {canWrite && <button type="button" class="small" onClick={() => { setNotice(null); setEditing('new'); }}>New Number Set</button>}
      </div>
      <p class="hint">A Number Set groups numbers for one use; a call dialed with the set's id (number_set_id) goes out from its healthiest
        eligible member, then the lowest priority, and the same person keeps getting the same number.</p>
      {notice && <p role="status" class="notice">{notice}</p>}
      {error ? <ErrorLine message={`The Number Sets could not be loaded: ${error}`} retry={() => void load()} />
        : !sets ? <Loading what="Number Sets" />
        : sets.length === 0 ? <p class="empty">No Number Sets yet.{canWrite ? ' Create one to dial from a group of numbers.' : ''}</p>
        : sets.map((s) => (
          <article key={s.id} class="card" aria-labelledby={`set-${s.id}`}>
            <div class="heading-row">
              <h3 id={`set-${s.id}`}>{s.name}</h3>
              {canWrite && (
                <span class="row-actions">
                  <button type="button" class="secondary small" aria-label={`Edit ${s.name}`} onClick={() => { setNotice(null); setEditing(s); }}>Edit</button>
                  <button type="button" class="danger small" aria-label={`Delete ${s.name}`} onClick={() => { setNotice(null); setDeleting(s); }}>Delete</button>
                </span>
              )}
            </div>
            {(s.use_case || s.identification_guidance) && (
              <dl class="summary">
                {s.use_case && <><dt>Use case</dt><dd>{s.use_case}</dd></>}
                {s.identification_guidance && <><dt>Identification</dt><dd>{s.identification_guidance}</dd></>}
              </dl>
            )}
            {s.members.length === 0 ? <p class="empty">No numbers in this set yet.</p> : (
              <TableWrap label={`Members of ${s.name}`}>
                <table aria-label={`Members of ${s.name}`}>
                  <thead>
                    <tr><th scope="col">Number</th><th scope="col">Role</th><th scope="col">State</th><th scope="col">Outbound</th><th scope="col">Priority</th>
                      {canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr>
                  </thead>
                  <tbody>
                    {s.members.map((m) => (
                      <tr key={m.phone_id}>
                        <th scope="row">{m.phone_number}</th><td>{word(m.role)}</td><td>{word(m.state)}</td>
                        <td>{m.outbound_enabled ? 'Yes' : 'No'}</td><td>{m.priority}</td>
                        {canWrite && (
                          <td class="row-actions">
                            <button type="button" class="secondary small" aria-label={`Remove ${m.phone_number} from ${s.name}`} onClick={() => void removeMember(s, m)}>Remove</button>
                          </td>
                        )}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableWrap>
            )}
            {canWrite && <MemberForm set={s} numbers={numbers} onSaved={(x, what) => { replace(x); setNotice(what); }} />}
          </article>
        ))}
      {editing && (
        <SetDialog set={editing === 'new' ? null : editing} numbers={numbers} onCancel={() => setEditing(null)}
          onSaved={(x, created) => {
            setEditing(null);
            if (created) { setSets((xs) => [x, ...(xs ?? [])]); setTotal((n) => n + 1); onChanged(); } else replace(x);
            setNotice(created ? `Created the Number Set ${x.name}.` : `Saved ${x.name}.`);
          }} />
      )}
      {deleting && (
        <Confirm title={`Delete ${deleting.name}?`} confirmLabel="Delete Number Set" busy={busy}
          onConfirm={() => void deleteSet(deleting)} onCancel={() => setDeleting(null)}>
          <p>The set and its {deleting.members.length} memberships are deleted; its numbers, their calls and their evidence are kept.
            Calls dialed with this set's id are refused from then on.</p>
        </Confirm>
      )}
    </section>
  );
}

/** Create a set (name, use case, guidance, first members) or change one's fields. */
function SetDialog({ set, numbers, onSaved, onCancel }: {
  set: NumberSet | null; numbers: PhoneNumber[]; onSaved: (s: NumberSet, created: boolean) => void; onCancel: () => void;
}) {
  const ref = useDialog();
  const [name, setName] = useState(set?.name ?? '');
  const [useCase, setUseCase] = useState(set?.use_case ?? '');
  const [guidance, setGuidance] = useState(set?.identification_guidance ?? '');
  const [picked, setPicked] = useState<number[]>([]);
  const [busy, setBusy] = useState(false);
  const [answer, setAnswer] = useState<Answer | null>(null);
  const f = answer?.fields ?? {};

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setAnswer(null);
    try {
      const fields = { name, use_case: useCase, identification_guidance: guidance };
      const r = set
        ? await api.PATCH('/v1/number-health/sets/{id}', { params: { path: { id: set.id } }, body: fields })
        : await api.POST('/v1/number-health/sets', { body: { ...fields, members: picked.map((phone_id) => ({ phone_id })) } });
      if (!r.data) return setAnswer(answerOf(r.error, r.response));
      onSaved(r.data.data, !set);
    } catch {
      setAnswer({ message: 'The server could not be reached.', fields: {} });
    } finally {
      setBusy(false);
    }
  };

  return (
    <dialog ref={ref} aria-labelledby="set-dialog-title" onCancel={(e) => { e.preventDefault(); onCancel(); }}>
      <h2 id="set-dialog-title">{set ? `Edit ${set.name}` : 'New Number Set'}</h2>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <div class="field">
          <label for="set-name">Name</label>
          <input id="set-name" value={name} onInput={(e) => setName(e.currentTarget.value)} {...invalid(f, 'name', 'set-name-error')} />
          <FieldError id="set-name-error" fields={f} name="name" />
        </div>
        <div class="field">
          <label for="set-use-case">Use case</label>
          <input id="set-use-case" value={useCase} onInput={(e) => setUseCase(e.currentTarget.value)} {...invalid(f, 'use_case', 'set-use-case-error', 'set-use-case-hint')} />
          <p id="set-use-case-hint" class="hint">What the numbers are used for, e.g. appointment reminders.</p>
          <FieldError id="set-use-case-error" fields={f} name="use_case" />
        </div>
        <div class="field">
          <label for="set-guidance">Identification guidance</label>
          <textarea id="set-guidance" rows={3} value={guidance} onInput={(e) => setGuidance(e.currentTarget.value)} {...invalid(f, 'identification_guidance', 'set-guidance-error', 'set-guidance-hint')} />
          <p id="set-guidance-hint" class="hint">How the people called should recognize these calls (shown to testers and agents).</p>
          <FieldError id="set-guidance-error" fields={f} name="identification_guidance" />
        </div>
        {!set && (
          <fieldset class="field" aria-describedby="set-members-hint">
            <legend>Numbers</legend>
            <p id="set-members-hint" class="hint">Each joins as a primary, active member with priority 100; change that in the set afterwards.</p>
            {numbers.length === 0 ? <p class="empty">No number to add yet.</p> : numbers.map((n) => {
              const bad = picked.includes(n.id) ? f[`members[${picked.indexOf(n.id)}].phone_id`] : undefined;
              return (
                <label key={n.id} class="check">
                  <input type="checkbox" checked={picked.includes(n.id)} aria-invalid={bad ? 'true' : undefined}
                    onChange={(e) => setPicked((p) => (e.currentTarget.checked ? [...p, n.id] : p.filter((x) => x !== n.id)))} />
                  {' '}{n.phone_number}{n.name ? ` (${n.name})` : ''}{bad && <span class="error"> {bad}</span>}
                </label>
              );
            })}
          </fieldset>
        )}
        {answer && <p role="alert" class="error">{answer.message}</p>}
        <div class="actions">
          <button type="submit" disabled={busy}>{busy ? 'Saving…' : set ? 'Save Number Set' : 'Create Number Set'}</button>
          <button type="button" class="secondary" onClick={onCancel}>Cancel</button>
        </div>
      </form>
    </dialog>
  );
}

/** Add a number to a set, or change a member's options (the API upserts by phone_id). */
function MemberForm({ set, numbers, onSaved }: { set: NumberSet; numbers: PhoneNumber[]; onSaved: (s: NumberSet, what: string) => void }) {
  const [phoneId, setPhoneId] = useState('');
  const [role, setRole] = useState<Role>('PRIMARY');
  const [state, setState] = useState<State>('ACTIVE');
  const [outbound, setOutbound] = useState(true);
  const [priority, setPriority] = useState('100');
  const [busy, setBusy] = useState(false);
  const [answer, setAnswer] = useState<Answer | null>(null);
  const f = answer?.fields ?? {};
  const id = (x: string) => `member-${x}-${set.id}`;

  const pick = (v: string) => {
    setPhoneId(v);
    const m = set.members.find((x) => String(x.phone_id) === v);
    // A member shows its options, to change them; a new number starts from the API's defaults.
    setRole((m?.role ?? 'PRIMARY') as Role); setState((m?.state ?? 'ACTIVE') as State);
    setOutbound(m?.outbound_enabled ?? true); setPriority(String(m?.priority ?? 100));
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setAnswer(null);
    try {
      // Sent as typed: a priority that is not a whole number reaches the API, whose fields say why.
      const p = priority.trim() === '' ? Number.NaN : Number(priority);
      const member = { phone_id: Number(phoneId), role, state, outbound_enabled: outbound, priority: Number.isFinite(p) ? p : priority } as unknown as MemberIn;
      if (!phoneId) return setAnswer({ message: 'Choose a number.', fields: { phone_id: 'choose a number' } });
      const { data, error, response } = await api.PATCH('/v1/number-health/sets/{id}', { params: { path: { id: set.id } }, body: { members: [member] } });
      if (!data) return setAnswer(answerOf(error, response, /^members\[0\]\./));
      const n = data.data.members.find((m) => m.phone_id === Number(phoneId));
      const was = set.members.some((m) => m.phone_id === Number(phoneId));
      onSaved(data.data, `${was ? 'Changed' : 'Added'} ${n?.phone_number ?? 'the number'} ${was ? 'in' : 'to'} ${set.name}.`);
      setPhoneId('');
    } catch {
      setAnswer({ message: 'The server could not be reached.', fields: {} });
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="inline" onSubmit={(e) => void submit(e)} noValidate aria-label={`Add or change a number in ${set.name}`}>
      <div class="field">
        <label for={id('number')}>Number</label>
        <select id={id('number')} value={phoneId} onChange={(e) => pick(e.currentTarget.value)} {...invalid(f, 'phone_id', id('number-error'))}>
          <option value="">Choose a number</option>
          {numbers.map((n) => <option key={n.id} value={String(n.id)}>{n.phone_number}{set.members.some((m) => m.phone_id === n.id) ? ' (member)' : ''}</option>)}
        </select>
        <FieldError id={id('number-error')} fields={f} name="phone_id" />
      </div>
      <div class="field">
        <label for={id('role')}>Role</label>
        <select id={id('role')} value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
          {ROLES.map((r) => <option key={r} value={r}>{word(r)}</option>)}
        </select>
      </div>
      <div class="field">
        <label for={id('state')}>State</label>
        <select id={id('state')} value={state} title={STATE_HINT} onChange={(e) => setState(e.currentTarget.value as State)}>
          {STATES.map((s) => <option key={s} value={s}>{word(s)}</option>)}
        </select>
      </div>
      <div class="field">
        <label for={id('priority')}>Priority</label>
        <input id={id('priority')} inputMode="numeric" size={6} value={priority} onInput={(e) => setPriority(e.currentTarget.value)}
          {...invalid(f, 'priority', id('priority-error'))} />
        <FieldError id={id('priority-error')} fields={f} name="priority" />
      </div>
      <div class="field">
        <label class="check"><input type="checkbox" checked={outbound} onChange={(e) => setOutbound(e.currentTarget.checked)} /> Places calls</label>
      </div>
      <button type="submit" class="small" disabled={busy}>{busy ? 'Saving…' : 'Add or change number'}</button>
      {answer && <p role="alert" class="error">{answer.message}</p>}
    </form>
  );
}
