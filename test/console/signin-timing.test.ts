// Unknown emails and wrong passwords cost the same: scrypt always runs. 50 tries each, medians compared with generous
// noise (the lockout is raised for this file so every try reaches the password check).
import t from 'tap';
import { createUser } from '../../shared/users/members.ts';
import { testEnv } from '../helpers/env.ts';

t.test('no timing gap between unknown and known emails', async (t) => {
  const env = await testEnv(t, { env: { SIGNIN_MAX_FAILURES_PER_EMAIL: '1000', SIGNIN_MAX_FAILURES_PER_ADDRESS: '1000' } });
  const org = await env.bootstrap({ org: 'Timing' });
  await createUser(env.db, { organizationId: org.organization_id, email: 'known@example.com', role: 'owner', password: 'the right password' });
  const time = async (email: string) => {
    const start = performance.now();
    const r = await env.request('POST', '/v1/session', { body: { email, password: 'a wrong password' } });
    t.equal(r.status, 401);
    return performance.now() - start;
  };
  const known: number[] = [];
  const unknown: number[] = [];
  for (let i = 0; i < 50; i++) { known.push(await time('known@example.com')); unknown.push(await time(`nobody${i}@example.com`)); }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const k = median(known);
  const u = median(unknown);
  t.comment(`median known ${k.toFixed(1)} ms, unknown ${u.toFixed(1)} ms`);
  t.ok(u > k * 0.5 && u < k * 2, 'medians within a factor of two (scrypt dominates both)');
  t.ok(Math.abs(k - u) < Math.max(k, u) * 0.35, 'no gap large enough to tell them apart');
});
