// The pages of the mailed links, reachable signed out: accept an invitation (/console/accept-invitation#token=...)
// and reset a password (/console/reset-password#token=...), plus the forgot-password form that mails the reset link.
// The token is read from the URL fragment, which browsers never send to a server, and POSTed in a JSON body only.
import { useState } from 'preact/hooks';
import { api, messageOf, type Session } from '../api/client.ts';
import { useSubmit } from '../components.tsx';
import { BASE, Link, PageTitle } from '../router.tsx';

const tokenFromFragment = () => new URLSearchParams(location.hash.replace(/^#/, '')).get('token') ?? '';

/** The API's answer about a link in words: a used or expired link says so and what to do next. */
function linkError(error: unknown, response: Response | undefined, kind: 'invitation' | 'reset'): string {
  const fields = (error as { error?: { code?: string; details?: Record<string, string>; message?: string } } | undefined)?.error;
  const text = JSON.stringify(fields ?? {});
  if (/used or expired/.test(text)) {
    return kind === 'invitation'
      ? 'This invitation link was already used or has expired. Ask the person who invited you to send a new one.'
      : 'This reset link was already used or has expired. Ask for a new one below.';
  }
  if (/password/i.test(text) && response?.status === 400) return `The password was refused: ${messageOf(error, response)}`;
  return messageOf(error, response);
}

function PasswordFields({ password, setPassword, confirm, setConfirm }: {
  password: string; setPassword: (s: string) => void; confirm: string; setConfirm: (s: string) => void;
}) {
  return (
    <>
      <div class="field">
        <label for="link-password">New password</label>
        <input id="link-password" type="password" autoComplete="new-password" required minLength={12} value={password}
          aria-describedby="link-password-hint" onInput={(e) => setPassword(e.currentTarget.value)} />
        <p id="link-password-hint" class="hint">At least 12 characters; a few words make a good one.</p>
      </div>
      <div class="field">
        <label for="link-confirm">Repeat the password</label>
        <input id="link-confirm" type="password" autoComplete="new-password" required value={confirm}
          onInput={(e) => setConfirm(e.currentTarget.value)} />
      </div>
    </>
  );
}

export function AcceptInvitationPage({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [token] = useState(tokenFromFragment);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const { busy, error, run } = useSubmit();
  const submit = (e: Event) => run(e, async () => {
    if (password !== confirm) return 'The two passwords differ.';
    const { data, error: err, response } = await api.POST('/v1/invitations/accept', { body: { token, password, name } });
    if (data) {
      history.replaceState(null, '', `${BASE}/calls`); // drop the token from the address bar and history
      return onSignedIn(data.data);
    }
    return linkError(err, response, 'invitation');
  });
  return (
    <main id="main" class="narrow">
      <PageTitle title="Accept the invitation">Join your team on Openline</PageTitle>
      {!token ? <p role="alert" class="error">This link has no invitation token: open the link from the email again.</p> : (
        <form onSubmit={(e) => void submit(e)}>
          <div class="field">
            <label for="link-name">Your name</label>
            <input id="link-name" autoComplete="name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </div>
          <PasswordFields {...{ password, setPassword, confirm, setConfirm }} />
          {error && <p role="alert" class="error">{error}</p>}
          <button type="submit" disabled={busy}>{busy ? 'Joining…' : 'Accept and sign in'}</button>
        </form>
      )}
    </main>
  );
}

export function ResetPasswordPage() {
  const [token] = useState(tokenFromFragment);
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [done, setDone] = useState(false);
  const { busy, error, run } = useSubmit();
  const submit = (e: Event) => run(e, async () => {
    if (password !== confirm) return 'The two passwords differ.';
    const { error: err, response } = await api.POST('/v1/password-reset/confirm', { body: { token, password } });
    if (response.ok) {
      history.replaceState(null, '', `${BASE}/reset-password`);
      return setDone(true);
    }
    return linkError(err, response, 'reset');
  });
  return (
    <main id="main" class="narrow">
      <PageTitle title="Reset your password">Choose a new password</PageTitle>
      {done ? (
        <div role="status">
          <p>Your password is changed, and every session of yours was signed out.</p>
          <p><Link href={`${BASE}/sign-in`}>Sign in with the new password</Link></p>
        </div>
      ) : !token ? <p role="alert" class="error">This link has no reset token: open the link from the email again, or <Link href={`${BASE}/forgot-password`}>ask for a new one</Link>.</p> : (
        <form onSubmit={(e) => void submit(e)}>
          <PasswordFields {...{ password, setPassword, confirm, setConfirm }} />
          {error && <p role="alert" class="error">{error}</p>}
          <button type="submit" disabled={busy}>{busy ? 'Saving…' : 'Set the new password'}</button>
        </form>
      )}
      {error && /used or expired/.test(error) && <p><Link href={`${BASE}/forgot-password`}>Ask for a new reset link</Link></p>}
    </main>
  );
}

export function ForgotPasswordPage() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState(false);
  const { busy, error, run } = useSubmit();
  const submit = (e: Event) => run(e, async () => {
    const { error: err, response } = await api.POST('/v1/password-reset', { body: { email } });
    if (response.ok) return setSent(true);
    if (response.status === 429) return 'Too many reset requests for now: try again later.';
    return messageOf(err, response);
  });
  return (
    <main id="main" class="narrow">
      <PageTitle title="Forgot password">Reset your password</PageTitle>
      {sent ? <p role="status">If {email} has an account, a reset link is on its way; it works once, within an hour.</p> : (
        <form onSubmit={(e) => void submit(e)}>
          <div class="field">
            <label for="forgot-email">Email</label>
            <input id="forgot-email" type="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
          </div>
          {error && <p role="alert" class="error">{error}</p>}
          <button type="submit" disabled={busy}>{busy ? 'Sending…' : 'Email me a reset link'}</button>
        </form>
      )}
      <p><Link href={`${BASE}/sign-in`}>Back to sign in</Link></p>
    </main>
  );
}
