// The dashboard with named tokens, in a real Chromium: it reads what its token may do from
// /v1/info, says so in the top bar, and shows no control the token may not use (a read token sees
// no pause, purge, retry, delete, limits or schedule buttons, nor the add form; an admin sees them all).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { TokenSet, tokenDigest, type Scope } from '../../src/server/tokens.js';
import { assertClean, CHROMIUM_PATH, launchBrowser, open, startService, waitForText, type Service } from '../helpers/browser.js';
import { useRedis } from '../helpers/redis.js';

const QUEUE = 'orders-eu';
const secret = (name: string) => `dashboard-${name}-token-0123456789`;
const entry = (name: string, scopes: Scope[], queues: string[]) => ({ name, sha256: tokenDigest(secret(name)), scopes, queues });

const redis = useRedis();
let browser: Browser;
let service: Service;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(name: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${service.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${secret(name)}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** The page of `queue` with the token of `name`, once its dead letter and schedule are on screen. */
async function openAs(name: string) {
  const watched = await open(browser, `${service.base}/?queue=${QUEUE}#token=${encodeURIComponent(secret(name))}`);
  await watched.page.locator('#access').waitFor({ state: 'visible' });
  await watched.page.locator('#dead-list .dead-item').first().waitFor({ state: 'attached' });
  await watched.page.locator('#schedules-table .schedule-row').first().waitFor({ state: 'attached' });
  return watched;
}

/** The admin controls, and whether each is shown. */
async function shown(page: Page): Promise<Record<string, boolean>> {
  const controls: Record<string, string> = {
    pause: '#pause-button',
    purge: '#purge-all',
    retryAll: '#retry-all',
    retry: '#dead-list .retry',
    deleteDead: '#dead-list .delete-dead',
    limits: '#flow-edit',
    schedulePause: '#schedules-table button.pause',
    scheduleRemove: '#schedules-table button.remove',
    addForm: '#add-form',
  };
  const result: Record<string, boolean> = {};
  for (const [name, selector] of Object.entries(controls)) result[name] = await page.locator(selector).first().isVisible();
  return result;
}

describe('dashboard with scoped tokens', { skip: existsSync(CHROMIUM_PATH) ? false : 'no Chromium' }, () => {
  before(async () => {
    browser = await launchBrowser();
    const tokens = new TokenSet([
      entry('ops', ['admin'], ['*']),
      entry('reader', ['read'], ['orders-*']),
      entry('shop', ['produce', 'read'], ['orders-*']),
    ]);
    service = await startService(redis, { tokens, prefix: 'scopes' });
    await call('ops', 'POST', `/v1/queues/${QUEUE}/jobs`, { id: 'doomed', payload: { n: 1 }, maxAttempts: 1 });
    const claimed = await call('ops', 'POST', `/v1/queues/${QUEUE}/claim`, { max: 1 });
    const [job] = claimed.body.jobs;
    assert.equal((await call('ops', 'POST', `/v1/queues/${QUEUE}/jobs/doomed/fail`, { token: job.token, dead: true })).status, 200);
    assert.equal((await call('ops', 'PUT', `/v1/queues/${QUEUE}/schedules/nightly`, { every: '1h' })).status, 200);
    await call('ops', 'POST', '/v1/queues/billing-1/jobs', { payload: 'not for the reader', delay: 3_600_000 });
  });
  after(async () => {
    await browser?.close();
    await service?.close();
  });

  test('a read token: "read-only token: reader", only its queues, and none of the controls that change things', async () => {
    const watched = await openAs('reader');
    const { page } = watched;
    await waitForText(page.locator('#access'), 'read-only token: reader · queues orders-*');
    await waitForText(page.locator('#count-dead'), '1');
    assert.deepEqual(await shown(page), {
      pause: false,
      purge: false,
      retryAll: false,
      retry: false,
      deleteDead: false,
      limits: false,
      schedulePause: false,
      scheduleRemove: false,
      addForm: false,
    });
    const queues = await page.locator('#queues-body .queue-name').allTextContents();
    assert.deepEqual(queues, [QUEUE], 'the other queue is not listed');
    await assertClean(watched);
  });

  test('a produce and read token: the add form and deletes, no admin control', async () => {
    const watched = await openAs('shop');
    const { page } = watched;
    await waitForText(page.locator('#access'), 'produce, read token: shop · queues orders-*');
    assert.deepEqual(await shown(page), {
      pause: false,
      purge: false,
      retryAll: false,
      retry: false,
      deleteDead: true,
      limits: false,
      schedulePause: false,
      scheduleRemove: false,
      addForm: true,
    });
    await assertClean(watched);
  });

  test('an admin token sees every control, and every queue', async () => {
    const watched = await openAs('ops');
    const { page } = watched;
    await waitForText(page.locator('#access'), 'admin token: ops');
    await waitForText(page.locator('#count-dead'), '1');
    assert.deepEqual(await shown(page), {
      pause: true,
      purge: true,
      retryAll: true,
      retry: true,
      deleteDead: true,
      limits: true,
      schedulePause: true,
      scheduleRemove: true,
      addForm: true,
    });
    await waitForText(page.locator('#queues-body'), /billing-1/);
    // The control works for it: pause the queue from the page.
    await page.locator('#pause-button').click();
    await page.locator('#paused-badge').waitFor({ state: 'visible' });
    assert.equal((await call('ops', 'GET', `/v1/queues/${QUEUE}`)).body.stats.paused, true);
    await assertClean(watched);
  });
});
