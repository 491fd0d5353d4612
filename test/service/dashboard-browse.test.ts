// The dashboard's job browser, dead-letter delete and Redis/prefix line in a real browser
// (Debian's Chromium through playwright-core) against the real HTTP service and a private
// redis-server. Jobs are made through the HTTP API, as producers and consumers would.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { Queue } from '../../src/index.js';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  assertClean,
  CHROMIUM_PATH,
  HOSTILE_IMG,
  HOSTILE_SCRIPT,
  launchBrowser,
  NO_CHROMIUM,
  open as openPage,
  screenshot,
  startService,
  waitForText,
  waitUntil,
  type Service,
} from '../helpers/browser.js';
import { sleep, uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis();
const PREFIX = 'browse';
const shots = mkdtempSync(join(tmpdir(), 'sandglass-browse-'));

const jobUrl = (queue: string, id: string) => `/v1/queues/${queue}/jobs/${encodeURIComponent(id)}`;

async function addJobs(
  service: Service,
  queue: string,
  jobs: { payload: unknown; delay?: number | string; id?: string }[],
): Promise<string[]> {
  const { status, body } = await service.call<{ ids: string[] }>('POST', `/v1/queues/${queue}/jobs:bulk`, { jobs });
  assert.equal(status, 201, JSON.stringify(body));
  return body.ids;
}

interface Claimed {
  id: string;
  token: string;
}

async function claim(service: Service, queue: string, max: number): Promise<Claimed[]> {
  const { status, body } = await service.call<{ jobs: Claimed[] }>('POST', `/v1/queues/${queue}/claim`, {
    max,
    leaseMs: 120_000,
    waitMs: 0,
  });
  assert.equal(status, 200, JSON.stringify(body));
  return body.jobs;
}

/** Adds one job due now, claims it and fails it for good: a dead letter with `error` as its last error. */
async function deadLetter(service: Service, queue: string, payload: unknown, error: string, id: string): Promise<string> {
  await addJobs(service, queue, [{ payload, id }]);
  const [job] = await claim(service, queue, 1);
  assert.equal(job?.id, id, 'the only ready job is claimed');
  const failed = await service.call('POST', `${jobUrl(queue, id)}/fail`, { token: job.token, error, dead: true });
  assert.equal(failed.status, 200, JSON.stringify(failed.body));
  return id;
}

let browser: Browser;
const open = (url: string, options: BrowserContextOptions = {}) => openPage(browser, url, options);

/** The ids of the rows the browser shows (visible ones only), in order. */
async function shownIds(page: Page): Promise<string[]> {
  return page.locator('#browse-body tr:not([hidden]) .col-id').allTextContents();
}

/** Picks a state in the browser and waits until its first page is on screen. */
async function browseState(page: Page, state: string, rows: number): Promise<void> {
  await page.locator(`button.browse-state[data-state="${state}"]`).click();
  await waitForText(page.locator('#browse-page'), rows === 0 ? 'Page 1' : `Page 1 · 1–${rows}`);
  await waitUntil(async () => (await page.locator('#browse-body tr').count()) === rows, `${rows} ${state} rows`);
}

test('Chromium is installed for the browser tests', () => {
  assert.ok(existsSync(CHROMIUM_PATH), NO_CHROMIUM);
});

describe('dashboard job browser in a real browser', () => {
  let service: Service;

  before(async () => {
    browser = await launchBrowser();
    service = await startService(redis, { prefix: PREFIX });
  });

  after(async () => {
    await browser?.close();
    await service?.close();
  });

  test('pages through 60 delayed jobs 25 at a time: three pages, next and previous, no duplicates and no gaps', async () => {
    const queue = uniqueQueue('paging');
    // Due one minute apart from 1 h on: the list's order (soonest first) is the order of addition.
    const ids = await addJobs(
      service,
      queue,
      Array.from({ length: 60 }, (_, i) => ({
        payload: { orderId: 1000 + i },
        delay: 3_600_000 + i * 60_000,
        id: `order-${String(i).padStart(2, '0')}`,
      })),
    );

    const watched = await open(`${service.base}/?queue=${queue}`);
    const { page } = watched;
    await waitForText(page.locator('#count-delayed'), '60');
    await waitForText(page.locator('#browse-page'), 'Page 1 · 1–25');
    const first = await shownIds(page);
    assert.deepEqual(first, ids.slice(0, 25));
    assert.ok(await page.locator('#browse-prev').isDisabled(), 'no previous page on the first');

    // One row: the due time absolute and relative, the attempts, the payload as text.
    const row = page.locator('#browse-body tr').first();
    assert.match((await row.locator('.due-at').textContent()) ?? '', /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    assert.match((await row.locator('.due-in').textContent()) ?? '', /^in (59 min \d+ s|1 h( 0 min)?)$/);
    assert.equal(await row.locator('.col-attempts').textContent(), '0');
    assert.equal(await row.locator('.payload-preview').textContent(), '{"orderId":1000}');
    assert.ok(await row.locator('.col-extra').isHidden(), 'no error column for delayed jobs');

    await page.locator('#browse-next').click();
    await waitForText(page.locator('#browse-page'), 'Page 2 · 26–50');
    const second = await shownIds(page);
    await page.locator('#browse-next').click();
    await waitForText(page.locator('#browse-page'), 'Page 3 · 51–60');
    const third = await shownIds(page);
    assert.ok(await page.locator('#browse-next').isDisabled(), 'the last page has no next');
    assert.deepEqual([...first, ...second, ...third], ids, 'every job once, in order');

    // Back: the same pages again (a stack of cursors, not a guess).
    await page.locator('#browse-prev').click();
    await waitForText(page.locator('#browse-page'), 'Page 2 · 26–50');
    assert.deepEqual(await shownIds(page), second);
    await page.locator('#browse-prev').click();
    await waitForText(page.locator('#browse-page'), 'Page 1 · 1–25');
    assert.deepEqual(await shownIds(page), first);

    // Another page size starts again at the first page.
    await page.locator('#browse-size').selectOption('50');
    await waitForText(page.locator('#browse-page'), 'Page 1 · 1–50');
    assert.deepEqual(await shownIds(page), ids.slice(0, 50));
    await page.locator('#browse-next').click();
    await waitForText(page.locator('#browse-page'), 'Page 2 · 51–60');
    assert.deepEqual(await shownIds(page), ids.slice(50));

    const lists = watched.requests
      .filter(request => /\/jobs\?state=delayed/.test(request.url))
      .map(request => new URL(request.url).searchParams);
    assert.ok(
      lists.some(params => params.get('limit') === '25' && params.has('cursor')),
      "pages are read with the API's cursor",
    );
    assert.ok(
      watched.requests.every(request => request.method === 'GET'),
      'browsing only reads',
    );
    await assertClean(watched);
  });

  test("pages through a partitioned queue: the partitions' pages merged in due order, no duplicates and no gaps", async () => {
    const queue = uniqueQueue('partitioned');
    const producer = new Queue<{ n: number }>(queue, { connection: redis.url, prefix: PREFIX, partitions: 4 });
    // Ids spread over the 4 partitions; due times interleave them (two jobs share each due time: id order breaks the tie).
    const base = Date.now() + 7_200_000;
    const jobs = Array.from({ length: 34 }, (_, i) => ({ id: `p-${(i * 7919) % 1000}`, at: base + Math.floor(i / 2) * 1_000, n: i }));
    try {
      for (const job of jobs) await producer.add({ n: job.n }, { id: job.id, at: job.at });
    } finally {
      await producer.close();
    }
    const expected = [...jobs].sort((a, b) => a.at - b.at || Buffer.compare(Buffer.from(a.id), Buffer.from(b.id))).map(job => job.id);

    const watched = await open(`${service.base}/?queue=${queue}`);
    const { page } = watched;
    await waitForText(page.locator('#count-delayed'), '34');
    await page.locator('#browse-size').selectOption('10');
    const seen: string[] = [];
    for (const [number, range] of [
      [1, '1–10'],
      [2, '11–20'],
      [3, '21–30'],
      [4, '31–34'],
    ] as const) {
      await waitForText(page.locator('#browse-page'), `Page ${number} · ${range}`);
      seen.push(...(await shownIds(page)));
      if (number < 4) await page.locator('#browse-next').click();
    }
    assert.ok(await page.locator('#browse-next').isDisabled());
    assert.deepEqual(seen, expected);
    await assertClean(watched);
  });

  test('browses every state, filters the page by id or payload, finds an id and opens a job from its row', async t => {
    const queue = uniqueQueue('states');
    const retention = await service.call('PUT', `/v1/queues/${queue}/retention`, { completed: { count: 100 } });
    assert.equal(retention.status, 200, JSON.stringify(retention.body));
    await deadLetter(service, queue, { orderId: 1 }, 'Error: card declined\n    at charge (pay.js:1:1)', 'dead-1');
    await addJobs(service, queue, [
      { payload: { orderId: 2 }, id: 'done-1' },
      { payload: { orderId: 3 }, id: 'active-1' },
    ]);
    const claimed = await claim(service, queue, 2);
    const done = claimed.find(job => job.id === 'done-1');
    assert.ok(done && claimed.some(job => job.id === 'active-1'));
    assert.equal((await service.call('POST', `${jobUrl(queue, 'done-1')}/ack`, { token: done.token, result: { ok: true } })).status, 200);
    await addJobs(service, queue, [
      { payload: { orderId: 4, customer: 'ada' }, id: 'ready-1' },
      { payload: { orderId: 5, customer: 'grace' }, id: 'ready-2' },
      { payload: { orderId: 6, customer: 'ada' }, id: 'ready-3' },
      { payload: { orderId: 7 }, delay: '2h', id: 'later-1' },
    ]);

    const watched = await open(`${service.base}/?queue=${queue}`);
    const { page } = watched;
    await waitForText(page.locator('#count-ready'), '3');
    await waitForText(page.locator('#browse-page'), 'Page 1 · 1–1');
    assert.deepEqual(await shownIds(page), ['later-1']);

    await browseState(page, 'ready', 3);
    assert.deepEqual((await shownIds(page)).sort(), ['ready-1', 'ready-2', 'ready-3']);
    await browseState(page, 'active', 1);
    assert.deepEqual(await shownIds(page), ['active-1']);
    await browseState(page, 'completed', 1);
    assert.deepEqual(await shownIds(page), ['done-1']);
    assert.match((await page.locator('#browse-body .extra-sub').textContent()) ?? '', /ago$/);
    await browseState(page, 'dead', 1);
    const dead = page.locator('#browse-body tr').first();
    assert.equal(await dead.locator('.extra-line').textContent(), 'Error: card declined');
    assert.match((await dead.locator('.extra-sub').textContent()) ?? '', /^out of attempts · died .* ago$/);
    assert.match((await dead.locator('.col-attempts').textContent()) ?? '', /^1( of \d+)?$/);
    assert.ok(await dead.getByRole('button', { name: 'Delete' }).isVisible());

    await screenshot(t, page, shots, 'browse-dead');

    // The cards open their state too.
    await page.locator('#count-ready').click();
    await waitForText(page.locator('#browse-page'), 'Page 1 · 1–3');
    assert.equal(await page.locator('button.browse-state[data-state="ready"]').getAttribute('aria-pressed'), 'true');

    // The filter narrows the page shown, by id or payload text, in any case.
    await page.locator('#browse-filter').fill('ADA');
    await waitForText(page.locator('#browse-page'), 'Page 1 · 1–3 · 2 of 3 match');
    assert.deepEqual((await shownIds(page)).sort(), ['ready-1', 'ready-3']);
    await page.locator('#browse-filter').fill('ready-2');
    await waitForText(page.locator('#browse-page'), /1 of 3 match$/);
    assert.deepEqual(await shownIds(page), ['ready-2']);
    await page.locator('#browse-filter').fill('nobody');
    await waitForText(page.locator('#browse-state'), /None of the 3 jobs on this page matches “nobody”/);
    await page.locator('#browse-filter').fill('');
    await waitForText(page.locator('#browse-page'), 'Page 1 · 1–3');

    // Enter finds an exact id in any state (the job lookup), here a delayed one.
    await page.locator('#browse-filter').fill('later-1');
    await page.locator('#browse-filter').press('Enter');
    await waitForText(page.locator('#lookup-fields dd.state-delayed'), 'delayed');
    assert.equal(await page.locator('#lookup-fields dd').first().textContent(), 'later-1');

    // A click on a row opens that job's details.
    await page.locator('#browse-filter').fill('');
    await page.locator('#browse-body tr', { hasText: 'ready-2' }).locator('.payload-preview').click();
    await waitForText(page.locator('#lookup-fields dd').first(), 'ready-2');
    await waitForText(page.locator('#lookup-fields dd.state-ready'), 'ready');
    assert.match((await page.locator('#lookup-fields .payload').textContent()) ?? '', /"customer": "grace"/);

    // The section navigation reaches the schedules and limits panels.
    const inView = (id: string) =>
      page.evaluate(target => {
        const box = (document.getElementById(target) as HTMLElement).getBoundingClientRect();
        // At its top, or as far as the page scrolls (a panel near the end cannot reach the top).
        const bottom = window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2;
        return box.top >= -1 && (box.top < 60 || (bottom && box.top < window.innerHeight - 40));
      }, id);
    for (const [label, title] of [
      ['Schedules', 'schedules-title'],
      ['Browse jobs', 'browse-title'],
      ['Limits & retention', 'flow-title'],
      ['Dead letters', 'dead-title'],
    ] as const) {
      // A panel above may still grow as its data arrives on a loaded machine, moving this one down
      // after the scroll: a user clicks again, and so does the test, up to three times.
      let shown = false;
      for (let click = 0; click < 3 && !shown; click++) {
        await page.locator('.section-nav button', { hasText: label }).click();
        shown = await waitUntil(() => inView(title), `the ${label} panel scrolled into view`, 3_000).then(
          () => true,
          () => false,
        );
      }
      assert.ok(shown, `the ${label} panel scrolled into view (three clicks on its button)`);
    }

    assert.ok(
      watched.requests.every(request => request.method === 'GET'),
      'browsing and filtering only read',
    );
    await assertClean(watched);
  });

  test('deletes one dead letter after a confirming second click; a dead letter already gone is said plainly', async () => {
    const queue = uniqueQueue('delete');
    for (const id of ['dead-a', 'dead-b', 'dead-c', 'dead-d', 'dead-e'])
      await deadLetter(service, queue, { id }, `Error: ${id} failed`, id);

    const watched = await open(`${service.base}/?queue=${queue}`);
    const { page } = watched;
    await waitForText(page.locator('#count-dead'), '5');
    await browseState(page, 'dead', 5);

    const row = page.locator('#browse-body tr', { hasText: 'dead-b' });
    const remove = row.getByRole('button', { name: 'Delete' });
    await remove.click();
    await waitForText(row.locator('.delete-dead'), 'Confirm delete');
    assert.equal((await service.call('GET', jobUrl(queue, 'dead-b'))).status, 200, 'the first click deletes nothing');
    await row.locator('.delete-dead').click();
    await waitForText(page.locator('#browse-result'), 'Dead letter dead-b deleted.');
    await waitUntil(async () => (await page.locator('#browse-body tr', { hasText: 'dead-b' }).count()) === 0, 'the row to go');
    assert.equal((await service.call('GET', jobUrl(queue, 'dead-b'))).status, 404, 'gone from the API');
    await waitForText(page.locator('#count-dead'), '4');
    await waitForText(page.locator('#browse-page'), 'Page 1 · 1–4');

    // An armed button that is not clicked again disarms by itself.
    const other = page.locator('#browse-body tr', { hasText: 'dead-c' }).locator('.delete-dead');
    await other.click();
    await waitForText(other, 'Confirm delete');
    await waitForText(other, 'Delete', 8_000);
    assert.equal((await service.call('GET', jobUrl(queue, 'dead-c'))).status, 200);

    // Deleted elsewhere meanwhile: the page says so, and drops the row. The page's own refresh of
    // the listing is held until the second click, or it could drop the row before (on a loaded
    // machine it did): the case is a page that has not seen the deletion yet.
    let releaseListing = () => {};
    const listingHeld = new Promise<void>(resolve => (releaseListing = resolve));
    const isListing = (url: URL) => url.pathname === `/v1/queues/${queue}/jobs`;
    await page.route(isListing, async route => {
      if (route.request().method() === 'GET') await listingHeld;
      await route.continue();
    });
    const stale = page.locator('#browse-body tr', { hasText: 'dead-a' }).locator('.delete-dead');
    await stale.click();
    await waitForText(stale, 'Confirm delete');
    assert.equal((await service.call('DELETE', jobUrl(queue, 'dead-a'))).status, 200);
    await stale.click();
    releaseListing();
    await page.unroute(isListing);
    await waitForText(page.locator('#browse-result'), /^Job dead-a was already gone/);
    await waitUntil(async () => (await page.locator('#browse-body tr', { hasText: 'dead-a' }).count()) === 0, 'the stale row to go');

    // From the job's details too, with the same confirming second click.
    await page.locator('#browse-body tr', { hasText: 'dead-d' }).locator('.col-id .link').click();
    await waitForText(page.locator('#lookup-fields dd.state-dead'), 'dead');
    const button = page.locator('#lookup-cancel');
    await waitForText(button, 'Delete dead letter');
    await button.click();
    await waitForText(button, 'Click again to delete it');
    assert.equal((await service.call('GET', jobUrl(queue, 'dead-d'))).status, 200);
    await button.click();
    await waitForText(page.locator('#lookup-message'), 'Dead letter dead-d deleted.');
    assert.equal((await service.call('GET', jobUrl(queue, 'dead-d'))).status, 404);
    await waitForText(page.locator('#count-dead'), '2');

    // And from the Dead letters panel.
    const item = page.locator('#dead-list li', { hasText: 'dead-e' });
    await item.locator('.delete-dead').click();
    await waitForText(item.locator('.delete-dead'), 'Confirm delete');
    await item.locator('.delete-dead').click();
    await waitForText(page.locator('#dead-result'), 'Dead letter dead-e deleted.');
    assert.equal((await service.call('GET', jobUrl(queue, 'dead-e'))).status, 404);
    await waitForText(page.locator('#count-dead'), '1');
    await waitForText(page.locator('#browse-page'), 'Page 1 · 1–1');
    assert.deepEqual(await shownIds(page), ['dead-c']);
    assert.equal(await page.locator('#dead-list li').count(), 1);

    const writes = watched.requests
      .filter(request => request.method !== 'GET')
      .map(request => `${request.method} ${new URL(request.url).pathname}`);
    assert.deepEqual(
      writes,
      [`DELETE ${jobUrl(queue, 'dead-b')}`, `DELETE ${jobUrl(queue, 'dead-d')}`, `DELETE ${jobUrl(queue, 'dead-e')}`],
      'one DELETE per confirmed delete, none for a job already gone',
    );
    await assertClean(watched, { httpErrors: /404/ });
  });

  test('shows which Redis and prefix it reads: address, mode and prefix, never the password', async () => {
    const user = 'dash-user';
    const password = 'dash-Password-77';
    await redis.raw.call('ACL', 'SETUSER', user, 'on', `>${password}`, '~*', '&*', '+@all');
    const guarded = await startService(redis, {
      connection: `redis://${user}:${password}@127.0.0.1:${redis.server.port}`,
      prefix: 'shop-eu.1',
    });
    try {
      const queue = uniqueQueue('info');
      await addJobs(guarded, queue, [{ payload: {}, delay: '1h' }]);
      const watched = await open(`${guarded.base}/?queue=${queue}`);
      const { page } = watched;
      await waitForText(page.locator('#count-delayed'), '1');
      await waitForText(page.locator('#redis-nodes'), `127.0.0.1:${redis.server.port}`);
      await waitForText(page.locator('#redis-mode'), '(single)');
      await waitForText(page.locator('#redis-prefix'), 'shop-eu.1');
      const text = (await page.locator('body').textContent()) ?? '';
      assert.ok(!text.includes(password) && !text.includes(user), 'neither the password nor the user is on the page');
      assert.ok(await page.locator('#redis-info').isVisible());
      await assertClean(watched);
    } finally {
      await guarded.close();
    }
  });

  test('shows hostile ids, payloads, dead-letter errors and Redis names in the new views as text and runs none of them', async () => {
    const queue = uniqueQueue('hostile');
    const hostilePayload = { html: HOSTILE_IMG, script: HOSTILE_SCRIPT, flag: '<img src=x onerror="window.pwned=1">' };
    await deadLetter(service, queue, hostilePayload, `${HOSTILE_IMG}\n${HOSTILE_SCRIPT}`, HOSTILE_IMG);
    await addJobs(service, queue, [{ payload: HOSTILE_SCRIPT, delay: '10m', id: HOSTILE_SCRIPT }]);
    // The new script builds the page with DOM calls only, like the others.
    const code = (await (await fetch(`${service.base}/browse.js`)).text()).replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
    assert.doesNotMatch(code, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
    // Queue names and prefixes cannot hold markup: the API refuses them.
    const refused = await service.call('POST', `/v1/queues/${encodeURIComponent(HOSTILE_IMG)}/jobs`, { payload: {} });
    assert.equal(refused.status, 400);

    for (const bypassCSP of [true, false]) {
      const watched = await open(`${service.base}/?queue=${queue}`, { bypassCSP });
      const { page } = watched;
      await waitForText(page.locator('#browse-page'), 'Page 1 · 1–1');
      await waitForText(page.locator('#browse-body .col-id'), HOSTILE_SCRIPT);
      await waitForText(page.locator('#browse-body .payload-preview'), JSON.stringify(HOSTILE_SCRIPT));
      await page.locator('#browse-filter').fill('<script>');
      await waitForText(page.locator('#browse-page'), /1 of 1 match$/);
      // A hostile filter text is repeated in the "no match" line: as text.
      await page.locator('#browse-filter').fill(HOSTILE_IMG.replace('x', 'y'));
      await waitForText(
        page.locator('#browse-state'),
        `None of the 1 jobs on this page matches “${HOSTILE_IMG.replace('x', 'y')}”. Press Enter to find a job by this exact id.`,
      );
      await page.locator('#browse-filter').fill('');

      await browseState(page, 'dead', 1);
      const dead = page.locator('#browse-body tr').first();
      await waitForText(dead.locator('.col-id'), HOSTILE_IMG);
      await waitForText(dead.locator('.extra-line'), HOSTILE_IMG);
      // The preview is the payload's JSON as text, cut at 120 characters; all of it in the tooltip.
      assert.equal(await dead.locator('.payload-preview').textContent(), `${JSON.stringify(hostilePayload).slice(0, 119)}…`);
      assert.equal(await dead.locator('.payload-preview').getAttribute('title'), JSON.stringify(hostilePayload));
      await page.locator('#browse-filter').fill('window.pwned');
      await waitForText(page.locator('#browse-page'), /1 of 1 match$/);
      await page.locator('#browse-filter').fill('');
      await dead.locator('.payload-preview').click();
      await waitForText(page.locator('#lookup-fields dd').first(), HOSTILE_IMG);
      // The not-found message of a hostile id typed into the finder is text too.
      await page.locator('#browse-filter').fill(`${HOSTILE_IMG}x`);
      await page.locator('#browse-filter').press('Enter');
      await waitForText(
        page.locator('#lookup-message'),
        `No job with id ${HOSTILE_IMG}x in this queue (it completed, was cancelled, or never existed).`,
      );
      // Delete it: the outcome names the hostile id, as text. (Made again for the second round.)
      await page.locator('#browse-filter').fill('');
      await dead.locator('.delete-dead').click();
      await waitForText(dead.locator('.delete-dead'), 'Confirm delete');
      await dead.locator('.delete-dead').click();
      await waitForText(page.locator('#browse-result'), `Dead letter ${HOSTILE_IMG} deleted.`);
      await deadLetter(service, queue, hostilePayload, `${HOSTILE_IMG}\n${HOSTILE_SCRIPT}`, HOSTILE_IMG);

      await sleep(300); // a broken image would have fired its onerror by now
      assert.equal(await page.locator('img').count(), 0, 'no <img> element was created');
      assert.equal(await page.locator('script').count(), 1, "only the page's own module script");
      assert.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined);
      await assertClean(watched, { httpErrors: /404/ });
    }

    // The Redis line: a Sentinel master name is free text (no Redis needed to show it).
    // The client is the test's (the service never closes a client it is given): disconnect() stops
    // its reconnecting to the sentinel that is not there, so the process can exit.
    const client = new Redis({
      sentinels: [{ host: '127.0.0.1', port: 1 }],
      name: HOSTILE_IMG,
      lazyConnect: true,
      maxRetriesPerRequest: 1,
    });
    client.on('error', () => undefined);
    const sentinel = await startService(redis, { connection: client, prefix: 'hostile' });
    try {
      for (const bypassCSP of [true, false]) {
        const watched = await open(`${sentinel.base}/`, { bypassCSP });
        const { page } = watched;
        await waitForText(page.locator('#redis-mode'), `(sentinel · master ${HOSTILE_IMG})`, 15_000);
        await waitForText(page.locator('#redis-nodes'), '127.0.0.1:1');
        await sleep(300);
        assert.equal(await page.locator('img').count(), 0, 'no <img> element was created');
        assert.equal(await page.locator('script').count(), 1);
        assert.deepEqual(watched.dialogs, []);
        assert.deepEqual(watched.pageErrors, []);
        await watched.page.context().close();
      }
    } finally {
      client.disconnect();
      await sentinel.close();
    }
  });
});
