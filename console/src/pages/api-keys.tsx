// Settings → API keys: the organization's keys, a new key (scopes limited to the user's own; its secret shown once
// with a copy button), revocation after a confirmation. Without api_keys:write there is nothing to create or revoke.
import { useEffect, useState } from 'preact/hooks';
import { api, messageOf, type ApiKey, type Member, type NewApiKey, type Scope, type Session } from '../api/client.ts';
import { Confirm, ErrorLine, Loading, TableWrap } from '../components.tsx';
import { dateTime } from '../format.ts';
import { PageTitle } from '../router.tsx';

const numbers = (s: string) => s.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);

export function ApiKeysPage({ session }: { session: Session }) {
  const canWrite = session.scopes.includes('api_keys:write');
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [members, setMembers] = useState<Map<string, Member>>(new Map());
  const [error, setError] = useState<string | null>(null);
  const [created, setCreated] = useState<NewApiKey | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const [revokeBusy, setRevokeBusy] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);

  const load = async () => {
    setError(null);
    try {
      const { data, error: err, response } = await api.GET('/v1/api-keys');
      if (!data) return setError(messageOf(err, response));
      setKeys(data.data);
    } catch {
      setError('The server could not be reached.');
    }
    // Creators by email when the user may read members (else by id).
    if (session.scopes.includes('members:read')) {
      const m = await api.GET('/v1/members').catch(() => null);
      if (m?.data) setMembers(new Map(m.data.data.map((x) => [x.id, x])));
    }
  };
  useEffect(() => { void load(); }, []);

  const creator = (id: string | null) => {
    if (!id) return 'admin CLI';
    if (id === session.user.id) return `${session.user.email} (you)`;
    return members.get(id)?.email ?? id.slice(0, 8);
  };

  const revoke = async (k: ApiKey) => {
    setRevokeBusy(true);
    const { data, error: err, response } = await api.DELETE('/v1/api-keys/{id}', { params: { path: { id: k.id } } })
      .catch(() => ({ data: undefined, error: undefined, response: undefined }));
    setRevokeBusy(false);
    setRevoking(null);
    if (!data) return setNotice(`Could not revoke ${k.name}: ${messageOf(err, response)}`);
    setNotice(`Revoked the key ${k.name}.`);
    setKeys((ks) => ks && ks.map((x) => (x.id === k.id ? data.data : x)));
  };

  return (
    <>
      <PageTitle title="API keys">API keys</PageTitle>
      <p class="lead">Keys let your own software call the API. A key never does more than its creator's role allows.</p>
      {notice && <p role="status" class="notice">{notice}</p>}
      {created && <NewKey created={created} onDone={() => setCreated(null)} />}
      {canWrite && !created && (
        <CreateKey scopes={session.scopes} onCreated={(k) => { setCreated(k); setNotice(null); setKeys((ks) => [k, ...(ks ?? [])]); }} />
      )}
      <section aria-labelledby="keys-heading">
        <h2 id="keys-heading">Keys</h2>
        {error ? <ErrorLine message={`The keys could not be loaded: ${error}`} retry={() => void load()} />
          : !keys ? <Loading what="keys" />
          : keys.length === 0 ? <p class="empty">No API keys yet.{canWrite ? ' Create one above.' : ''}</p>
          : (
            <TableWrap label="API keys">
              <table aria-label="API keys">
                <thead>
                  <tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Scopes</th><th scope="col">Created by</th>
                    <th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th>
                    {canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr>
                </thead>
                <tbody>
                  {keys.map((k) => (
                    <tr key={k.id}>
                      <th scope="row">{k.name}</th>
                      <td><code>{k.prefix}</code></td>
                      <td class="scopes">{k.scopes.join(', ')}</td>
                      <td>{creator(k.created_by_user_id)}</td>
                      <td>{dateTime(k.created_at)}</td>
                      <td>{k.last_used_at ? dateTime(k.last_used_at) : 'never'}</td>
                      <td>{k.revoked_at ? `revoked ${dateTime(k.revoked_at)}` : 'active'}</td>
                      {canWrite && (
                        <td>{!k.revoked_at && (
                          <button type="button" class="danger small" aria-label={`Revoke ${k.name}`} onClick={() => setRevoking(k)}>Revoke</button>
                        )}</td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
      </section>
      {revoking && (
        <Confirm title="Revoke this API key?" confirmLabel="Revoke key" busy={revokeBusy}
          onConfirm={() => void revoke(revoking)} onCancel={() => setRevoking(null)}>
          <p>The key <strong>{revoking.name}</strong> (<code>{revoking.prefix}</code>) stops working at once, everywhere. This cannot be undone.</p>
        </Confirm>
      )}
    </>
  );
}

function CreateKey({ scopes, onCreated }: { scopes: string[]; onCreated: (k: NewApiKey) => void }) {
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const toggle = (s: string, on: boolean) => setChosen((c) => { const n = new Set(c); if (on) n.add(s); else n.delete(s); return n; });

  const submit = async (e: Event) => {
    e.preventDefault();
    if (chosen.size === 0) return setError('Choose at least one scope.');
    setBusy(true);
    setError(null);
    const body = { name, scopes: [...chosen] as Scope[],
      ...(numbers(from).length ? { allowed_from: numbers(from) } : {}), ...(numbers(to).length ? { allowed_to: numbers(to) } : {}) };
    const { data, error: err, response } = await api.POST('/v1/api-keys', { body })
      .catch(() => ({ data: undefined, error: undefined, response: undefined }));
    setBusy(false);
    if (!data) {
      const fields = (err as { error?: { fields?: Record<string, string> } } | undefined)?.error?.fields;
      return setError(messageOf(err, response) + (fields ? ` (${Object.entries(fields).map(([k, v]) => `${k} ${v}`).join('; ')})` : ''));
    }
    setName(''); setChosen(new Set()); setFrom(''); setTo('');
    onCreated(data.data);
  };

  return (
    <section aria-labelledby="create-heading" class="card">
      <h2 id="create-heading">Create an API key</h2>
      <form onSubmit={(e) => void submit(e)}>
        <div class="field">
          <label for="key-name">Name</label>
          <input id="key-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} aria-describedby="key-name-hint" />
          <p id="key-name-hint" class="hint">What the key is for, e.g. “CRM integration”.</p>
        </div>
        <fieldset>
          <legend>Scopes</legend>
          <p class="hint">Only the scopes your role has.</p>
          <div class="checks">
            {scopes.map((s) => (
              <label key={s} class="check">
                <input type="checkbox" checked={chosen.has(s)} onChange={(e) => toggle(s, e.currentTarget.checked)} /> {s}
              </label>
            ))}
          </div>
        </fieldset>
        <div class="field">
          <label for="key-from">Allowed caller IDs (optional)</label>
          <textarea id="key-from" rows={2} value={from} onInput={(e) => setFrom(e.currentTarget.value)} aria-describedby="key-from-hint" />
          <p id="key-from-hint" class="hint">E.164 numbers separated by commas or new lines. Empty: any number of the organization.</p>
        </div>
        <div class="field">
          <label for="key-to">Allowed destinations (optional)</label>
          <textarea id="key-to" rows={2} value={to} onInput={(e) => setTo(e.currentTarget.value)} aria-describedby="key-to-hint" />
          <p id="key-to-hint" class="hint">E.164 numbers separated by commas or new lines. Empty: any destination.</p>
        </div>
        {error && <p role="alert" class="error">{error}</p>}
        <button type="submit" disabled={busy}>{busy ? 'Creating…' : 'Create key'}</button>
      </form>
    </section>
  );
}

function NewKey({ created, onDone }: { created: NewApiKey; onDone: () => void }) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(created.key);
      setCopied('Copied to the clipboard.');
    } catch {
      (document.getElementById('new-key') as HTMLInputElement | null)?.select();
      setCopied('Copying is not allowed here: the key is selected, copy it with your keyboard.');
    }
  };
  return (
    <section aria-labelledby="new-key-heading" class="card success">
      <h2 id="new-key-heading">Your new key “{created.name}”</h2>
      <p><strong>Store it now: it is shown this once.</strong> Only its prefix is kept.</p>
      <div class="field">
        <label for="new-key">API key</label>
        <div class="row">
          <input id="new-key" readOnly value={created.key} class="mono" onFocus={(e) => e.currentTarget.select()} />
          <button type="button" onClick={() => void copy()}>Copy key</button>
        </div>
      </div>
      <p role="status">{copied ?? ''}</p>
      <button type="button" class="secondary" onClick={onDone}>Done</button>
    </section>
  );
}
