// HTTP test harness: the service built on the file's private Redis, listening on a free loopback
// port, and a small fetch client that returns status, headers and the parsed body.
import { request as httpRequest } from 'node:http';
import { buildApp, type AppOptions } from '../../src/server/app.js';
import type { RedisFixture } from './redis.js';

export interface Answer {
  status: number;
  headers: Headers;
  /** Parsed JSON, or the text when the answer is not JSON. */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

export interface Client {
  readonly url: string;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
}

/**
 * The service on the file's Redis, started on first use (after the fixture's server is up) and
 * closed after the file's tests. `url` is set once a call has started it.
 */
export function useApp(redis: RedisFixture, options: Partial<AppOptions> = {}): Client & { start(): Promise<Client> } {
  let started: Promise<Client> | undefined;
  let url = '';
  const start = () =>
    (started ??= startApp(redis, options).then(client => {
      url = client.url;
      return client;
    }));
  return {
    get url() {
      return url;
    },
    start,
    call: async (...args) => (await start()).call(...args),
  };
}

/** Builds the app on the fixture's Redis and listens on 127.0.0.1:0; closed after the file's tests. */
export async function startApp(redis: RedisFixture, options: Partial<AppOptions> = {}): Promise<Client> {
  const app = await buildApp({ connection: redis.url, ...options });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  redis.track({ close: () => app.close() });
  return client(url, options.token);
}

/** `body`: an object is sent as JSON; a string is sent as is (with a JSON content type unless given). */
export function client(url: string, token?: string): Client {
  return {
    url,
    async call(method, path, body, headers = {}) {
      const all: Record<string, string> = {};
      if (token !== undefined) all.authorization = `Bearer ${token}`;
      if (body !== undefined) all['content-type'] = 'application/json';
      Object.assign(all, headers);
      const response = await fetch(url + path, {
        method,
        headers: all,
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: keep the text
      }
      return { status: response.status, headers: response.headers, body: parsed, text };
    },
  };
}

/** A raw request with full control of the headers (fetch refuses to set Host, and always sets Content-Length). */
export function rawRequest(
  url: string,
  options: { method: string; path: string; headers?: Record<string, string>; chunks?: (string | Buffer)[] },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(
      { host: target.hostname, port: target.port, method: options.method, path: options.path, headers: options.headers ?? {} },
      res => {
        answered = true;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', chunk => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    // The server may answer (413) and close before the whole body is sent.
    req.on('error', error => {
      if (!answered) reject(error);
    });
    for (const chunk of options.chunks ?? []) req.write(chunk);
    req.end();
  });
}
