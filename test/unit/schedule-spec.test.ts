// The schedule spec's rules (issue 9): each bad spec is a ValidationError a user can act on. No Redis.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from '../../src/core/errors.js';
import { MIN_EVERY_MS, resolveScheduleSpec, scheduleDefinitionHash } from '../../src/schedules/spec.js';

const NOW = Date.parse('2027-01-01T00:00:00Z');

function refuses(spec: unknown, message: RegExp, key: unknown = 'k'): void {
  assert.throws(
    () => resolveScheduleSpec(key, spec, NOW),
    (error: unknown) => {
      assert.ok(error instanceof ValidationError, `expected a ValidationError, got ${String(error)}`);
      assert.match(error.message, message);
      return true;
    },
  );
}

describe('resolveScheduleSpec', () => {
  it('fills in the defaults: UTC (never the machine zone), allow, latest, anchor at now, null payload', () => {
    const spec = resolveScheduleSpec('daily-report', { cron: '0 9 * * *' }, NOW);
    assert.deepEqual(spec, {
      key: 'daily-report',
      cron: '0 9 * * *',
      tz: 'UTC',
      payloadJson: 'null',
      overlap: 'allow',
      catchUp: 'latest',
      anchorMs: NOW,
    });
  });

  it('normalizes: every as a duration, tz spelling, cron spacing, Dates as epoch ms, anchor at startAt', () => {
    const startAt = new Date(NOW + 60_000);
    const spec = resolveScheduleSpec(
      'refund-poll:42',
      {
        every: '5m',
        tz: 'europe/berlin',
        payload: { refundId: 42 },
        startAt,
        endAt: NOW + 86_400_000,
        limit: 3,
        overlap: 'skip',
        catchUp: 'all',
        maxAttempts: 5,
        backoff: { type: 'fixed', delayMs: 1000 },
      },
      NOW,
    );
    assert.equal(spec.every, 300_000);
    assert.equal(spec.tz, 'Europe/Berlin');
    assert.equal(spec.payloadJson, '{"refundId":42}');
    assert.equal(spec.startAt, NOW + 60_000);
    assert.equal(spec.anchorMs, NOW + 60_000);
    assert.equal(spec.endAt, NOW + 86_400_000);
    assert.deepEqual([spec.limit, spec.overlap, spec.catchUp, spec.maxAttempts], [3, 'skip', 'all', 5]);
    assert.deepEqual(spec.backoff, { type: 'fixed', delayMs: 1000 });
    assert.equal(resolveScheduleSpec('k', { cron: '  0   9 * * 1-5 ' }, NOW).cron, '0 9 * * 1-5');
    assert.equal(resolveScheduleSpec('k', { every: 1000 }, NOW).every, 1000, 'the floor itself is accepted');
    assert.equal(resolveScheduleSpec('k', { cron: '*/15 * * * * *' }, NOW).cron, '*/15 * * * * *', '6 fields: seconds first');
  });

  it('refuses an unknown time zone, and offsets', () => {
    refuses({ cron: '0 9 * * *', tz: 'Mars/Olympus' }, /Unknown time zone `tz` 'Mars\/Olympus'.*IANA name/);
    refuses({ every: '1m', tz: 'Mars/Olympus' }, /Unknown time zone/);
    refuses({ cron: '0 9 * * *', tz: '+01:00' }, /Expected `tz` to be an IANA time zone name/);
    refuses({ cron: '0 9 * * *', tz: 1 }, /Expected `tz` to be an IANA time zone name/);
  });

  it('refuses a bad cron', () => {
    refuses({ cron: '61 * * * *' }, /Invalid `cron` '61 \* \* \* \*'.*minute/);
    refuses({ cron: '* * *' }, /Expected `cron` to have 5 fields \(minute hour day month weekday\) or 6/);
    refuses({ cron: '0 0 1 1 * 2030' }, /Invalid `cron`/); // 6 fields read as seconds first: 2030 is no weekday
    refuses({ cron: '* * * * * * *' }, /5 fields/);
    refuses({ cron: '@daily' }, /5 fields/);
    refuses({ cron: 'hello there my cron friend' }, /Invalid `cron`/);
    refuses({ cron: '0 0 30 2 *' }, /never fires/);
    refuses({ cron: 9 }, /Expected `cron` to be a pattern/);
  });

  it('refuses both cron and every, and neither', () => {
    refuses({ cron: '0 9 * * *', every: '5m' }, /either `cron` or `every`.*not both/);
    refuses({}, /needs `cron`.*or `every`/);
    refuses({ payload: 1 }, /needs `cron`.*or `every`/);
    refuses(undefined, /needs a spec/);
  });

  it('refuses every under 1 s, and nonsense durations', () => {
    refuses({ every: MIN_EVERY_MS - 1 }, /`every` to be at least 1 s \(1000 ms\), got 999/);
    refuses({ every: '500ms' }, /at least 1 s/);
    refuses({ every: 0 }, /at least 1 s/);
    refuses({ every: -5 }, /`every` to be milliseconds >= 0 or a duration/);
    refuses({ every: 'often' }, /^`every`: Expected a duration like '30m'/);
  });

  it('refuses endAt at or before startAt, and bad instants', () => {
    refuses({ every: '1m', startAt: NOW + 1000, endAt: NOW + 1000 }, /`endAt` \(\d+\) to be later than `startAt`/);
    refuses({ every: '1m', startAt: NOW + 1000, endAt: new Date(NOW) }, /later than `startAt`/);
    refuses({ every: '1m', startAt: 'tomorrow' }, /`startAt` to be a valid Date or epoch milliseconds/);
    refuses({ every: '1m', endAt: new Date(Number.NaN) }, /`endAt` to be a valid Date/);
    refuses({ every: '1m', endAt: NOW + 11 * 365 * 86_400_000 }, /more than 10 years/);
  });

  it('refuses limit 0 and other bad counts', () => {
    refuses({ every: '1m', limit: 0 }, /`limit` to be an integer from 1/);
    refuses({ every: '1m', limit: 1.5 }, /`limit` to be an integer/);
    refuses({ every: '1m', maxAttempts: 0 }, /`maxAttempts` to be an integer from 1/);
    refuses({ every: '1m', backoff: { type: 'linear' } }, /`backoff` to be \{ type: 'fixed' \| 'exponential'/);
  });

  it('refuses unknown options and enums, naming the known ones', () => {
    refuses({ every: '1m', timezone: 'UTC' }, /Unknown option `timezone` of a schedule \(known: cron, every, tz/);
    refuses({ every: '1m', overlap: 'queue' }, /`overlap` to be 'allow' or 'skip', got 'queue'/);
    refuses({ every: '1m', catchUp: true }, /`catchUp` to be 'none' or 'latest' or 'all', got true/);
    refuses('every minute', /options of a schedule to be an object/);
  });

  it('refuses a bad key and a payload JSON cannot carry', () => {
    refuses({ every: '1m' }, /schedule key of 1-180 characters/, '');
    refuses({ every: '1m' }, /schedule key/, 42);
    refuses({ every: '1m', payload: { n: Number.NaN } }, /not JSON-serializable/);
    refuses({ every: '1m', payload: () => 1 }, /not JSON-serializable/);
  });
});

describe('scheduleDefinitionHash', () => {
  it('is equal for the same definition upserted at different times, different for any change', () => {
    const base = { cron: '0 9 * * *', tz: 'Europe/Berlin', payload: { a: 1 } };
    const hash = scheduleDefinitionHash(resolveScheduleSpec('k', base, NOW));
    assert.match(hash, /^[0-9a-f]{40}$/);
    assert.equal(scheduleDefinitionHash(resolveScheduleSpec('k', base, NOW + 5000)), hash, 'the upsert time is not part of the definition');
    assert.equal(
      scheduleDefinitionHash(resolveScheduleSpec('k', { ...base, cron: '0  9 * * *', tz: 'europe/berlin' }, NOW)),
      hash,
      'normalized spellings',
    );
    const changes: object[] = [
      { cron: '0 10 * * *' },
      { tz: 'UTC' },
      { payload: { a: 2 } },
      { startAt: NOW },
      { endAt: NOW + 1e6 },
      { limit: 2 },
      { overlap: 'skip' },
      { catchUp: 'none' },
      { maxAttempts: 2 },
      { backoff: { type: 'fixed', delayMs: 5 } },
    ];
    const hashes = new Set([hash]);
    for (const change of changes) hashes.add(scheduleDefinitionHash(resolveScheduleSpec('k', { ...base, ...change }, NOW)));
    hashes.add(scheduleDefinitionHash(resolveScheduleSpec('other', base, NOW)));
    assert.equal(hashes.size, changes.length + 2, 'every change gives a new hash');
    assert.notEqual(
      scheduleDefinitionHash(resolveScheduleSpec('k', { every: '1m' }, NOW)),
      scheduleDefinitionHash(resolveScheduleSpec('k', { every: '2m' }, NOW)),
    );
  });
});
