// The readable log lines of `sandglass serve` on a terminal (src/server/logger.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger, prettyLine } from '../../src/server/logger.js';

/** 2026-12-03 12:34:56.789 in this machine's time zone, as the formatter shows local time. */
const TIME = new Date(2026, 11, 3, 12, 34, 56, 789).getTime();

describe('pretty log lines', () => {
  it('shows time HH:MM:SS.mmm, level, message and key=value fields; not pid, hostname or name', () => {
    const line = prettyLine(
      JSON.stringify({
        level: 30,
        time: TIME,
        pid: 42,
        hostname: 'vm',
        name: 'sandglass',
        url: 'http://127.0.0.1:8080',
        dashboard: 'http://127.0.0.1:8080/',
        redis: 'private redis-server, pid 7',
        webhooks: ['a -> https://example.com'],
        msg: 'sandglass serve listening on http://127.0.0.1:8080',
      }),
    );
    assert.equal(
      line,
      '12:34:56.789 INFO  sandglass serve listening on http://127.0.0.1:8080 url=http://127.0.0.1:8080 ' +
        'dashboard=http://127.0.0.1:8080/ redis="private redis-server, pid 7" webhooks="a -> https://example.com"',
    );
  });

  it('names every level, keeps at most six fields and one line, and passes a line that is not JSON through', () => {
    assert.match(
      prettyLine(JSON.stringify({ level: 50, time: TIME, msg: 'boom', error: 'x\ny' })),
      /^12:34:56\.789 ERROR boom error="x\\ny"$/,
    );
    assert.match(prettyLine(JSON.stringify({ level: 40, time: TIME, msg: 'careful' })), /^12:34:56\.789 WARN {2}careful$/);
    const many = prettyLine(JSON.stringify({ level: 30, time: TIME, msg: 'm', a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7 }));
    assert.equal(many, '12:34:56.789 INFO  m a=1 b=2 c=3 d=4 e=5 f=6');
    assert.equal(prettyLine('not json'), 'not json');
  });

  it('createLogger writes pretty lines with format pretty and JSON with format json, redacting secrets in both', () => {
    const lines: string[] = [];
    const sink = { write: (chunk: string) => void lines.push(chunk) };
    createLogger({ format: 'pretty', destination: sink }).info({ token: 'abc', queue: 'q' }, 'hello');
    assert.equal(lines.length, 1);
    assert.match(lines[0] as string, /^\d\d:\d\d:\d\d\.\d{3} INFO {2}hello token=\[redacted\] queue=q\n$/);
    const json: string[] = [];
    createLogger({ format: 'json', destination: { write: (chunk: string) => void json.push(chunk) } }).info({ token: 'abc' }, 'hello');
    assert.equal((JSON.parse(json[0] as string) as { token: string; msg: string }).token, '[redacted]');
  });
});
