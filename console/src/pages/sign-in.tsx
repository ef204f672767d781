// Sign in with email and password (POST /v1/session). A wrong password and an unknown email answer alike (401); the
// lockout answers 429 with Retry-After, shown as how long to wait.
import { useState } from 'preact/hooks';
import { api, messageOf, type Session } from '../api/client.ts';
import { useSubmit } from '../components.tsx';
import { BASE, Link, PageTitle } from '../router.tsx';

export function SignInPage({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, run } = useSubmit();

  const submit = (e: Event) => run(e, async () => {
    const { data, error: err, response } = await api.POST('/v1/session', { body: { email, password } });
    if (data) return onSignedIn(data.data);
    if (response.status === 401) return 'Wrong email or password.';
    if (response.status === 429) {
      const wait = Number(response.headers.get('retry-after'));
      const minutes = Number.isFinite(wait) && wait > 0 ? Math.ceil(wait / 60) : null;
      return `Too many failed sign-ins: signing in is locked for now. Try again ${minutes ? `in ${minutes} minute${minutes === 1 ? '' : 's'}` : 'later'}.`;
    }
    return messageOf(err, response);
  });

  return (
    <main id="main" class="narrow">
      <PageTitle title="Sign in">Sign in to Openline</PageTitle>
      <form onSubmit={(e) => void submit(e)} aria-describedby={error ? 'signin-error' : undefined}>
        <div class="field">
          <label for="signin-email">Email</label>
          <input id="signin-email" type="email" name="email" autoComplete="username" required value={email}
            onInput={(e) => setEmail(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="signin-password">Password</label>
          <input id="signin-password" type="password" name="password" autoComplete="current-password" required value={password}
            onInput={(e) => setPassword(e.currentTarget.value)} />
        </div>
        {error && <p id="signin-error" role="alert" class="error">{error}</p>}
        <button type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
      <p><Link href={`${BASE}/forgot-password`}>Forgot your password?</Link></p>
    </main>
  );
}
