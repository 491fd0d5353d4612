// Browser test harness of the dashboard: Debian's Chromium driven by playwright-core against the
// real HTTP service (buildApp) on the file's private Redis. A page is opened in a fresh context
// that records whatever it should not do (dialogs, script errors, CSP violations, console errors).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { chromium, type Browser, type BrowserContextOptions, type Locator, type Page } from 'playwright-core';
import { buildApp, type AppOptions } from '../../src/server/app.js';
import { sleep, type RedisFixture } from './redis.js';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const NO_CHROMIUM = `No Chromium at ${CHROMIUM_PATH}. Run scripts/install-browser.sh (it installs Debian's chromium), or set CHROMIUM_PATH to a Chromium binary.`;
export const HOSTILE_IMG = '<img src=x onerror=alert(1)>';
export const HOSTILE_SCRIPT = '<script>alert(2)</script>';

/** Launches Chromium; throws NO_CHROMIUM without one (browser tests are never skipped). */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(NO_CHROMIUM);
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 30_000 });
}

// HTTP API as a producer or consumer calls it

export interface Service {
  base: string;
  call<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  close(): Promise<void>;
}

/** The service on the fixture's Redis, listening on a free loopback port. */
export async function startService(redis: RedisFixture, options: Partial<AppOptions> = {}): Promise<Service> {
  const app = await buildApp({ connection: redis.url, ...options });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    base,
    async call<T>(method: string, path: string, body?: unknown) {
      const headers: Record<string, string> = {};
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const response = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const json = /json/.test(response.headers.get('content-type') ?? '');
      const text = await response.text();
      return { status: response.status, body: (json && text ? JSON.parse(text) : {}) as T };
    },
    close: () => app.close(),
  };
}

// The page

export interface Watched {
  page: Page;
  dialogs: string[];
  pageErrors: string[];
  consoleErrors: string[];
  requests: { method: string; url: string; authorization: string | undefined }[];
  /** CSP violations the page reported (none expected: the dashboard has no inline code or style). */
  violations(): Promise<string[]>;
}

/** Opens the dashboard in a fresh browser context and records anything it does that it should not. */
export async function open(browser: Browser, url: string, options: BrowserContextOptions = {}): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 }, ...options });
  const page = await context.newPage();
  const watched: Watched = {
    page,
    dialogs: [],
    pageErrors: [],
    consoleErrors: [],
    requests: [],
    violations: () => page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations),
  };
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { cspViolations: string[] }).cspViolations = seen;
    document.addEventListener('securitypolicyviolation', event =>
      seen.push(`${event.violatedDirective}: ${event.blockedURI} ${event.sample}`),
    );
  });
  page.on('dialog', dialog => {
    watched.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss();
  });
  page.on('pageerror', error => watched.pageErrors.push(String(error)));
  page.on('console', message => {
    if (message.type() === 'error') watched.consoleErrors.push(message.text());
  });
  page.on('request', request =>
    watched.requests.push({ method: request.method(), url: request.url(), authorization: request.headers().authorization }),
  );
  await page.goto(url);
  return watched;
}

/** No dialog, no script error, no CSP violation and (unless allowed) no failed request; then closes the page. */
export async function assertClean(watched: Watched, options: { httpErrors?: RegExp } = {}): Promise<void> {
  assert.deepEqual(watched.dialogs, [], 'no alert/confirm/prompt may open');
  assert.deepEqual(watched.pageErrors, [], 'the page threw');
  assert.deepEqual(await watched.violations(), [], 'the page broke its own CSP');
  const unexpected = watched.consoleErrors.filter(
    text => !(options.httpErrors && /Failed to load resource/.test(text) && options.httpErrors.test(text)),
  );
  assert.deepEqual(unexpected, [], 'console errors');
  await watched.page.context().close();
}

/** Polls a locator's text until it equals (or matches) `expected`. */
export async function waitForText(locator: Locator, expected: string | RegExp, timeoutMs = 6_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: string | null = null;
  while (Date.now() < deadline) {
    last = await locator.textContent({ timeout: 500 }).catch(() => null);
    if (last !== null && (typeof expected === 'string' ? last.trim() === expected : expected.test(last))) return;
    await sleep(50);
  }
  throw new Error(`Expected ${String(locator)} to read ${String(expected)}; it read ${JSON.stringify(last)}`);
}

export async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 6_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(50);
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** A full-page screenshot into `dir`, its path printed as a test diagnostic. */
export async function screenshot(t: TestContext, page: Page, dir: string, name: string): Promise<string> {
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  t.diagnostic(`screenshot: ${path}`);
  return path;
}
