// The dashboard's schedules panel in a real browser (Chromium driven by playwright-core) against the
// real HTTP service and a private redis-server. Schedules are made with the library, as an
// application would; their ticks are claimed, acked and failed through the HTTP API, as a pull
// consumer would; the panel is read and its buttons clicked as a person would.
//
// Screenshots go to a temporary folder (printed as a diagnostic).
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { Queue } from '../../src/index.js';
import {
  assertClean,
  HOSTILE_IMG,
  HOSTILE_SCRIPT,
  launchBrowser,
  open,
  screenshot,
  startService,
  waitForText,
  waitUntil,
  type Service,
} from '../helpers/browser.js';
import { sleep, uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const shots = mkdtempSync(join(tmpdir(), 'sandglass-dashboard-schedules-'));
/** The browser's own zone in these tests: not the schedules' zones, so local and schedule times differ. */
const BROWSER_ZONE = 'America/New_York';

interface Claimed {
  id: string;
  token: string;
}

const jobUrl = (queue: string, id: string) => `/v1/queues/${queue}/jobs/${encodeURIComponent(id)}`;
const scheduleUrl = (queue: string, key: string) => `/v1/queues/${queue}/schedules/${encodeURIComponent(key)}`;

/**
 * Claims the ticks of `keys` (one each) through the HTTP API, as a pull consumer would; other
 * jobs claimed on the way are handed to `others`. Fails if a tick does not come within 15 s.
 */
async function claimTicks(service: Service, queue: string, keys: string[]): Promise<Map<string, Claimed>> {
  const found = new Map<string, Claimed>();
  const deadline = Date.now() + 15_000;
  while (found.size < keys.length) {
    assert.ok(Date.now() < deadline, `ticks of ${keys.filter(key => !found.has(key)).join(', ')} never came`);
    const { status, body } = await service.call<{ jobs: Claimed[] }>('POST', `/v1/queues/${queue}/claim`, {
      max: 10,
      leaseMs: 300_000,
      waitMs: 1_000,
    });
    assert.equal(status, 200, JSON.stringify(body));
    for (const job of body.jobs) {
      const key = job.id.slice(0, job.id.lastIndexOf('@'));
      assert.ok(keys.includes(key) && !found.has(key), `unexpected job ${job.id}`);
      found.set(key, job);
    }
  }
  return found;
}

async function settle(service: Service, queue: string, job: Claimed, how: 'ack' | 'dead' | 'retry'): Promise<void> {
  const answer =
    how === 'ack'
      ? await service.call('POST', `${jobUrl(queue, job.id)}/ack`, { token: job.token })
      : await service.call('POST', `${jobUrl(queue, job.id)}/fail`, {
          token: job.token,
          error: 'Error: report service answered 503',
          ...(how === 'dead' ? { dead: true } : { retryDelayMs: 600_000 }),
        });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
}

const exactly = (text: string) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`);

/** The row (a tbody) of one schedule in the panel. */
const row = (page: Page, key: string) =>
  page.locator('#schedules-table tbody.schedule', { has: page.locator('.schedule-key', { hasText: exactly(key) }) });

describe('dashboard schedules panel in a real browser', () => {
  let browser: Browser;
  let service: Service;
  const queues: Queue[] = [];
  const queueOf = (name: string) => {
    const queue = new Queue(name, { connection: redis.url });
    queues.push(queue);
    return queue;
  };

  before(async () => {
    browser = await launchBrowser();
    service = await startService(redis);
  });

  after(async () => {
    await Promise.all(queues.map(queue => queue.close()));
    await browser?.close();
    await service?.close();
  });

  test('shows every schedule with its rule, next run, last run and counts, and its next five runs on expand', async t => {
    const name = uniqueQueue('reports');
    const queue = queueOf(name);
    await queue.schedule('daily-report', { cron: '0 9 * * *', tz: 'Europe/Berlin', payload: { kind: 'daily' } });
    // Its first tick is at startAt, in a moment; the next one 5 minutes later.
    await queue.schedule('refund-poll:42', {
      every: '5m',
      startAt: Date.now() + 1_000,
      payload: { refundId: 42 },
      overlap: 'skip',
      endAt: Date.now() + 86_400_000,
    });
    await queue.schedule('weekday-sync', { cron: '30 7 * * 1-5', tz: 'America/New_York' });
    await queue.pauseSchedule('weekday-sync');
    await queue.schedule('once', { every: '1s', limit: 1, payload: { n: 1 } });
    await queue.schedule('failing', { every: '1s', limit: 1, maxAttempts: 1 });
    await queue.schedule('flaky', { every: '1s', limit: 1, maxAttempts: 5 });
    const ticks = await claimTicks(service, name, ['refund-poll:42', 'once', 'failing', 'flaky']);
    await settle(service, name, ticks.get('once') as Claimed, 'ack');
    await settle(service, name, ticks.get('failing') as Claimed, 'dead');
    await settle(service, name, ticks.get('flaky') as Claimed, 'retry');

    const watched = await open(browser, `${service.base}/?queue=${name}`, { timezoneId: BROWSER_ZONE });
    const { page } = watched;
    await waitForText(page.locator('#schedules-summary'), '6 schedules · 1 paused');
    assert.deepEqual(
      await page.locator('#schedules-table .schedule-key').allTextContents(),
      ['daily-report', 'failing', 'flaky', 'once', 'refund-poll:42', 'weekday-sync'],
      'sorted by key',
    );

    const daily = row(page, 'daily-report');
    await waitForText(daily.locator('.rule'), 'every day at 09:00');
    await waitForText(daily.locator('.rule-source'), '0 9 * * * · Europe/Berlin');
    await waitForText(daily.locator('.next'), /^in \d/);
    assert.match((await daily.locator('.next-local').textContent()) ?? '', /^\w{3} \d{1,2} \w{3}, \d\d:00 local$/);
    await waitForText(daily.locator('.run-state'), 'not run yet');
    await waitForText(daily.locator('.runs'), '1', 6_000); // runs counts ticks created: its pending one

    const poll = row(page, 'refund-poll:42');
    await waitForText(poll.locator('.rule'), 'every 5m');
    await waitForText(poll.locator('.run-state'), 'active');
    await waitForText(poll.locator('.last-tick'), /^tick .* ago$/);
    await waitForText(poll.locator('.runs'), '2'); // the claim of the first tick created the second
    await waitForText(row(page, 'once').locator('.run-state'), 'done');
    await waitForText(row(page, 'once').locator('.next'), 'ended: its one run was made');
    await waitForText(row(page, 'once').locator('.runs'), '1 of 1');
    assert.ok(await row(page, 'once').locator('.badge-ended').isVisible());
    assert.ok(await row(page, 'once').locator('button.pause').isHidden(), 'nothing to pause once ended');
    await waitForText(row(page, 'failing').locator('.run-state'), 'dead');
    await waitForText(row(page, 'flaky').locator('.run-state'), 'waiting');
    const sync = row(page, 'weekday-sync');
    await waitForText(sync.locator('.rule'), 'at 07:30 on Mon–Fri');
    await waitForText(sync.locator('.next'), 'paused');
    assert.ok(await sync.locator('.badge-paused').isVisible());
    await waitForText(sync.locator('button.pause'), 'Resume');

    // Expanded: the next five runs, in this browser's zone and the schedule's, as the server computed them.
    const info = await queue.getSchedule('daily-report');
    assert.equal(info?.upcoming.length, 5);
    assert.ok(await daily.locator('.schedule-more').isHidden());
    await daily.locator('button.expand').click();
    assert.equal(await daily.locator('button.expand').getAttribute('aria-expanded'), 'true');
    const upcoming = daily.locator('.upcoming li');
    await waitUntil(async () => (await upcoming.count()) === 5, 'five upcoming runs');
    const clock = (at: number, timeZone: string) =>
      new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(at);
    for (const [i, at] of (info?.upcoming ?? []).entries()) {
      const text = (await upcoming.nth(i).textContent()) ?? '';
      assert.equal(clock(at, 'Europe/Berlin'), '09:00');
      assert.ok(
        text.includes(`${clock(at, BROWSER_ZONE)} local`) && text.includes('09:00 Europe/Berlin') && /· in \d/.test(text),
        `run ${i}: ${text}`,
      );
    }
    assert.match((await daily.locator('.payload').textContent()) ?? '', /"kind": "daily"/);
    const settings = await daily.locator('.settings').textContent();
    assert.match(settings ?? '', /Time zoneEurope\/Berlin/);
    await poll.locator('button.expand').click();
    await waitForText(poll.locator('.settings'), /Overlapskip a tick while the last run is active/);
    assert.match((await poll.locator('.settings').textContent()) ?? '', /Last runrefund-poll:42@\d+ active/);

    // The last run's job opens in the job lookup.
    await poll.locator('.settings button.link').click();
    await waitForText(page.locator('#lookup-fields dd.state-active'), 'active');
    await page.mouse.move(0, 0);
    await page.locator('#schedules-title').scrollIntoViewIfNeeded();
    await screenshot(t, page, shots, 'schedules-wide');
    await page.locator('section[aria-labelledby=schedules-title]').screenshot({ path: join(shots, 'schedules-panel.png') });
    t.diagnostic(`screenshot: ${join(shots, 'schedules-panel.png')}`);

    const fits = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    assert.ok(await fits(), 'no sideways scrolling at 1360 px');
    await page.setViewportSize({ width: 390, height: 844 });
    await sleep(200);
    assert.ok(await fits(), 'no sideways scrolling at 390 px');
    await page.locator('section[aria-labelledby=schedules-title]').screenshot({ path: join(shots, 'schedules-narrow.png') });
    t.diagnostic(`screenshot: ${join(shots, 'schedules-narrow.png')}`);
    assert.ok(
      watched.requests.every(request => request.method === 'GET'),
      'reading the panel only sends GETs',
    );
    assert.ok(watched.requests.some(request => new URL(request.url).pathname === `/v1/queues/${name}/schedules`));
    await assertClean(watched);
  });

  test('pauses, resumes and removes a schedule from its buttons, one write per click, and removal asks twice', async () => {
    const name = uniqueQueue('buttons');
    const queue = queueOf(name);
    const key = 'refund-poll:7';
    await queue.schedule(key, { every: '1h', payload: { refundId: 7 } });
    await queue.schedule('stays', { every: '1h' });

    const watched = await open(browser, `${service.base}/?queue=${name}`);
    const { page } = watched;
    const item = row(page, key);
    await waitForText(item.locator('button.pause'), 'Pause');
    await item.locator('button.pause').click();
    await waitForText(page.locator('#schedules-result'), `Schedule ${key} paused.`);
    assert.equal((await queue.getSchedule(key))?.paused, true);
    await waitForText(item.locator('button.pause'), 'Resume');
    await waitForText(item.locator('.next'), 'paused');
    await waitForText(page.locator('#schedules-summary'), '2 schedules · 1 paused');

    await item.locator('button.pause').click();
    await waitForText(page.locator('#schedules-result'), `Schedule ${key} resumed.`);
    assert.equal((await queue.getSchedule(key))?.paused, false);
    await waitForText(item.locator('.next'), /^in \d/);

    const remove = item.locator('button.remove');
    await remove.click();
    await waitForText(remove, 'Click again to remove');
    assert.notEqual(await queue.getSchedule(key), null, 'the first click removes nothing');
    await remove.click();
    await waitForText(page.locator('#schedules-result'), `Schedule ${key} removed; a run in progress finishes.`);
    assert.equal(await queue.getSchedule(key), null);
    await waitUntil(async () => (await row(page, key).count()) === 0, 'the row to go');
    await waitForText(page.locator('#schedules-summary'), '1 schedule');

    const writes = watched.requests.filter(request => request.method !== 'GET');
    const path = scheduleUrl(name, key);
    assert.deepEqual(
      writes.map(request => `${request.method} ${new URL(request.url).pathname}`),
      [`POST ${path}/pause`, `POST ${path}/resume`, `DELETE ${path}`],
      'exactly one write per click',
    );
    assert.ok(path.includes('refund-poll%3A7'), 'the key is encoded in the path');
    await assertClean(watched);
  });

  test('shows hostile schedule keys, payloads and tick ids as text and runs none of them', async () => {
    const name = uniqueQueue('hostile');
    const queue = queueOf(name);
    const payload = { html: HOSTILE_IMG, script: HOSTILE_SCRIPT, flag: '<img src=x onerror="window.pwned=1">' };
    await queue.schedule(HOSTILE_IMG, { cron: '*/15 * * * *', payload });
    await queue.schedule(HOSTILE_SCRIPT, { every: '1s', limit: 1, payload: HOSTILE_SCRIPT });
    const ticks = await claimTicks(service, name, [HOSTILE_SCRIPT]);
    await settle(service, name, ticks.get(HOSTILE_SCRIPT) as Claimed, 'dead');

    for (const file of ['schedules.js', 'schedule-text.js']) {
      const code = (await (await fetch(`${service.base}/${file}`)).text()).replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
      assert.doesNotMatch(
        code,
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/,
        `${file} must not parse HTML or code from strings`,
      );
    }

    // Once with the CSP switched off, so that only the page's own code stands between the data and
    // the DOM; once with it on.
    for (const bypassCSP of [true, false]) {
      const watched = await open(browser, `${service.base}/?queue=${name}`, { bypassCSP });
      const { page } = watched;
      await waitForText(page.locator('#schedules-summary'), '2 schedules');
      const img = row(page, HOSTILE_IMG);
      await waitForText(img.locator('.schedule-key'), HOSTILE_IMG);
      await waitForText(img.locator('.rule'), 'every 15 min');
      assert.ok(await page.getByText(HOSTILE_IMG, { exact: true }).first().isVisible(), 'the hostile key is visible as text');
      await img.locator('button.expand').click();
      await waitForText(img.locator('.payload'), /"html": "<img src=x onerror=alert\(1\)>"/);
      assert.match((await img.locator('.payload').textContent()) ?? '', /"script": "<script>alert\(2\)<\/script>"/);
      assert.equal(await img.locator('button.remove').getAttribute('aria-label'), `Remove schedule ${HOSTILE_IMG}`);

      const script = row(page, HOSTILE_SCRIPT);
      await waitForText(script.locator('.run-state'), 'dead');
      await script.locator('button.expand').click();
      await waitForText(script.locator('.payload'), JSON.stringify(HOSTILE_SCRIPT));
      const tickLink = script.locator('.settings button.link');
      await waitForText(tickLink, new RegExp(`${exactly(HOSTILE_SCRIPT).source.slice(0, -1)}@\\d+$`));
      await tickLink.click();
      await waitForText(page.locator('#lookup-fields dd.state-dead'), 'dead');

      await sleep(300); // a broken image would have fired its onerror by now
      assert.equal(await page.locator('img').count(), 0, 'no <img> element was created');
      assert.equal(await page.locator('script').count(), 1, "only the page's own module script");
      assert.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined);
      await assertClean(watched);
    }
  });

  test('describes common cron patterns and intervals in words, and shows any other pattern as it is', async () => {
    const watched = await open(browser, `${service.base}/`);
    const described = await watched.page.evaluate(async () => {
      const { describeCron, fmtEvery } = (await import('/schedule-text.js' as string)) as {
        describeCron(p: string): string | undefined;
        fmtEvery(ms: number): string;
      };
      const patterns = [
        '0 9 * * *',
        '*/5 * * * *',
        '* * * * *',
        '15 * * * *',
        '0 */2 * * *',
        '30 7 * * 1-5',
        '0 0 1 * *',
        '0 8 * * MON,WED',
        '0 9,17 * * *',
        '0 0 1 1 *',
        '*/10 * * * * *',
        '30 0 9 * * *',
        '0 9 1 * 1',
        '0 9 L * *',
        '0 9 * * 5#3',
        'bad',
      ];
      return {
        cron: Object.fromEntries(patterns.map(pattern => [pattern, describeCron(pattern) ?? null])),
        every: [1_000, 1_500, 90_000, 300_000, 5_400_000, 86_400_000, 90_061_000].map(fmtEvery),
      };
    });
    assert.deepEqual(described.cron, {
      '0 9 * * *': 'every day at 09:00',
      '*/5 * * * *': 'every 5 min',
      '* * * * *': 'every minute',
      '15 * * * *': 'every hour at :15',
      '0 */2 * * *': 'every 2 h at :00',
      '30 7 * * 1-5': 'at 07:30 on Mon–Fri',
      '0 0 1 * *': 'at 00:00 on day 1 of each month',
      '0 8 * * MON,WED': 'at 08:00 on Mon, Wed',
      '0 9,17 * * *': 'every day at 09:00 and 17:00',
      '0 0 1 1 *': 'at 00:00 on day 1 of Jan',
      '*/10 * * * * *': 'every 10 s',
      '30 0 9 * * *': 'every day at 09:00:30',
      '0 9 1 * 1': null,
      '0 9 L * *': null,
      '0 9 * * 5#3': null,
      bad: null,
    });
    assert.deepEqual(described.every, ['1s', '1.5s', '1m30s', '5m', '1h30m', '1d', '1d1h1m1s']);
    await assertClean(watched);
  });
});
