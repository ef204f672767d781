// Settings → Members: who is in the organization; with members:write, invite (email, role), change a role, remove.
import { useEffect, useState } from 'preact/hooks';
import { api, messageOf, type Member, type Role, type Session } from '../api/client.ts';
import { Confirm, ErrorLine, Loading, TableWrap } from '../components.tsx';
import { dateTime } from '../format.ts';
import { PageTitle } from '../router.tsx';

const ROLES: Role[] = ['owner', 'admin', 'developer', 'agent', 'viewer'];
const FAILED = { data: undefined, error: undefined, response: undefined };

export function MembersPage({ session }: { session: Session }) {
  const canWrite = session.scopes.includes('members:write');
  const [members, setMembers] = useState<Member[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [removing, setRemoving] = useState<Member | null>(null);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('developer');
  const [inviteError, setInviteError] = useState<string | null>(null);

  const load = async () => {
    setError(null);
    const { data, error: err, response } = await api.GET('/v1/members').catch(() => FAILED);
    if (!data) return setError(messageOf(err, response));
    setMembers(data.data);
  };
  useEffect(() => { void load(); }, []);

  const invite = async (e: Event) => {
    e.preventDefault();
    setInviteError(null);
    const { data, error: err, response } = await api.POST('/v1/members', { body: { email, role } }).catch(() => FAILED);
    if (!data) return setInviteError(messageOf(err, response));
    setNotice(`Invited ${data.data.email} as ${data.data.role}; they were emailed a link.`);
    setEmail('');
    void load();
  };
  const changeRole = async (m: Member, r: Role) => {
    const { data, error: err, response } = await api.PATCH('/v1/members/{id}', { params: { path: { id: m.id } }, body: { role: r } }).catch(() => FAILED);
    setNotice(data ? `${m.email} is now ${r}.` : `Could not change the role of ${m.email}: ${messageOf(err, response)}`);
    void load();
  };
  const remove = async (m: Member) => {
    const { response, error: err } = await api.DELETE('/v1/members/{id}', { params: { path: { id: m.id } } }).catch(() => FAILED);
    setRemoving(null);
    setNotice(response?.ok ? `Removed ${m.email}.` : `Could not remove ${m.email}: ${messageOf(err, response)}`);
    void load();
  };

  return (
    <>
      <PageTitle title="Members">Members</PageTitle>
      {notice && <p role="status" class="notice">{notice}</p>}
      {canWrite && (
        <section aria-labelledby="invite-heading" class="card">
          <h2 id="invite-heading">Invite a member</h2>
          <form class="inline" onSubmit={(e) => void invite(e)}>
            <div class="field">
              <label for="invite-email">Email</label>
              <input id="invite-email" type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
            </div>
            <div class="field">
              <label for="invite-role">Role</label>
              <select id="invite-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
                {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
              </select>
            </div>
            <button type="submit">Send invitation</button>
          </form>
          {inviteError && <p role="alert" class="error">{inviteError}</p>}
        </section>
      )}
      <section aria-labelledby="members-heading">
        <h2 id="members-heading">People</h2>
        {error ? <ErrorLine message={`The members could not be loaded: ${error}`} retry={() => void load()} />
          : !members ? <Loading what="members" />
          : members.length === 0 ? <p class="empty">No members.</p>
          : (
            <TableWrap label="Members">
              <table aria-label="Members">
                <thead><tr><th scope="col">Email</th><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Status</th>
                  <th scope="col">Added</th>{canWrite && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr></thead>
                <tbody>
                  {members.map((m) => (
                    <tr key={m.id}>
                      <th scope="row">{m.email}</th>
                      <td>{m.name ?? '—'}</td>
                      <td>{canWrite && m.id !== session.user.id ? (
                        <select aria-label={`Role of ${m.email}`} value={m.role} onChange={(e) => void changeRole(m, e.currentTarget.value as Role)}>
                          {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
                        </select>
                      ) : m.role}</td>
                      <td>{m.status}</td>
                      <td>{dateTime(m.created_at)}</td>
                      {canWrite && <td>{m.id !== session.user.id && (
                        <button type="button" class="danger small" aria-label={`Remove ${m.email}`} onClick={() => setRemoving(m)}>Remove</button>
                      )}</td>}
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
      </section>
      {removing && (
        <Confirm title="Remove this member?" confirmLabel="Remove member" onConfirm={() => void remove(removing)} onCancel={() => setRemoving(null)}>
          <p><strong>{removing.email}</strong> can no longer sign in; their sessions end and their API keys are revoked at once.</p>
        </Confirm>
      )}
    </>
  );
}
