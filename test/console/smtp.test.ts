// Invitations and password resets over real SMTP: SMTP_URL points the gateway's mailer (nodemailer) at a local SMTP
// server (the smtp-server package, on loopback), which receives each message; the links in them work.
import { createServer } from 'node:net';
import t from 'tap';
import { SMTPServer } from 'smtp-server';
import { createUser } from '../../shared/users/members.ts';
import { eventually, testEnv } from '../helpers/env.ts';

interface Received { from: string; to: string[]; data: string }

const received: Received[] = [];
const smtp = new SMTPServer({
  authOptional: true, disabledCommands: ['STARTTLS'], logger: false,
  onData(stream, session, done) {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
        to: session.envelope.rcptTo.map((r) => r.address), data: Buffer.concat(chunks).toString('utf8') });
      done();
    });
  },
});
const port = await new Promise<number>((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => { const p = (probe.address() as { port: number }).port; probe.close(() => resolve(p)); });
});
await new Promise<void>((resolve) => smtp.listen(port, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((r) => smtp.close(() => r())));

const PASSWORD = 'correct horse battery staple';
const env = await testEnv(t, { env: { SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'Openline Test <console@openline.test>',
  PUBLIC_URL: 'https://console.openline.test' } });
const org = await env.bootstrap({ org: 'Mail Co' });
await createUser(env.db, { organizationId: org.organization_id, email: 'owner@mail.test', role: 'owner', password: PASSWORD });
const mailTo = (address: string, kind: RegExp) => received.find((m) => m.to.includes(address) && kind.test(m.data));
/** Quoted-printable soft line breaks undone, so a long link reads whole. */
const plain = (data: string) => data.replace(/=\r?\n/g, '').replace(/=3D/g, '=');

t.test('an invitation is mailed over SMTP, its link signs the new member in', async (t) => {
  const s = await env.request('POST', '/v1/session', { body: { email: 'owner@mail.test', password: PASSWORD } });
  t.equal(s.status, 200);
  const cookie = `ol_session=${/ol_session=([^;]*)/.exec(String(s.headers['set-cookie']))![1]}`;
  const inv = await env.request('POST', '/v1/members', { headers: { cookie, 'x-csrf-token': s.body.data.csrf_token },
    body: { email: 'new.member@mail.test', role: 'developer' } });
  t.equal(inv.status, 201, inv.text);
  const mail = await eventually(async () => mailTo('new.member@mail.test', /invit/i), 30_000);
  t.equal(mail!.from, 'console@openline.test', 'From is MAIL_FROM');
  const link = /https:\/\/console\.openline\.test\/console\/accept-invitation#token=([A-Za-z0-9_-]+)/.exec(plain(mail!.data));
  t.ok(link, 'the link is built from PUBLIC_URL');
  const inbox = await env.request('GET', '/v1/sandbox/inbox?email=new.member@mail.test', { key: org.api_key });
  t.same(inbox.body.data, [], 'nothing went to the sandbox inbox');
  const accepted = await env.request('POST', '/v1/invitations/accept', { body: { token: link![1], password: 'a long new passphrase', name: 'New' } });
  t.equal(accepted.status, 200, accepted.text);
  t.equal(accepted.body.data.role, 'developer');
});

t.test('a password reset is mailed over SMTP; an unknown email gets the same answer and no mail', async (t) => {
  const before = received.length;
  t.equal((await env.request('POST', '/v1/password-reset', { body: { email: 'nobody@mail.test' } })).status, 202);
  t.equal((await env.request('POST', '/v1/password-reset', { body: { email: 'owner@mail.test' } })).status, 202);
  const mail = await eventually(async () => mailTo('owner@mail.test', /reset/i), 30_000);
  const link = /\/console\/reset-password#token=([A-Za-z0-9_-]+)/.exec(plain(mail!.data));
  t.ok(link);
  t.equal((await env.request('POST', '/v1/password-reset/confirm', { body: { token: link![1], password: 'another long passphrase' } })).status, 204);
  t.equal((await env.request('POST', '/v1/session', { body: { email: 'owner@mail.test', password: 'another long passphrase' } })).status, 200);
  t.equal(received.slice(before).filter((m) => m.to.includes('nobody@mail.test')).length, 0, 'no mail to an unknown email');
});
