// The dashboard in a real browser: Debian's Chromium driven by playwright-core, against the real
// HTTP service (buildApp) and a private redis-server. Jobs are added, claimed and failed through
// the HTTP API, as a producer or consumer would; the page is used as a person would use it.
//
// Screenshots go to a temporary folder (printed as a diagnostic). To refresh the one in the docs:
//   SANDGLASS_UPDATE_SCREENSHOT=1 node --import tsx --test test/service/dashboard.test.ts
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { Redis } from 'ioredis';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { Queue } from '../../src/index.js';
import type { AppOptions } from '../../src/server/app.js';
import {
  assertClean,
  CHROMIUM_PATH,
  HOSTILE_IMG,
  HOSTILE_SCRIPT,
  launchBrowser,
  NO_CHROMIUM,
  open as openPage,
  screenshot as saveScreenshot,
  startService as startServiceOn,
  waitForText,
  waitUntil,
  type Service,
} from '../helpers/browser.js';
import { sleep, uniqueQueue, useRedis } from '../helpers/redis.js';

const TOKEN = 'dashboard-test-token-0123456789';
const DOCS_SCREENSHOT = new URL('../../docs/dashboard.png', import.meta.url);

const redis = useRedis();
const shots = mkdtempSync(join(tmpdir(), 'sandglass-dashboard-'));

const startService = (options: Partial<AppOptions> = {}): Promise<Service> => startServiceOn(redis, options);

const jobUrl = (queue: string, id: string) => `/v1/queues/${queue}/jobs/${encodeURIComponent(id)}`;

async function addJob(service: Service, queue: string, job: { payload: unknown; delay?: number | string; id?: string }): Promise<string> {
  const { status, body } = await service.call<{ id: string }>('POST', `/v1/queues/${queue}/jobs`, job);
  assert.equal(status, 201, JSON.stringify(body));
  return body.id;
}

interface Claimed {
  id: string;
  token: string;
  dueAt: number;
}

async function claim(service: Service, queue: string, max: number, leaseMs = 60_000): Promise<Claimed[]> {
  const { status, body } = await service.call<{ jobs: Claimed[] }>('POST', `/v1/queues/${queue}/claim`, { max, leaseMs, waitMs: 0 });
  assert.equal(status, 200, JSON.stringify(body));
  return body.jobs;
}

/** Adds a job, claims it and fails it for good: a dead letter with `error` as its last error. */
async function deadLetter(service: Service, queue: string, payload: unknown, error: string, id?: string): Promise<string> {
  const added = await addJob(service, queue, { payload, ...(id ? { id } : {}) });
  const [job] = await claim(service, queue, 1);
  assert.equal(job?.id, added);
  const failed = await service.call('POST', `${jobUrl(queue, added)}/fail`, { token: job.token, error, dead: true });
  assert.equal(failed.status, 200, JSON.stringify(failed.body));
  return added;
}

// The browser

let browser: Browser;

const open = (url: string, options: BrowserContextOptions = {}) => openPage(browser, url, options);
const screenshot = (t: TestContext, page: Page, name: string) => saveScreenshot(t, page, shots, name);

/** Every key of the Redis server with its whole content, to compare before and after. */
/**
 * Every key and its value. Keys with a time to live (a claim's reply memo, kept for a while in case
 * the reply was lost) are apart in `expiring`: one written by an earlier test may expire between
 * two snapshots, which is not a change a request made.
 */
async function redisState(raw: Redis): Promise<{ lasting: Record<string, unknown>; expiring: Record<string, unknown> }> {
  const lasting: Record<string, unknown> = {};
  const expiring: Record<string, unknown> = {};
  for (const key of (await raw.keys('*')).sort()) {
    const type = await raw.type(key);
    let value: unknown;
    if (type === 'string') value = await raw.get(key);
    else if (type === 'hash') value = await raw.hgetall(key);
    else if (type === 'zset') value = await raw.zrange(key, 0, -1, 'WITHSCORES');
    else if (type === 'set') value = (await raw.smembers(key)).sort();
    else if (type === 'list') value = await raw.lrange(key, 0, -1);
    else if (type === 'none')
      continue; // expired since KEYS listed it
    else value = type;
    ((await raw.pttl(key)) > 0 ? expiring : lasting)[key] = value;
  }
  return { lasting, expiring };
}

/** Redis as it was: the same lasting keys, and no expiring key that was not there or changed. */
function assertUnchanged(after: Awaited<ReturnType<typeof redisState>>, before: Awaited<ReturnType<typeof redisState>>): void {
  assert.deepEqual(after.lasting, before.lasting, 'Redis is unchanged');
  for (const [key, value] of Object.entries(after.expiring))
    assert.deepEqual(value, before.expiring[key], `expiring key ${key} is unchanged`);
}

// Never skipped: without a browser this fails, and so does every test below (their setup throws).
test('Chromium is installed for the browser tests', () => {
  assert.ok(existsSync(CHROMIUM_PATH), NO_CHROMIUM);
});

describe('dashboard in a real browser', () => {
  let service: Service;

  before(async () => {
    browser = await launchBrowser();
    service = await startService();
  });

  after(async () => {
    await browser?.close();
    await service?.close();
  });

  test('serves the page with a strict Content-Security-Policy, and the scripts build the page with DOM calls only', async () => {
    const page = await fetch(`${service.base}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'"]) {
      assert.ok(csp.includes(directive), `CSP ${JSON.stringify(csp)} lacks ${directive}`);
    }
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    const html = await page.text();
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    assert.doesNotMatch(html, /<style|\sstyle=|\son[a-z]+=/i, 'no inline style or handler');
    for (const file of ['app.js', 'api.js', 'dom.js', 'charts.js', 'jobs.js', 'schedules.js', 'schedule-text.js']) {
      const response = await fetch(`${service.base}/${file}`);
      assert.equal(response.status, 200, file);
      assert.match(response.headers.get('content-type') ?? '', /javascript/);
      const code = (await response.text()).replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
      assert.doesNotMatch(
        code,
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/,
        `${file} must not parse HTML or code from strings`,
      );
    }
  });

  test('shows live counts that change when jobs are added through the API', async t => {
    const queue = uniqueQueue('counts');
    await addJob(service, queue, { payload: { n: 1 }, delay: '1h' });
    await addJob(service, queue, { payload: { n: 2 }, delay: '2d' });
    await addJob(service, queue, { payload: { n: 3 } });

    const watched = await open(`${service.base}/?queue=${queue}`);
    const { page } = watched;
    const row = page.locator('#queues-body tr', { has: page.getByText(queue, { exact: true }) });
    await waitForText(row.locator('.count-delayed'), '2');
    await waitForText(row.locator('.count-ready'), '1');
    await waitForText(page.locator('#count-delayed'), '2');
    await waitForText(page.locator('#count-ready'), '1');
    await waitForText(page.locator('#queue-title'), queue);
    const bar = (label: string) => page.locator('.bar-row', { has: page.getByText(label, { exact: true }) }).locator('.bar-count');
    await waitForText(bar('due now'), '1');
    await waitForText(bar('1 day – 1 week'), '1');
    await screenshot(t, page, 'counts-before');

    // Three more through the API, due in 5 minutes: the page picks them up by itself.
    for (let i = 0; i < 3; i++) await addJob(service, queue, { payload: { n: 10 + i }, delay: '5m' });
    await waitForText(page.locator('#count-delayed'), '5', 4_000);
    await waitForText(row.locator('.count-delayed'), '5');
    await waitForText(bar('1–10 min'), '3');

    // A claim shows up as an active job with its lease counting down.
    const [claimed] = await claim(service, queue, 1, 45_000);
    assert.ok(claimed);
    await waitForText(page.locator('#count-active'), '1');
    const leaseRow = page.locator('#active-body tr', { hasText: claimed.id });
    await waitForText(leaseRow.locator('.lease-text'), /^(4[0-5]|3\d)\.\d s$/);
    await waitForText(page.locator('#count-ready'), '0');
    await screenshot(t, page, 'counts-after');
    assert.ok(
      watched.requests.every(request => request.method === 'GET'),
      'reading the page only sends GETs',
    );
    await assertClean(watched);
  });

  test('cancels and reschedules a job from the job lookup', async () => {
    const queue = uniqueQueue('cancel');
    const id = 'order:42';
    await addJob(service, queue, { payload: { orderId: 42 }, delay: '30m', id });
    const other = await addJob(service, queue, { payload: { orderId: 43 }, delay: '30m' });

    const watched = await open(`${service.base}/?queue=${queue}`);
    const { page } = watched;
    await waitForText(page.locator('#count-delayed'), '2');
    await page.locator('#lookup-id').fill(id);
    await page.getByRole('button', { name: 'Find', exact: true }).click();
    await waitForText(page.locator('#lookup-fields dd.state-delayed'), 'delayed');
    assert.match((await page.locator('#lookup-fields .payload').textContent()) ?? '', /"orderId": 42/);
    await page.getByRole('button', { name: 'Cancel job' }).click();
    await waitForText(page.locator('#lookup-message'), `Job ${id} was cancelled.`);
    const gone = await service.call<{ error: { code: string } }>('GET', jobUrl(queue, id));
    assert.equal(gone.status, 404);
    assert.equal(gone.body.error.code, 'NOT_FOUND');
    await waitForText(page.locator('#count-delayed'), '1');

    // Reschedule the other one to 2 hours from now.
    await page.locator('#lookup-id').fill(other);
    await page.getByRole('button', { name: 'Find', exact: true }).click();
    await waitForText(page.locator('#lookup-fields dd.state-delayed'), 'delayed');
    await page.locator('#reschedule-delay').fill('2h');
    await page.getByRole('button', { name: 'Reschedule' }).click();
    await waitForText(page.locator('#lookup-message'), `Job ${other} was rescheduled.`);
    const moved = await service.call<{ dueAt: number }>('GET', jobUrl(queue, other));
    assert.ok(Math.abs(moved.body.dueAt - (Date.now() + 7_200_000)) < 60_000, `due ${new Date(moved.body.dueAt).toISOString()}`);

    // Looking up a job that is not there says so.
    await page.locator('#lookup-id').fill(id);
    await page.getByRole('button', { name: 'Find', exact: true }).click();
    await waitForText(page.locator('#lookup-message'), /No job with id order:42/);

    const writes = watched.requests.filter(request => request.method !== 'GET');
    assert.deepEqual(
      writes.map(request => `${request.method} ${new URL(request.url).pathname}`),
      [`DELETE ${jobUrl(queue, id)}`, `POST ${jobUrl(queue, other)}/reschedule`],
      'exactly one write per click',
    );
    await assertClean(watched, { httpErrors: /404/ });
  });

  test('retries a dead letter from the page, and purges the rest', async t => {
    const queue = uniqueQueue('dead');
    const id = await deadLetter(service, queue, { orderId: 7 }, 'Error: payment service answered 503\n    at closeOrder (orders.js:42:11)');
    const second = await deadLetter(service, queue, { orderId: 8 }, 'Error: no such order');
    const third = await deadLetter(service, queue, { orderId: 9 }, 'Error: no such order');

    const watched = await open(`${service.base}/?queue=${queue}`);
    const { page } = watched;
    await waitForText(page.locator('#count-dead'), '3');
    const item = page.locator('#dead-list li', { hasText: id });
    await waitForText(item.locator('.error-line'), 'Error: payment service answered 503');
    await waitForText(item.locator('.payload-line'), 'payload {"orderId":7}');
    await screenshot(t, page, 'dead-letters');
    await item.getByRole('button', { name: 'Retry', exact: true }).click();
    await waitForText(page.locator('#dead-result'), `Job ${id} is due again.`);
    const retried = await service.call<{ state: string }>('GET', jobUrl(queue, id));
    assert.equal(retried.body.state, 'ready');
    await waitForText(page.locator('#count-dead'), '2');
    await waitForText(page.locator('#count-ready'), '1');

    // Purge asks twice, without a modal dialog.
    const purge = page.locator('#purge-all');
    await purge.click();
    await waitForText(purge, 'Click again to delete all dead letters');
    assert.equal((await service.call('GET', jobUrl(queue, second))).status, 200, 'the first click deletes nothing');
    await purge.click();
    await waitForText(page.locator('#dead-result'), '2 dead letter(s) deleted.');
    for (const gone of [second, third]) assert.equal((await service.call('GET', jobUrl(queue, gone))).status, 404);
    await waitForText(page.locator('#dead-state'), 'No dead letters.');
    await assertClean(watched);
  });

  test('shows hostile payloads, ids and error messages as text and runs none of them', async t => {
    const queue = uniqueQueue('hostile');
    const payload = { html: HOSTILE_IMG, script: HOSTILE_SCRIPT, flag: '<img src=x onerror="window.pwned=1">' };
    const error = `${HOSTILE_IMG}\n${HOSTILE_SCRIPT}`;
    await deadLetter(service, queue, payload, error, HOSTILE_IMG);
    const waiting = await addJob(service, queue, { payload: HOSTILE_SCRIPT, delay: '10m', id: HOSTILE_SCRIPT });

    // Once with the CSP switched off, so that only the page's own code stands between the data and
    // the DOM (with the CSP on, an inline handler would be blocked anyway); once with it on.
    for (const bypassCSP of [true, false]) {
      const watched = await open(`${service.base}/?queue=${queue}`, { bypassCSP });
      const { page } = watched;
      await waitForText(page.locator('#count-dead'), '1');
      const item = page.locator('#dead-list li').first();
      await waitForText(item.locator('.dead-head .link'), HOSTILE_IMG);
      await waitForText(item.locator('.error-line'), HOSTILE_IMG);
      assert.ok(await page.getByText(HOSTILE_IMG, { exact: true }).first().isVisible(), 'the hostile text is visible as text');
      assert.match((await item.locator('.payload-line').textContent()) ?? '', /<script>alert\(2\)<\/script>/);

      // Open both jobs in the lookup panel: every field shows the markup as text.
      await item.locator('.dead-head .link').click();
      await waitForText(page.locator('#lookup-fields dd').first(), HOSTILE_IMG);
      assert.equal(await page.locator('#lookup-fields .error-stack').textContent(), error);
      assert.match((await page.locator('#lookup-fields .payload').textContent()) ?? '', /"html": "<img src=x onerror=alert\(1\)>"/);
      await page.locator('#lookup-id').fill(waiting);
      await page.getByRole('button', { name: 'Find', exact: true }).click();
      await waitForText(page.locator('#lookup-fields .payload'), JSON.stringify(HOSTILE_SCRIPT));
      assert.ok(await page.locator('#lookup-fields .payload').isVisible());
      if (!bypassCSP) await screenshot(t, page, 'hostile');

      await sleep(300); // a broken image would have fired its onerror by now
      assert.equal(await page.locator('img').count(), 0, 'no <img> element was created');
      assert.equal(await page.locator('script').count(), 1, "only the page's own module script");
      assert.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined);
      await assertClean(watched);
    }
  });

  test('a GET never changes state: reading the page and every read route leaves Redis as it was', async () => {
    const queue = uniqueQueue('readonly');
    await addJob(service, queue, { payload: { a: 1 }, delay: '1h' });
    await addJob(service, queue, { payload: { a: 2 }, delay: '3d' });
    const dead = await deadLetter(service, queue, { a: 3 }, 'Error: boom');
    await addJob(service, queue, { payload: { a: 4 } });
    await addJob(service, queue, { payload: { a: 5 } });
    const [active] = await claim(service, queue, 1);
    assert.ok(active);
    const scheduler = new Queue(queue, { connection: redis.url });
    await scheduler.schedule('nightly', { cron: '0 3 * * *', tz: 'Europe/Berlin', startAt: Date.now() + 2 * 86_400_000 });
    await scheduler.schedule('hourly', { every: '1h', startAt: Date.now() + 3_600_000 });
    await scheduler.pauseSchedule('hourly');
    await scheduler.close();
    const before = await redisState(redis.raw);

    const watched = await open(`${service.base}/?queue=${queue}`);
    const { page } = watched;
    await waitForText(page.locator('#count-dead'), '1');
    await page.locator('#dead-list .dead-head .link').click();
    await waitForText(page.locator('#lookup-fields dd.state-dead'), 'dead');
    await page.locator('#active-body .link').click();
    await waitForText(page.locator('#lookup-fields dd.state-active'), 'active');
    await sleep(3_500); // two more refreshes
    assert.deepEqual(
      watched.requests.filter(request => request.method !== 'GET'),
      [],
      'the page sends only GETs while it is read',
    );

    // Every read route, and GET on every route that changes state: none may change anything.
    const q = `/v1/queues/${queue}`;
    const reads = [
      '/v1/queues',
      q,
      `${q}/jobs?state=delayed`,
      `${q}/jobs?state=ready`,
      `${q}/jobs?state=active`,
      `${q}/jobs?state=dead`,
      `${q}/timeline?bounds=60000,600000`,
      `${q}/activity`,
      `${q}/schedules`,
      jobUrl(queue, dead),
      jobUrl(queue, active.id),
      '/metrics',
      '/healthz',
      '/openapi.json',
      '/',
      '/app.js',
    ];
    for (const path of reads) assert.equal((await service.call('GET', path)).status, 200, path);
    const writesAsGets = [
      `${q}/dead/retry`,
      `${q}/dead`,
      `${q}/pause`,
      `${q}/resume`,
      `${q}/claim`,
      `${jobUrl(queue, dead)}/reschedule?delay=1`,
      `${jobUrl(queue, active.id)}/ack?token=${active.token}`,
      `${jobUrl(queue, active.id)}/fail?token=${active.token}`,
      `${jobUrl(queue, active.id)}/extend?token=${active.token}`,
      `${q}/jobs:bulk`,
      `${jobUrl(queue, dead)}?method=DELETE`,
      `${q}/schedules/nightly/pause`,
      `${q}/schedules/nightly/resume`,
    ];
    for (const path of writesAsGets) {
      const { status } = await service.call('GET', path);
      assert.ok(status === 200 ? path.endsWith('?method=DELETE') : status >= 400 && status < 500, `GET ${path} answered ${status}`);
    }
    assertUnchanged(await redisState(redis.raw), before);
    await assertClean(watched);
  });

  test('asks for the token on 401, keeps it for the tab only, takes it from a #token= link, and sends it with every write', async t => {
    const guarded = await startService({ token: TOKEN, prefix: 'tok' });
    try {
      const queue = uniqueQueue('token');
      await addJob(guarded, queue, { payload: { x: 1 }, delay: '1h' });

      const watched = await open(`${guarded.base}/`);
      const { page } = watched;
      await page.locator('#token-form').waitFor({ state: 'visible' });
      await waitForText(page.locator('#banner'), 'This server needs an API token.');
      await screenshot(t, page, 'token');
      await page.locator('#token-input').fill(TOKEN);
      await page.getByRole('button', { name: 'Use token' }).click();
      await waitForText(page.locator('#count-delayed'), '1');
      assert.ok(await page.locator('#banner').isHidden());
      assert.equal(await page.evaluate(() => sessionStorage.getItem('sandglass.token')), TOKEN);

      // The add form: a JSON payload and a delay, POSTed with the token.
      await page.locator('#add-payload').fill('{"orderId": 77, "note": "from the form"}');
      await page.locator('#add-delay').fill('5m');
      await page.locator('#add-id').fill('form-job');
      await page.getByRole('button', { name: 'Add job' }).click();
      await waitForText(page.locator('#add-result'), `Added to ${queue}: form-job`);
      const added = await guarded.call<{ payload: unknown; dueAt: number; state: string }>('GET', jobUrl(queue, 'form-job'));
      assert.deepEqual(added.body.payload, { orderId: 77, note: 'from the form' });
      assert.ok(Math.abs(added.body.dueAt - (Date.now() + 300_000)) < 30_000);
      await waitForText(page.locator('#count-delayed'), '2');
      const writes = watched.requests.filter(request => request.method !== 'GET');
      assert.equal(writes.length, 1);
      assert.equal(writes[0]?.authorization, `Bearer ${TOKEN}`);
      assert.ok(
        watched.requests
          .filter(request => request.url.includes('/v1/'))
          .every(request => request.authorization === undefined || request.authorization === `Bearer ${TOKEN}`),
      );
      await assertClean(watched, { httpErrors: /401/ });

      // A new tab has no token: sessionStorage is per tab. A #token= link sets it and leaves the URL.
      const linked = await open(`${guarded.base}/?queue=${queue}#token=${encodeURIComponent(TOKEN)}`);
      await waitForText(linked.page.locator('#count-delayed'), '2');
      assert.ok(
        !linked.page.url().includes(TOKEN) && !linked.page.url().includes('#'),
        `the token must leave the address bar: ${linked.page.url()}`,
      );
      assert.ok(await linked.page.locator('#token-form').isHidden());
      assert.equal(await linked.page.evaluate(() => sessionStorage.getItem('sandglass.token')), TOKEN);
      await assertClean(linked);

      // A wrong token is refused and asked for again.
      const wrong = await open(`${guarded.base}/#token=not-the-token`);
      await waitForText(wrong.page.locator('#banner'), 'The server refused this token: enter the right one.');
      await wrong.page.locator('#token-form').waitFor({ state: 'visible' });
      await assertClean(wrong, { httpErrors: /401/ });
    } finally {
      await guarded.close();
    }
  });

  test('looks right with a busy queue, on a wide and on a narrow screen (the docs screenshot)', async t => {
    const demo = await startService({ prefix: 'demo' });
    try {
      const queue = 'order-timeout';
      for (const [delay, count] of [
        ['20s', 9],
        ['4m', 14],
        ['40m', 22],
        ['6h', 17],
        ['3d', 8],
        ['30d', 4],
      ] as const) {
        const { status } = await demo.call('POST', `/v1/queues/${queue}/jobs:bulk`, {
          jobs: Array.from({ length: count }, (_, i) => ({ payload: { orderId: 4000 + i }, delay })),
        });
        assert.equal(status, 201);
      }
      await addJob(demo, 'membership-reminders', { payload: { memberId: 'm-1881' }, delay: '3d' });
      await addJob(demo, 'membership-reminders', { payload: { memberId: 'm-1882' }, delay: '12d' });
      await addJob(demo, 'refund-check', { payload: { refundId: 'r-77' }, delay: '5m' });
      await demo.call('POST', '/v1/queues/refund-check/pause', {});
      await deadLetter(
        demo,
        queue,
        { orderId: 3127 },
        'Error: payment service answered 503 Service Unavailable\n    at closeOrder (/srv/orders/close.js:42:11)\n    at async handler (/srv/orders/worker.js:18:5)',
      );
      await deadLetter(demo, queue, { orderId: 3188 }, 'UnrecoverableError: no such order 3188');
      // Two schedules whose first ticks are days and minutes away: no claim below takes one, and
      // neither lands in a bucket of the timeline that is checked.
      const scheduler = new Queue(queue, { connection: redis.url, prefix: 'demo' });
      await scheduler.schedule('nightly-cleanup', {
        cron: '0 3 * * *',
        tz: 'Europe/Berlin',
        startAt: Date.now() + 2 * 86_400_000,
        payload: { olderThanDays: 30 },
      });
      await scheduler.schedule('refund-poll:4411', { every: '15m', startAt: Date.now() + 120_000, payload: { refundId: 4411 } });
      await scheduler.close();
      // A few seconds of pull consumers at work: claims, acks, one failure.
      for (let round = 0; round < 6; round++) {
        const { status } = await demo.call('POST', `/v1/queues/${queue}/jobs:bulk`, {
          jobs: Array.from({ length: 6 + round * 2 }, (_, i) => ({ payload: { orderId: 5000 + round * 100 + i } })),
        });
        assert.equal(status, 201);
        const jobs = await claim(demo, queue, 6 + round * 2);
        for (const job of jobs.slice(1)) await demo.call('POST', `${jobUrl(queue, job.id)}/ack`, { token: job.token });
        if (round === 3 && jobs[0])
          await demo.call('POST', `${jobUrl(queue, jobs[0].id)}/fail`, {
            token: jobs[0].token,
            error: 'Error: timeout',
            retryDelayMs: 600_000,
          });
        await sleep(400);
      }

      // And a backlog that fell due just now, for the consumers to catch up with.
      assert.equal(
        (
          await demo.call('POST', `/v1/queues/${queue}/jobs:bulk`, {
            jobs: Array.from({ length: 12 }, (_, i) => ({ payload: { orderId: 6000 + i } })),
          })
        ).status,
        201,
      );

      const watched = await open(`${demo.base}/?queue=${queue}`, { viewport: { width: 1360, height: 1000 } });
      const { page } = watched;
      await waitForText(page.locator('#count-dead'), '2');
      const delivered = page.locator('#activity .figure dd').first();
      await waitForText(delivered, /^[1-9]\d*$/);
      const lastMinute = await delivered.textContent();
      await page.getByRole('button', { name: '5 min' }).click();
      assert.equal(await page.getByRole('button', { name: '5 min' }).getAttribute('aria-pressed'), 'true');
      await waitForText(page.locator('#activity .chart-axis span').first(), '5 min ago');
      assert.equal(await delivered.textContent(), lastMinute, 'all of it happened in the last minute');
      await page.getByRole('button', { name: '1 min' }).click();
      await waitForText(page.locator('.bar-row', { hasText: '10 min – 1 h' }).locator('.bar-count'), '22');
      await waitForText(page.locator('#schedules-summary'), '2 schedules');
      await waitUntil(async () => (await page.locator('#active-body tr').count()) > 0, 'active jobs');
      await page.locator('#dead-list li').first().locator('.dead-head .link').click();
      await waitForText(page.locator('#lookup-fields dd.state-dead'), 'dead');
      await page.mouse.move(0, 0);
      const wide = await screenshot(t, page, 'dashboard-wide');
      const fits = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
      assert.ok(await fits(), 'no sideways scrolling at 1360 px');

      await page.setViewportSize({ width: 390, height: 844 });
      await sleep(200);
      assert.ok(await fits(), 'no sideways scrolling at 390 px');
      await screenshot(t, page, 'dashboard-narrow');
      if (process.env.SANDGLASS_UPDATE_SCREENSHOT === '1') copyFileSync(wide, DOCS_SCREENSHOT);
      await assertClean(watched);
    } finally {
      await demo.close();
    }
  });

  test('shows a banner while Redis is unavailable, and recovers by itself', async t => {
    const queue = uniqueQueue('outage');
    await addJob(service, queue, { payload: {}, delay: '1h' });
    const watched = await open(`${service.base}/?queue=${queue}`);
    const { page } = watched;
    await waitForText(page.locator('#count-delayed'), '1');
    await redis.server.stop();
    try {
      await waitForText(page.locator('#banner'), /Redis is unavailable/, 15_000);
      await waitForText(page.locator('#live'), 'offline');
      assert.equal(await page.locator('#count-delayed').textContent(), '1', 'the last counts read stay on screen');
      assert.ok(await page.locator('body.stale').count(), 'dimmed while stale');
      await screenshot(t, page, 'redis-down');
    } finally {
      await redis.server.restart();
    }
    await waitUntil(() => page.locator('#banner').isHidden(), 'the banner to go', 15_000);
    assert.equal(await page.locator('body.stale').count(), 0);
    await waitForText(page.locator('#count-delayed'), '1');
    await assertClean(watched, { httpErrors: /503/ });
  });
});
