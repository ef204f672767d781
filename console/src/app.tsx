// The console: who is signed in (GET /v1/session), the frame (header, navigation, sign-out) and the pages.
import { useEffect, useState } from 'preact/hooks';
import { api, messageOf, setCsrfToken, type Session } from './api/client.ts';
import { ApiKeysPage } from './pages/api-keys.tsx';
import { CallPage } from './pages/call.tsx';
import { CallsPage } from './pages/calls.tsx';
import { CallerTrustPage } from './pages/caller-trust.tsx';
import { MembersPage } from './pages/members.tsx';
import { NumbersPage } from './pages/numbers.tsx';
import { OptimizePage } from './pages/optimize.tsx';
import { UsagePage } from './pages/usage.tsx';
import { WebhooksPage } from './pages/webhooks.tsx';
import { AcceptInvitationPage, ForgotPasswordPage, ResetPasswordPage } from './pages/links.tsx';
import { PhonePage } from './pages/phone.tsx';
import { stopCallStream } from './live.tsx';
import { SignInPage } from './pages/sign-in.tsx';
import { BASE, Link, navigate, PageTitle, useLocation } from './router.tsx';

type State = { kind: 'loading' } | { kind: 'signed-out' } | { kind: 'error'; message: string } | { kind: 'signed-in'; session: Session };

export function App() {
  const [state, setState] = useState<State>({ kind: 'loading' });
  const { path, search } = useLocation();

  const load = async () => {
    setState({ kind: 'loading' });
    try {
      const { data, response, error } = await api.GET('/v1/session');
      if (data) {
        setCsrfToken(data.data.csrf_token);
        setState({ kind: 'signed-in', session: data.data });
      } else if (response.status === 401 || response.status === 403) {
        setState({ kind: 'signed-out' });
      } else {
        setState({ kind: 'error', message: messageOf(error, response) });
      }
    } catch {
      setState({ kind: 'error', message: 'The server could not be reached.' });
    }
  };
  useEffect(() => { void load(); }, []);

  // The pages of the mailed links (and the forgot-password form) open signed in or out.
  const linkPage = path === `${BASE}/accept-invitation` || path === `${BASE}/reset-password` || path === `${BASE}/forgot-password`;
  const signedIn = (s: Session) => { setCsrfToken(s.csrf_token); setState({ kind: 'signed-in', session: s }); };

  // Signed out: every page but the sign-in page leads to it, and back after signing in.
  useEffect(() => {
    if (linkPage) return;
    if (state.kind === 'signed-out' && path !== `${BASE}/sign-in`) navigate(`${BASE}/sign-in?next=${encodeURIComponent(path)}`, true);
    if (state.kind === 'signed-in' && (path === BASE || path === `${BASE}/sign-in`)) {
      const next = search.get('next');
      navigate(next && next.startsWith(`${BASE}/`) && next !== `${BASE}/sign-in` ? next : `${BASE}/calls`, true);
    }
  }, [state.kind, path]);

  if (path === `${BASE}/accept-invitation`) return <AcceptInvitationPage onSignedIn={(s) => { signedIn(s); navigate(`${BASE}/calls`, true); }} />;
  if (path === `${BASE}/reset-password`) return <ResetPasswordPage />;
  if (path === `${BASE}/forgot-password`) return <ForgotPasswordPage />;
  if (state.kind === 'loading') return <p class="loading" role="status">Loading the console…</p>;
  if (state.kind === 'error') {
    return (
      <main class="narrow">
        <PageTitle title="Console unavailable">The console could not load</PageTitle>
        <p role="alert">{state.message}</p>
        <button type="button" onClick={() => void load()}>Try again</button>
      </main>
    );
  }
  if (state.kind === 'signed-out') {
    return <SignInPage onSignedIn={signedIn} />;
  }
  return <Frame session={state.session} path={path} onSignedOut={() => { setCsrfToken(null); stopCallStream(); setState({ kind: 'signed-out' }); }} />;
}

function Frame({ session, path, onSignedOut }: { session: Session; path: string; onSignedOut: () => void }) {
  const [signOutError, setSignOutError] = useState<string | null>(null);
  const can = (scope: string) => session.scopes.includes(scope);
  const nav = [
    { href: `${BASE}/calls`, label: 'Calls', show: can('calls:read') },
    { href: `${BASE}/phone`, label: 'Phone', show: can('voice:webrtc') },
    { href: `${BASE}/numbers`, label: 'Numbers', show: can('phone_numbers:read') },
    { href: `${BASE}/webhooks`, label: 'Webhooks', show: can('webhooks:read') },
    { href: `${BASE}/usage`, label: 'Usage', show: can('usage:read') },
    { href: `${BASE}/optimize`, label: 'Optimize', show: can('optimize:read') },
    { href: `${BASE}/caller-trust`, label: 'Caller trust', show: can('caller_trust:read') || can('brand:read') },
    { href: `${BASE}/settings/api-keys`, label: 'API keys', show: can('api_keys:read') },
    { href: `${BASE}/settings/members`, label: 'Members', show: can('members:read') },
  ].filter((n) => n.show);

  const signOut = async () => {
    setSignOutError(null);
    const { response, error } = await api.DELETE('/v1/session').catch(() => ({ response: undefined, error: undefined }));
    if (response?.ok || response?.status === 401) onSignedOut();
    else setSignOutError(messageOf(error, response));
  };

  const callMatch = /^\/console\/calls\/([^/]+)$/.exec(path);
  let page;
  if (path === `${BASE}/calls`) page = <CallsPage session={session} />;
  else if (callMatch) page = <CallPage session={session} id={decodeURIComponent(callMatch[1])} />;
  else if (path === `${BASE}/phone`) page = <PhonePage session={session} />;
  else if (path === `${BASE}/numbers`) page = <NumbersPage session={session} />;
  else if (path === `${BASE}/webhooks`) page = <WebhooksPage session={session} />;
  else if (path === `${BASE}/usage`) page = <UsagePage session={session} />;
  else if (path === `${BASE}/optimize`) page = <OptimizePage session={session} />;
  else if (path === `${BASE}/caller-trust`) page = <CallerTrustPage session={session} />;
  else if (path === `${BASE}/settings/api-keys`) page = <ApiKeysPage session={session} />;
  else if (path === `${BASE}/settings/members`) page = <MembersPage session={session} />;
  else if (path === BASE || path === `${BASE}/sign-in`) page = <p role="status">Opening…</p>;
  else page = <><PageTitle title="Not found">Page not found</PageTitle><p>There is no console page at {path}.</p></>;

  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <div class="brand">
          <span class="product">Openline</span>
          <span class="org">{session.organization.name}</span>
        </div>
        <nav aria-label="Main">
          <ul>
            {nav.map((n) => (
              <li key={n.href}>
                <Link href={n.href} aria-current={path === n.href || path.startsWith(`${n.href}/`) ? 'page' : undefined}>{n.label}</Link>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span class="email">{session.user.email} <span class="role">({session.role})</span></span>
          <button type="button" class="secondary" onClick={() => void signOut()}>Sign out</button>
        </div>
      </header>
      {signOutError && <p role="alert" class="error banner">Sign-out failed: {signOutError}</p>}
      <main id="main">{page}</main>
    </>
  );
}
