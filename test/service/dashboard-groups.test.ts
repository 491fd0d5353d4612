// The dashboard's groups (issue 20) in a real browser (Chromium driven by playwright-core) against
// the real HTTP service and a private redis-server: a queue's groups busiest first, more of them a
// page at a time, the held and paused filters, Pause and Resume of one group from the page (seen
// through the API too), the default group limits, and each job's group in the job lists and the
// lookup. A group named like markup renders as text; a queue without groups looks as before.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { PullConsumer, Queue } from '../../src/index.js';
import {
  assertClean,
  HOSTILE_IMG,
  launchBrowser,
  open,
  screenshot,
  startService,
  waitForText,
  waitUntil,
  type Service,
  type Watched,
} from '../helpers/browser.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const shots = mkdtempSync(join(tmpdir(), 'sandglass-dashboard-groups-'));
const TOKEN = 'dashboard-groups-token-0123456789';

interface GroupRow {
  group: string;
  waiting: number;
  ready: number;
  active: number;
  limited: boolean;
  paused: boolean;
}

/** The names in the groups table, in order (only the rows the filter shows). */
const shownGroups = (page: Page) => page.locator('#groups-body tr:not([hidden]) .group-name').allTextContents();

/** The row of one group (a locator, so it is found again after every re-render). */
const rowOf = (page: Page, group: string) =>
  page.locator('#groups-body tr', { has: page.getByRole('rowheader', { name: group, exact: true }) });

/** How many times the page has read the queue's groups so far. */
const groupReads = (watched: Watched, queue: string) =>
  watched.requests.filter(request => new URL(request.url).pathname === `/v1/queues/${queue}/groups`).length;

describe('dashboard groups in a real browser', () => {
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

  async function groupsByApi(queue: string): Promise<GroupRow[]> {
    const { status, body } = await service.call<{ groups: GroupRow[] }>('GET', `/v1/queues/${queue}/groups?limit=1000`);
    assert.equal(status, 200, JSON.stringify(body));
    return body.groups;
  }

  test('lists the groups busiest first, loads more, filters held and paused ones, pauses and resumes one; a group named like markup is text', async t => {
    const name = uniqueQueue('groups');
    const queue = queueOf(name);
    await queue.setGroupLimits({ concurrency: 1 });
    // One job of 'shop-a' running (the only job when it is claimed): with concurrency 1 in each
    // group, the other four of 'shop-a' are held back.
    await queue.addBulk([1, 2, 3, 4, 5].map(n => ({ payload: { n }, group: 'shop-a', id: `a-${n}` })));
    const consumer = track(new PullConsumer<unknown>(name, { connection: redis.url }));
    // Room for five: the claim takes one and meets the group's limit for the others.
    const claimed = await consumer.claim({ max: 5, leaseMs: 600_000 });
    assert.deepEqual(
      claimed.map(job => [job.id, job.group]),
      [['a-1', 'shop-a']],
    );
    // Busiest (most jobs waiting or running) first: 'shop-a' (5), the markup-named group (3), 'shop-b' (2), then 60 groups of one.
    await queue.addBulk([
      ...[1, 2, 3].map(n => ({ payload: { n }, group: HOSTILE_IMG, id: `hostile-${n}` })),
      ...[1, 2].map(n => ({ payload: { n }, group: 'shop-b', id: `b-${n}` })),
      ...Array.from({ length: 60 }, (_, i) => ({ payload: { i }, group: `tail-${String(i).padStart(2, '0')}` })),
      { payload: { plain: true }, id: 'plain' },
    ]);

    const watched = await open(browser, url(name), { bypassCSP: true });
    const { page } = watched;
    await waitUntil(async () => page.locator('#groups-panel').isVisible(), 'the Groups panel');
    assert.ok(await page.locator('.nav-link[data-target="groups-panel"]').isVisible(), 'a Groups link in the section navigation');
    await waitUntil(async () => (await shownGroups(page)).length === 50, 'the first 50 groups');
    const firstPage = await shownGroups(page);
    assert.deepEqual(firstPage.slice(0, 3), ['shop-a', HOSTILE_IMG, 'shop-b'], 'the busiest groups first');
    assert.deepEqual(
      firstPage,
      (await groupsByApi(name)).slice(0, 50).map(group => group.group),
      'in the order of the API',
    );
    await waitForText(rowOf(page, 'shop-a').locator('.waiting'), '4');
    await waitForText(rowOf(page, 'shop-a').locator('.active'), '1');
    await waitForText(rowOf(page, HOSTILE_IMG).locator('.waiting'), '3');
    await waitForText(page.locator('#group-limits dd[data-field="Concurrency"]'), 'at most 1 active at once in each group');
    await waitForText(page.locator('#group-limits dd[data-field="Rate"]'), 'no limit');
    await waitForText(page.locator('#groups-summary'), /^50 groups loaded \(more to load\) · 1 held · 0 paused$/);

    // Load more: the other 13 groups, each once.
    await page.locator('#groups-more').click();
    await waitUntil(async () => (await shownGroups(page)).length === 63, 'all 63 groups');
    const all = await shownGroups(page);
    assert.equal(new Set(all).size, 63, 'no group listed twice');
    await waitUntil(async () => page.locator('#groups-more').isHidden(), 'no "Load more" after the last page');
    // The refresh keeps every loaded row (it reads them all again).
    const reads = groupReads(watched, name);
    await waitUntil(async () => groupReads(watched, name) >= reads + 2, 'two more refreshes');
    assert.equal((await shownGroups(page)).length, 63);

    // The held filter: only the group whose running job fills its concurrency.
    await page.locator('button.groups-filter[data-filter="limited"]').click();
    await waitUntil(async () => (await shownGroups(page)).join() === 'shop-a', 'only the held group');
    await waitForText(rowOf(page, 'shop-a').locator('.limited'), 'held');
    await page.locator('button.groups-filter[data-filter="paused"]').click();
    await waitForText(page.locator('#groups-state'), 'None of the 63 loaded groups is paused.');

    // Pause the markup-named group from the page.
    await page.locator('button.groups-filter[data-filter="all"]').click();
    const before = watched.requests.length;
    await rowOf(page, HOSTILE_IMG).getByRole('button', { name: 'Pause', exact: true }).click();
    await waitForText(page.locator('#groups-result'), `Group ${HOSTILE_IMG} is paused: its jobs wait until it is resumed.`);
    await waitForText(rowOf(page, HOSTILE_IMG).locator('.paused'), 'paused');
    await waitForText(rowOf(page, HOSTILE_IMG).locator('.group-pause'), 'Resume');
    const writes = watched.requests.slice(before).filter(request => request.method !== 'GET');
    assert.deepEqual(
      writes.map(request => `${request.method} ${new URL(request.url).pathname}`),
      [`POST /v1/queues/${name}/groups/${encodeURIComponent(HOSTILE_IMG)}/pause`],
    );
    assert.equal(writes[0]?.authorization, `Bearer ${TOKEN}`);
    assert.equal((await groupsByApi(name)).find(group => group.group === HOSTILE_IMG)?.paused, true, 'paused, as the API says');
    await page.locator('button.groups-filter[data-filter="paused"]').click();
    await waitUntil(async () => (await shownGroups(page)).join() === HOSTILE_IMG, 'only the paused group');
    await waitForText(page.locator('#groups-summary'), /· 1 paused$/);
    await screenshot(t, page, shots, 'groups-paused');

    // Resume it.
    await rowOf(page, HOSTILE_IMG).getByRole('button', { name: 'Resume', exact: true }).click();
    await waitForText(page.locator('#groups-result'), `Group ${HOSTILE_IMG} is resumed: its jobs run again.`);
    await waitForText(page.locator('#groups-state'), 'None of the 63 loaded groups is paused.');
    assert.equal((await groupsByApi(name)).find(group => group.group === HOSTILE_IMG)?.paused, false, 'resumed, as the API says');
    await page.locator('button.groups-filter[data-filter="all"]').click();
    await waitForText(rowOf(page, HOSTILE_IMG).locator('.group-pause'), 'Pause');

    // Each job's group: in the job browser and the lookup; a job of the default group shows none.
    await page.locator('#browse-size').selectOption('100');
    await page.locator('button.browse-state[data-state="ready"]').click();
    const hostileJob = page.locator('#browse-body tr', { has: page.locator('.link', { hasText: 'hostile-1' }) });
    await waitForText(hostileJob.locator('.job-group'), `group ${HOSTILE_IMG}`);
    await hostileJob.locator('.link').click();
    await waitForText(page.locator('#lookup-fields dd').first(), 'hostile-1');
    await waitForText(page.locator('#lookup-fields dt:text-is("Group") + dd'), HOSTILE_IMG);
    const plainJob = page.locator('#browse-body tr', { has: page.locator('.link', { hasText: 'plain' }) });
    await waitForText(plainJob.locator('.job-group'), '');
    await plainJob.locator('.link').click();
    await waitForText(page.locator('#lookup-fields dd').first(), 'plain');
    assert.equal(await page.locator('#lookup-fields dt', { hasText: 'Group' }).count(), 0, 'no Group field for the default group');
    const activeRow = page.locator('#active-body tr');
    await waitForText(activeRow.locator('.job-group'), 'group shop-a');

    assert.equal(await page.locator('img').count(), 0, 'no <img> element was created');
    assert.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined);
    await assertClean(watched);
  });

  test('a queue without groups shows no Groups panel, and the page keeps its CSP', async () => {
    const name = uniqueQueue('no-groups');
    const queue = queueOf(name);
    await queue.add({ n: 1 }, { id: 'only' });
    const watched = await open(browser, url(name));
    const { page } = watched;
    await waitForText(page.locator('#count-ready'), '1');
    // Two reads of the groups: the first one's answer is on screen (refreshes never overlap).
    await waitUntil(async () => groupReads(watched, name) >= 2, 'two reads of the groups');
    assert.ok(await page.locator('#groups-panel').isHidden(), 'no Groups panel');
    assert.ok(await page.locator('.nav-link[data-target="groups-panel"]').isHidden(), 'no Groups link');
    assert.equal(
      watched.requests.filter(request => new URL(request.url).pathname.endsWith('/group-limits')).length,
      0,
      'the default group limits are not read for a queue without groups',
    );
    await page.locator('button.browse-state[data-state="ready"]').click();
    await waitForText(page.locator('#browse-body .col-id'), 'only');
    await assertClean(watched);
  });
});
