// The dashboard's flow control (issue 10) in a real browser (Chromium driven by playwright-core)
// against the real HTTP service and a private redis-server: the Limits & retention panel (read, and
// edited with the token), the Limited and Completed counts, and job details with their deadline,
// why they died, and their kept result. Results and errors carrying markup render as text.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { PullConsumer, Queue, Worker } from '../../src/index.js';
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
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis();
const shots = mkdtempSync(join(tmpdir(), 'sandglass-dashboard-flow-'));
const TOKEN = 'dashboard-flow-token-0123456789';

describe('dashboard limits, retention and deadlines in a real browser', () => {
  let browser: Browser;
  let service: Service;
  const closing: { close(): Promise<void> }[] = [];
  const track = <T extends { close(): Promise<void> }>(item: T): T => {
    closing.push(item);
    return item;
  };
  const queueOf = (name: string) => track(new Queue<unknown>(name, { connection: redis.url }));

  before(async () => {
    browser = await launchBrowser();
    service = await startService(redis, { token: TOKEN });
  });

  after(async () => {
    await Promise.all(closing.map(item => item.close()));
    await browser?.close();
    await service?.close();
  });

  const url = (queue: string) => `${service.base}/?queue=${queue}#token=${encodeURIComponent(TOKEN)}`;
  const field = (label: string) => `#flow-fields dd[data-field="${label}"]`;

  test('shows the limits, the retention and the limited count; edits them with the token, and an empty field clears a limit', async t => {
    const name = uniqueQueue('flow');
    const queue = queueOf(name);
    await queue.setLimits({ rate: { max: 100, per: '1s' }, concurrency: 1, expireAfter: '1h' });
    await queue.addBulk([1, 2, 3].map(payload => ({ payload })));
    // A worker with room for 3 whose handlers run until it closes: the limit lets one start and
    // refuses the worker's claims for the other two (limited counts ready jobs while claims are refused).
    track(
      new Worker<unknown>(name, job => new Promise<void>(resolve => job.signal.addEventListener('abort', () => resolve())), {
        connection: redis.url,
        concurrency: 3,
      }),
    );
    await waitFor(
      async () => (await queue.stats()).active === 1 && (await queue.stats()).limited === 2,
      10_000,
      'one active, two held back by the limit',
    );

    const watched = await open(browser, url(name));
    const { page } = watched;
    await waitForText(page.locator(field('Rate')), 'at most 100 starts per second (sliding window)');
    await waitForText(page.locator(field('Concurrency')), 'at most 1 active at once');
    await waitForText(page.locator(field('Expire after')), '1 h after due: not run if not started by then');
    await waitForText(page.locator(field('Keep completed')), 'none (the default)');
    await waitForText(page.locator(field('Max result')), '65536 bytes');
    await waitForText(page.locator('#count-limited'), '2');
    await waitForText(page.locator('#count-ready'), '2');
    assert.ok(await page.locator('#card-completed').isHidden(), 'no Completed card while the queue keeps none');
    assert.ok(await page.locator('#completed-panel').isHidden());
    await screenshot(t, page, shots, 'flow-panel');
    assert.ok(
      watched.requests.every(request => request.method === 'GET'),
      'reading the panel only sends GETs',
    );

    // Edit: the form opens with the stored values (ms); empty the concurrency, change the rate, keep completed jobs.
    await page.locator('#flow-edit').click();
    assert.equal(await page.locator('#flow-rate-max').inputValue(), '100');
    assert.equal(await page.locator('#flow-rate-per').inputValue(), '1000');
    assert.equal(await page.locator('#flow-concurrency').inputValue(), '1');
    await page.locator('#flow-rate-max').fill('20');
    await page.locator('#flow-rate-per').fill('1m');
    await page.locator('#flow-concurrency').fill('');
    await page.locator('#flow-keep-count').fill('50');
    await page.locator('#flow-keep-age').fill('1d');
    const before = watched.requests.length;
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await waitForText(page.locator('#flow-result'), /^Saved/);
    assert.deepEqual(await queue.getLimits(), { rate: { max: 20, per: 60_000 }, expireAfter: 3_600_000 });
    assert.deepEqual(await queue.getRetention(), { completed: { count: 50, age: 86_400_000 }, maxResultBytes: 65_536 });
    const writes = watched.requests.slice(before).filter(request => request.method !== 'GET');
    assert.deepEqual(
      writes.map(request => `${request.method} ${new URL(request.url).pathname}`),
      [`PUT /v1/queues/${name}/limits`, `PUT /v1/queues/${name}/retention`],
    );
    assert.ok(
      writes.every(request => request.authorization === `Bearer ${TOKEN}`),
      'every write carries the token',
    );
    await waitForText(page.locator(field('Rate')), 'at most 20 starts per minute (sliding window)');
    await waitForText(page.locator(field('Concurrency')), 'no limit');
    await waitForText(page.locator(field('Keep completed')), 'the newest 50, none older than 1 d');
    await waitUntil(async () => page.locator('#card-completed').isVisible(), 'the Completed card once the queue keeps jobs');

    // A bad value: the server's message, and nothing written.
    await page.locator('#flow-edit').click();
    await page.locator('#flow-concurrency').fill('0');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await waitForText(page.locator('#flow-result'), /^Not saved: .*concurrency.* \(VALIDATION\)$/);
    assert.deepEqual(await queue.getLimits(), { rate: { max: 20, per: 60_000 }, expireAfter: 3_600_000 });
    await page.locator('#flow-cancel').click();
    assert.ok(await page.locator('#flow-form').isHidden());
    await assertClean(watched, { httpErrors: /400/ });
  });

  test('job details show the deadline, why a job died, and a kept result; markup in results and errors is text', async t => {
    const name = uniqueQueue('flow-jobs');
    const queue = queueOf(name);
    await queue.setRetention({ completed: { count: 10 } });
    await queue.add({ n: 1 }, { id: 'kept' });
    await queue.add({ n: 2 }, { id: 'broken', maxAttempts: 1 });
    const worker = track(
      new Worker<unknown>(
        name,
        async job => {
          if (job.id === 'broken') throw new Error(`${HOSTILE_IMG}\n${HOSTILE_SCRIPT}`);
          return { html: HOSTILE_IMG, flag: '<img src=x onerror="window.pwned=1">' };
        },
        { connection: redis.url },
      ),
    );
    await waitFor(
      async () => (await queue.get('kept'))?.state === 'completed' && (await queue.get('broken'))?.state === 'dead',
      10_000,
      'one completed, one dead',
    );
    await worker.close();
    await queue.add({ n: 3 }, { id: 'late', expireAfter: 50 });
    await sleep(200);
    const consumer = track(new PullConsumer<unknown>(name, { connection: redis.url }));
    assert.deepEqual(await consumer.claim({ max: 5 }), [], 'the late job expires when a claim reaches it');
    await queue.add({ n: 4 }, { id: 'waiting', delay: '1h', expireAfter: '30m' });

    for (const bypassCSP of [true, false]) {
      const watched = await open(browser, url(name), { bypassCSP });
      const { page } = watched;
      await waitForText(page.locator('#count-completed'), '1');
      const kept = page.locator('#completed-list li').first();
      await waitForText(kept.locator('.dead-head .link'), 'kept');
      assert.match((await kept.locator('.result-line').textContent()) ?? '', /^result \{"html":"<img src=x onerror=alert\(1\)>"/);
      const expired = page.locator('#dead-list li', { has: page.locator('.link', { hasText: 'late' }) });
      await waitForText(expired.locator('.error-line'), /^expired: not started within 50ms of its due time$/);
      const broken = page.locator('#dead-list li', { has: page.locator('.link', { hasText: 'broken' }) });
      await waitForText(broken.locator('.error-line'), /^Error: <img src=x onerror=alert\(1\)>$|^<img src=x onerror=alert\(1\)>$/);

      await kept.locator('.dead-head .link').click();
      await waitForText(page.locator('#lookup-fields dd.state-completed'), 'completed');
      assert.match((await page.locator('#lookup-fields .result-full').textContent()) ?? '', /"html": "<img src=x onerror=alert\(1\)>"/);
      assert.match((await page.locator('#lookup-fields').textContent()) ?? '', /Finished\d{4}-\d\d-\d\d /);
      assert.ok(await page.locator('#lookup-cancel').isHidden(), 'a completed job has nothing to cancel');

      await page.locator('#lookup-id').fill('late');
      await page.getByRole('button', { name: 'Find', exact: true }).click();
      await waitForText(page.locator('#lookup-fields dd.reason'), 'expired: not started by its deadline');
      await page.locator('#lookup-id').fill('broken');
      await page.getByRole('button', { name: 'Find', exact: true }).click();
      await waitForText(page.locator('#lookup-fields dd.reason'), 'failed: out of attempts');
      assert.match(
        (await page.locator('#lookup-fields .error-stack').textContent()) ?? '',
        /<img src=x onerror=alert\(1\)>\n<script>alert\(2\)<\/script>/,
      );
      await page.locator('#lookup-id').fill('waiting');
      await page.getByRole('button', { name: 'Find', exact: true }).click();
      await waitForText(page.locator('#lookup-fields'), /Expires\d{4}-\d\d-\d\d .*\(in 1 h 29 min.*\): not run if not started by then/);
      if (!bypassCSP) await screenshot(t, page, shots, 'flow-jobs');

      await sleep(300); // a broken image would have fired its onerror by now
      assert.equal(await page.locator('img').count(), 0, 'no <img> element was created');
      assert.equal(await page.locator('script').count(), 1, "only the page's own module script");
      assert.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined);
      await waitForText(page.locator('#totals'), /· 1 expired ·/);
      await assertClean(watched);
    }
  });
});
