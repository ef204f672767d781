// `npm run admin -- user create`: with a password the user signs in at once; without, the printed link works once.
import t from 'tap';
import { runAdmin } from '../helpers/admin-cli.ts';
import { testEnv } from '../helpers/env.ts';

t.test('admin user create', async (t) => {
  const env = await testEnv(t);
  const org = await env.bootstrap({ org: 'CLI users' });
  const withPw = await runAdmin(env.env, ['user', 'create', '--org', org.organization_id, '--email', 'cli.dev@example.com', '--role', 'developer', '--password', 'a long cli password']);
  t.equal(withPw.code, 0, withPw.stderr);
  t.match(JSON.parse(withPw.stdout), { email: 'cli.dev@example.com', role: 'developer' });
  const s = await env.request('POST', '/v1/session', { body: { email: 'cli.dev@example.com', password: 'a long cli password' } });
  t.equal(s.status, 200);
  const link = await runAdmin(env.env, ['user', 'create', '--org', org.organization_id, '--email', 'cli.agent@example.com', '--role', 'agent']);
  t.equal(link.code, 0, link.stderr);
  const out = JSON.parse(link.stdout);
  t.match(out.sign_in_link, /\/console\/accept-invitation#token=/);
  const token = /#token=(.+)$/.exec(out.sign_in_link)![1];
  const acc = await env.request('POST', '/v1/invitations/accept', { body: { token, password: 'agent long password', name: 'Agent' } });
  t.equal(acc.status, 200);
  t.equal(acc.body.data.role, 'agent');
  const dup = await runAdmin(env.env, ['user', 'create', '--org', org.organization_id, '--email', 'CLI.dev@example.com', '--role', 'viewer']);
  t.not(dup.code, 0);
  t.match(dup.stderr + dup.stdout, /already belongs/);
  const badRole = await runAdmin(env.env, ['user', 'create', '--org', org.organization_id, '--email', 'x@example.com', '--role', 'boss']);
  t.not(badRole.code, 0);
});
