// loadConfig's area settings (reputation, CNAM, SMS, Optimize, metrics): each one's default, a set value, and the
// startup error naming the variable for a bad value. Other settings are checked beside their feature (events-retention,
// livekit-carrier, softphone-serve).
import t from 'tap';
import { telnyxSettings } from '../../shared/caller-trust/reputation/telnyx.ts';
import { loadConfig } from '../../shared/config.ts';

const TELNYX = { TELNYX_API_KEY: 'KEYtest', TELNYX_ENTERPRISE_ID: 'ent-1' };

t.test('reputation', async (t) => {
  const d = loadConfig({}).reputation;
  t.same(d, { provider: 'sandbox', freshnessMs: 86_400_000, scanMs: 300_000, batchSize: 500, ratePerSecond: 20, concurrency: 5, telnyx: null },
    'defaults: the sandbox, 24 h, 5 minutes, 500, 20/s, 5 in flight');
  t.same(loadConfig({ REPUTATION_FRESHNESS_SECONDS: '600', REPUTATION_SCAN_MS: '300', REPUTATION_BATCH_SIZE: '25',
    REPUTATION_RATE_PER_SECOND: '15', REPUTATION_CONCURRENCY: '3' }).reputation,
  { provider: 'sandbox', freshnessMs: 600_000, scanMs: 300, batchSize: 25, ratePerSecond: 15, concurrency: 3, telnyx: null });
  t.equal(loadConfig({ REPUTATION_FRESHNESS_SECONDS: '0.5' }).reputation.freshnessMs, 500, 'a fraction of a second');
  t.throws(() => loadConfig({ REPUTATION_PROVIDER: 'hiya' }), /REPUTATION_PROVIDER must be sandbox or telnyx, got "hiya"/);
  t.throws(() => loadConfig({ REPUTATION_FRESHNESS_SECONDS: '0' }), /REPUTATION_FRESHNESS_SECONDS must be a positive number/);
  t.throws(() => loadConfig({ REPUTATION_SCAN_MS: 'often' }), /REPUTATION_SCAN_MS must be a positive number/);
  t.throws(() => loadConfig({ REPUTATION_BATCH_SIZE: '2.5' }), /REPUTATION_BATCH_SIZE must be a positive integer/);
  t.throws(() => loadConfig({ REPUTATION_RATE_PER_SECOND: '0' }), /REPUTATION_RATE_PER_SECOND must be a positive integer/);
  t.throws(() => loadConfig({ REPUTATION_CONCURRENCY: '-1' }), /REPUTATION_CONCURRENCY must be a positive integer/);
});

t.test('reputation: the Telnyx adapter\'s settings, checked when REPUTATION_PROVIDER=telnyx', async (t) => {
  t.throws(() => loadConfig({ REPUTATION_PROVIDER: 'telnyx' }), /REPUTATION_PROVIDER=telnyx needs TELNYX_API_KEY, TELNYX_ENTERPRISE_ID/);
  t.throws(() => loadConfig({ REPUTATION_PROVIDER: 'telnyx', TELNYX_API_KEY: 'k' }), /needs TELNYX_ENTERPRISE_ID$/);
  const r = loadConfig({ REPUTATION_PROVIDER: 'telnyx', ...TELNYX }).reputation;
  t.equal(r.provider, 'telnyx');
  t.same(r.telnyx, { apiKey: 'KEYtest', enterpriseId: 'ent-1', baseUrl: 'https://api.telnyx.com/v2', timeoutMs: 8000 }, 'defaults');
  t.match(telnyxSettings(r.telnyx!), { ...r.telnyx, attempts: 3, backoffMs: 500 }, 'the adapter adds its retry policy');
  t.same(loadConfig({ REPUTATION_PROVIDER: 'telnyx', ...TELNYX, TELNYX_API_URL: 'http://127.0.0.1:9/v2/', REPUTATION_HTTP_TIMEOUT_MS: '2500' })
    .reputation.telnyx, { apiKey: 'KEYtest', enterpriseId: 'ent-1', baseUrl: 'http://127.0.0.1:9/v2', timeoutMs: 2500 }, 'set (trailing / dropped)');
  t.throws(() => loadConfig({ REPUTATION_PROVIDER: 'telnyx', ...TELNYX, REPUTATION_HTTP_TIMEOUT_MS: '8s' }),
    /REPUTATION_HTTP_TIMEOUT_MS must be a positive integer, got "8s"/);
  t.equal(loadConfig({ ...TELNYX, REPUTATION_HTTP_TIMEOUT_MS: '8s' }).reputation.telnyx, null, 'the sandbox reads none of them');
});

t.test('CNAM provider', async (t) => {
  t.same(loadConfig({}).cnam, { provider: 'sandbox', telnyx: null }, 'the sandbox by default');
  t.same(loadConfig({ CNAM_PROVIDER: 'telnyx', TELNYX_API_KEY: 'k' }).cnam,
    { provider: 'telnyx', telnyx: { apiKey: 'k', baseUrl: 'https://api.telnyx.com/v2' } }, 'telnyx, on the same v2 base as reputation');
  t.equal(loadConfig({ CNAM_PROVIDER: 'telnyx', TELNYX_API_KEY: 'k', TELNYX_API_URL: 'http://127.0.0.1:9/v2/' }).cnam.telnyx?.baseUrl, 'http://127.0.0.1:9/v2');
  t.throws(() => loadConfig({ CNAM_PROVIDER: 'telnyx' }), /CNAM_PROVIDER=telnyx needs TELNYX_API_KEY/);
  t.throws(() => loadConfig({ CNAM_PROVIDER: 'neustar' }), /CNAM_PROVIDER must be sandbox or telnyx, got "neustar"/);
});

t.test('SMS per-number rate', async (t) => {
  t.equal(loadConfig({}).sms.numberRatePerSecond, 1, 'one message per second by default');
  t.equal(loadConfig({ SMS_NUMBER_RATE_PER_SECOND: '50' }).sms.numberRatePerSecond, 50);
  t.equal(loadConfig({ SMS_NUMBER_RATE_PER_SECOND: '0.5' }).sms.numberRatePerSecond, 0.5, 'one every two seconds');
  t.throws(() => loadConfig({ SMS_NUMBER_RATE_PER_SECOND: '0' }), /SMS_NUMBER_RATE_PER_SECOND must be a positive number, got "0"/);
  t.throws(() => loadConfig({ SMS_NUMBER_RATE_PER_SECOND: 'fast' }), /SMS_NUMBER_RATE_PER_SECOND must be a positive number/);
});

t.test('Optimize collector bound and rollup period', async (t) => {
  t.same(loadConfig({}).optimize, { collectLimit: 600, rollupMs: 1000 }, 'defaults');
  t.same(loadConfig({ OPTIMIZE_COLLECT_LIMIT: '3', OPTIMIZE_ROLLUP_MS: '200' }).optimize, { collectLimit: 3, rollupMs: 200 });
  t.throws(() => loadConfig({ OPTIMIZE_COLLECT_LIMIT: '0' }), /OPTIMIZE_COLLECT_LIMIT must be a positive integer, got "0"/);
  t.throws(() => loadConfig({ OPTIMIZE_ROLLUP_MS: '1s' }), /OPTIMIZE_ROLLUP_MS must be a positive integer, got "1s"/);
});

t.test('an explicit 0 is refused where 0 makes no sense, not silently replaced by the default', async (t) => {
  const cases: [string, keyof ReturnType<typeof loadConfig>, number][] = [
    ['IDEMPOTENCY_LEASE_MS', 'idempotencyLeaseMs', 60_000], ['WEBHOOK_TIMEOUT_MS', 'webhookTimeoutMs', 10_000],
    ['WEBHOOK_CONCURRENCY', 'webhookConcurrency', 200], ['RECORDING_STREAMS_MAX', 'recordingStreamsMax', 32],
    ['TICKET_CLEANUP_SECONDS', 'ticketCleanupSeconds', 300], ['DATABASE_POOL_MAX', 'databasePoolMax', 7],
  ];
  for (const [name, field, sample] of cases) {
    t.throws(() => loadConfig({ [name]: '0' }), new RegExp(`${name} must be a positive integer, got "0"`), `${name}=0`);
    t.equal(loadConfig({ [name]: String(sample) })[field], sample, `${name}=${sample} is taken`);
  }
  t.equal(loadConfig({}).databasePoolMax, null, 'DATABASE_POOL_MAX unset: each process chooses');
  t.equal(loadConfig({ PORT: '0' }).port, 0, 'a port of 0 still means an ephemeral port');
});

t.test('metrics: the admin listener (loopback, whatever HOST is) and the optional token', async (t) => {
  t.same(loadConfig({}).metrics, { host: '127.0.0.1', port: 8084, token: null }, 'defaults');
  t.same(loadConfig({ HOST: '0.0.0.0', METRICS_PORT: '9100', METRICS_TOKEN: 'a-token-of-24-characters' }).metrics,
    { host: '127.0.0.1', port: 9100, token: 'a-token-of-24-characters' }, 'HOST does not move it');
  t.equal(loadConfig({ METRICS_HOST: '10.0.0.5' }).metrics.host, '10.0.0.5');
  t.throws(() => loadConfig({ METRICS_PORT: 'metrics' }), /METRICS_PORT must be a non-negative integer, got "metrics"/);
  for (const token of ['short', 'has a space in it somewhere', 'line\nbreak-0123456789']) {
    t.throws(() => loadConfig({ METRICS_TOKEN: token }), /METRICS_TOKEN must be 16 to 512 printable characters without spaces/, JSON.stringify(token));
  }
});

t.test('fault injection switches (crash tests only) are read here and checked like every setting', async (t) => {
  t.same(loadConfig({}).faults, { gateway: null, carrierEventsKillBefore: null, outboxRelay: null, optimizeRollup: null, accountNoticeDelayMs: 0, responseSchemaCheck: false });
  t.equal(loadConfig({ CARRIER_EVENTS_FAULT: 'kill-before-apply:answered' }).faults.carrierEventsKillBefore, 'answered');
  t.throws(() => loadConfig({ GATEWAY_FAULT: 'kill-sometimes' }), /GATEWAY_FAULT must be one of kill-after-commit, got "kill-sometimes"/);
  t.throws(() => loadConfig({ OPTIMIZE_ROLLUP_FAULT: 'x' }), /OPTIMIZE_ROLLUP_FAULT must be one of kill-after-read, kill-after-commit/);
  t.equal(loadConfig({ SIGNALING_MEDIA: 'off' }).signalingMedia, false);
  t.equal(loadConfig({}).signalingMedia, true);
});
