// Tick arithmetic of schedules (issue 9), DST rules included: every expected instant is written out
// in UTC, worked by hand from the zone's rules, not taken from the cron library. No Redis.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveScheduleSpec, type ScheduleSpec } from '../../src/schedules/spec.js';
import { MAX_CATCH_UP_TICKS, missedTicks, nextTickAfter, upcomingTicks } from '../../src/schedules/time.js';

const ms = (iso: string): number => Date.parse(iso);
const iso = (ticks: number[]): string[] => ticks.map(t => new Date(t).toISOString());
const spec = (input: ScheduleSpec, nowIso = '2027-01-01T00:00:00Z') => resolveScheduleSpec('k', input, ms(nowIso));

describe('cron ticks across DST', () => {
  it("'30 2 * * *' Europe/Berlin, spring 2027-03-28 (02:00 -> 03:00): 02:30 does not exist, fires at 03:00 CEST", () => {
    const s = spec({ cron: '30 2 * * *', tz: 'Europe/Berlin' });
    assert.deepEqual(iso(upcomingTicks(s, ms('2027-03-26T12:00:00Z'), 4)), [
      '2027-03-27T01:30:00.000Z', // 02:30 CET (+1)
      '2027-03-28T01:00:00.000Z', // 03:00 CEST (+2), the first instant after the gap
      '2027-03-29T00:30:00.000Z', // 02:30 CEST
      '2027-03-30T00:30:00.000Z',
    ]);
  });

  it("'30 2 * * *' Europe/Berlin, autumn 2027-10-31 (03:00 -> 02:00): 02:30 occurs twice, fires at the first", () => {
    const s = spec({ cron: '30 2 * * *', tz: 'Europe/Berlin' });
    assert.deepEqual(iso(upcomingTicks(s, ms('2027-10-29T12:00:00Z'), 4)), [
      '2027-10-30T00:30:00.000Z', // 02:30 CEST
      '2027-10-31T00:30:00.000Z', // 02:30 CEST, the first of two; 01:30Z (02:30 CET) must not fire
      '2027-11-01T01:30:00.000Z', // 02:30 CET
      '2027-11-02T01:30:00.000Z',
    ]);
    // Asked from inside the repeated hour (after the first 02:30), the second 02:30 is still not a tick.
    assert.equal(nextTickAfter(s, ms('2027-10-31T01:10:00Z')), ms('2027-11-01T01:30:00Z'));
  });

  it("'30 2 * * *' America/New_York, spring 2027-03-14: fires at 03:00 EDT", () => {
    const s = spec({ cron: '30 2 * * *', tz: 'America/New_York' });
    assert.deepEqual(iso(upcomingTicks(s, ms('2027-03-12T12:00:00Z'), 4)), [
      '2027-03-13T07:30:00.000Z', // 02:30 EST (-5)
      '2027-03-14T07:00:00.000Z', // 03:00 EDT (-4)
      '2027-03-15T06:30:00.000Z', // 02:30 EDT
      '2027-03-16T06:30:00.000Z',
    ]);
  });

  it("'30 2 * * *' America/New_York, autumn 2027-11-07: 02:30 exists once (01:00-02:00 repeats)", () => {
    const s = spec({ cron: '30 2 * * *', tz: 'America/New_York' });
    assert.deepEqual(iso(upcomingTicks(s, ms('2027-11-05T12:00:00Z'), 4)), [
      '2027-11-06T06:30:00.000Z', // 02:30 EDT
      '2027-11-07T07:30:00.000Z', // 02:30 EST
      '2027-11-08T07:30:00.000Z',
      '2027-11-09T07:30:00.000Z',
    ]);
    // 01:30 does occur twice there: 05:30Z (EDT) fires, 06:30Z (EST) does not.
    const s130 = spec({ cron: '30 1 * * *', tz: 'America/New_York' });
    assert.deepEqual(iso(upcomingTicks(s130, ms('2027-11-07T00:00:00Z'), 2)), ['2027-11-07T05:30:00.000Z', '2027-11-08T06:30:00.000Z']);
  });

  it('several wall-clock times inside a spring gap fire once together; an hourly cron fires 02:00 once on a fall-back night', () => {
    const gap = spec({ cron: '*/20 2 * * *', tz: 'Europe/Berlin' });
    assert.deepEqual(iso(upcomingTicks(gap, ms('2027-03-27T12:00:00Z'), 2)), ['2027-03-28T01:00:00.000Z', '2027-03-29T00:00:00.000Z']);
    const hourly = spec({ cron: '0 * * * *', tz: 'Europe/Berlin' });
    assert.deepEqual(iso(upcomingTicks(hourly, ms('2027-10-30T23:30:00Z'), 3)), [
      '2027-10-31T00:00:00.000Z', // 02:00 CEST
      '2027-10-31T02:00:00.000Z', // 03:00 CET: 01:00Z (02:00 CET again) is skipped
      '2027-10-31T03:00:00.000Z',
    ]);
  });

  it("'0 9 * * *' Europe/Berlin is 09:00 local on both sides of a change", () => {
    const s = spec({ cron: '0 9 * * *', tz: 'Europe/Berlin' });
    assert.deepEqual(iso(upcomingTicks(s, ms('2027-03-27T00:00:00Z'), 2)), ['2027-03-27T08:00:00.000Z', '2027-03-28T07:00:00.000Z']);
    assert.deepEqual(iso(upcomingTicks(s, ms('2027-10-30T00:00:00Z'), 2)), ['2027-10-30T07:00:00.000Z', '2027-10-31T08:00:00.000Z']);
    // Without tz the same pattern is 09:00 UTC, whatever the machine's zone.
    assert.equal(nextTickAfter(spec({ cron: '0 9 * * *' }), ms('2027-03-27T00:00:00Z')), ms('2027-03-27T09:00:00Z'));
  });

  it('a day of month and a weekday both given match either, as in Vixie cron', () => {
    const s = spec({ cron: '0 0 13 * 5' }); // 2027-01-01 is a Friday
    assert.deepEqual(iso(upcomingTicks(s, ms('2027-01-01T00:00:00Z'), 4)), [
      '2027-01-01T00:00:00.000Z',
      '2027-01-08T00:00:00.000Z',
      '2027-01-13T00:00:00.000Z',
      '2027-01-15T00:00:00.000Z',
    ]);
  });

  it('a 6-field cron ticks on seconds, strictly after the given instant', () => {
    const s = spec({ cron: '*/15 * * * * *' });
    assert.deepEqual(iso(upcomingTicks(s, ms('2027-01-01T00:00:00.500Z'), 4)), [
      '2027-01-01T00:00:15.000Z',
      '2027-01-01T00:00:30.000Z',
      '2027-01-01T00:00:45.000Z',
      '2027-01-01T00:01:00.000Z',
    ]);
    assert.equal(nextTickAfter(s, ms('2027-01-01T00:00:15Z')), ms('2027-01-01T00:00:30Z'));
    assert.equal(nextTickAfter(s, ms('2027-01-01T00:00:14.999Z')), ms('2027-01-01T00:00:15Z'));
  });
  it('over all of 2027, a daily cron fires once per local day and an hourly one once per local hour, in zones with odd DST', () => {
    // Lord Howe moves by 30 min, Santiago at midnight (00:00 does not exist on its spring day), Tehran has no DST.
    const yearStart = ms('2027-01-01T00:00:00Z') - 14 * 3_600_000;
    const yearEnd = ms('2028-01-01T00:00:00Z') + 14 * 3_600_000;
    for (const tz of ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'America/Santiago', 'Asia/Tehran']) {
      const local = new Intl.DateTimeFormat('en-CA', {
        timeZone: tz,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        hourCycle: 'h23',
      });
      const in2027 = (cron: string): string[] =>
        upcomingTicks(spec({ cron, tz, endAt: yearEnd }, '2026-12-01T00:00:00Z'), yearStart, 10_000)
          .map(t => local.format(t))
          .filter(l => l.startsWith('2027'));
      for (const cron of ['30 2 * * *', '0 0 * * *']) {
        const days = in2027(cron).map(l => l.slice(0, 10));
        assert.equal(days.length, 365, `${cron} ${tz}`);
        assert.equal(new Set(days).size, 365, `${cron} ${tz}: one tick per local day`);
      }
      const hours = in2027('0 * * * *');
      assert.equal(new Set(hours).size, hours.length, `hourly ${tz}: no local hour twice`);
      // A 1 h spring-forward removes an hour from the clock (its 02:00 fires at 03:00, with 03:00: once).
      assert.equal(hours.length, ['Asia/Tehran', 'Australia/Lord_Howe'].includes(tz) ? 8760 : 8759, `hourly ${tz}`);
    }
  });
});

describe('every ticks', () => {
  it('are a grid anchored at the first upsert, and ignore DST', () => {
    const s = spec({ every: '1h', tz: 'Europe/Berlin' }, '2027-03-28T00:17:00Z');
    assert.deepEqual(iso(upcomingTicks(s, ms('2027-03-28T00:00:00Z'), 3)), [
      '2027-03-28T00:17:00.000Z',
      '2027-03-28T01:17:00.000Z',
      '2027-03-28T02:17:00.000Z',
    ]);
    assert.equal(nextTickAfter(s, ms('2027-03-28T01:17:00Z')), ms('2027-03-28T02:17:00Z'), 'a tick exactly at afterMs is not next');
    assert.equal(nextTickAfter(s, ms('2027-03-28T05:16:59.999Z')), ms('2027-03-28T05:17:00Z'));
  });

  it('are anchored at startAt when given, and a tick exactly at startAt counts', () => {
    const s = spec({ every: 10_000, startAt: ms('2027-01-01T00:05:03Z') });
    assert.equal(nextTickAfter(s, ms('2027-01-01T00:00:00Z')), ms('2027-01-01T00:05:03Z'));
    assert.deepEqual(iso(upcomingTicks(s, ms('2027-01-01T00:05:04Z'), 2)), ['2027-01-01T00:05:13.000Z', '2027-01-01T00:05:23.000Z']);
  });
});

describe('startAt, endAt and limit', () => {
  it('cron: startAt is inclusive, endAt exclusive', () => {
    const s = spec({ cron: '0 * * * *', startAt: ms('2027-01-01T03:00:00Z'), endAt: ms('2027-01-01T06:00:00Z') });
    assert.deepEqual(iso(upcomingTicks(s, ms('2027-01-01T00:00:00Z'), 10)), [
      '2027-01-01T03:00:00.000Z',
      '2027-01-01T04:00:00.000Z',
      '2027-01-01T05:00:00.000Z',
    ]);
    assert.equal(nextTickAfter(s, ms('2027-01-01T05:00:00Z')), null);
    const s1 = spec({ cron: '0 * * * *', startAt: ms('2027-01-01T03:00:00.001Z') });
    assert.equal(nextTickAfter(s1, 0), ms('2027-01-01T04:00:00Z'), 'a millisecond after the hour is after the tick');
  });

  it('every: endAt one ms after a tick keeps that tick', () => {
    const s = spec({ every: '1s', startAt: 1_000_000, endAt: 1_003_001 });
    assert.deepEqual(upcomingTicks(s, 0, 10), [1_000_000, 1_001_000, 1_002_000, 1_003_000]);
  });

  it('limit counts the runs so far', () => {
    const s = spec({ every: '1s', startAt: 1_000_000, limit: 3 });
    assert.deepEqual(upcomingTicks(s, 0, 10), [1_000_000, 1_001_000, 1_002_000]);
    assert.deepEqual(upcomingTicks(s, 1_001_000, 10, 2), [1_001_000]);
    assert.equal(nextTickAfter(s, 1_001_000, 2), 1_002_000);
    assert.equal(nextTickAfter(s, 1_001_000, 3), null);
  });
});

describe('missedTicks', () => {
  const s = spec({ every: '1m' }, '2027-01-01T00:00:00Z');
  const last = ms('2027-01-01T00:10:00Z');

  it("'none' creates nothing, 'latest' the most recent missed tick, 'all' every one oldest first", () => {
    const now = ms('2027-01-01T00:13:30Z');
    assert.deepEqual(missedTicks(s, last, now, 'none'), []);
    assert.deepEqual(iso(missedTicks(s, last, now, 'latest')), ['2027-01-01T00:13:00.000Z']);
    assert.deepEqual(iso(missedTicks(s, last, now, 'all')), [
      '2027-01-01T00:11:00.000Z',
      '2027-01-01T00:12:00.000Z',
      '2027-01-01T00:13:00.000Z',
    ]);
    assert.deepEqual(missedTicks(s, last, ms('2027-01-01T00:10:59.999Z'), 'all'), [], 'a restart shorter than an interval misses nothing');
    assert.deepEqual(
      iso(missedTicks(s, last, ms('2027-01-01T00:11:00Z'), 'all')),
      ['2027-01-01T00:11:00.000Z'],
      'a tick exactly at now is due',
    );
  });

  it(`'all' is bounded by ${MAX_CATCH_UP_TICKS}: the most recent ones, oldest first`, () => {
    assert.ok(MAX_CATCH_UP_TICKS >= 100);
    const now = ms('2027-01-02T00:00:00Z'); // 1430 ticks missed
    const ticks = missedTicks(s, last, now, 'all');
    assert.equal(ticks.length, MAX_CATCH_UP_TICKS);
    assert.equal(ticks.at(-1), now);
    assert.equal(ticks[0], now - (MAX_CATCH_UP_TICKS - 1) * 60_000);
    const cron = spec({ cron: '* * * * *' });
    assert.deepEqual(missedTicks(cron, last, now, 'all'), ticks, 'cron gives the same as the same grid');
    assert.deepEqual(missedTicks(cron, last, now, 'latest'), [now]);
  });

  it('honours endAt, startAt, limit and a schedule that never ticked', () => {
    const bounded = spec({ every: '1m', startAt: ms('2027-01-01T00:00:00Z'), endAt: ms('2027-01-01T00:03:00Z'), limit: 5 });
    const now = ms('2027-01-01T01:00:00Z');
    assert.deepEqual(iso(missedTicks(bounded, null, now, 'all')), [
      '2027-01-01T00:00:00.000Z',
      '2027-01-01T00:01:00.000Z',
      '2027-01-01T00:02:00.000Z',
    ]);
    assert.deepEqual(iso(missedTicks(bounded, null, now, 'latest')), ['2027-01-01T00:02:00.000Z']);
    assert.deepEqual(
      iso(missedTicks(bounded, null, now, 'all', 3)),
      ['2027-01-01T00:01:00.000Z', '2027-01-01T00:02:00.000Z'],
      'limit 5 after 3 runs leaves 2',
    );
    assert.deepEqual(missedTicks(bounded, null, now, 'latest', 5), []);
    const cronBounded = spec({ cron: '0 * * * *', startAt: ms('2027-01-01T02:00:00Z') });
    assert.deepEqual(iso(missedTicks(cronBounded, null, ms('2027-01-01T04:30:00Z'), 'all')), [
      '2027-01-01T02:00:00.000Z',
      '2027-01-01T03:00:00.000Z',
      '2027-01-01T04:00:00.000Z',
    ]);
  });

  it('finds a yearly cron missed long ago without walking every minute', () => {
    const yearly = spec({ cron: '0 0 1 1 *' }, '2020-06-01T00:00:00Z');
    const started = Date.now();
    assert.deepEqual(iso(missedTicks(yearly, ms('2021-01-01T00:00:00Z'), ms('2026-06-01T00:00:00Z'), 'all')), [
      '2022-01-01T00:00:00.000Z',
      '2023-01-01T00:00:00.000Z',
      '2024-01-01T00:00:00.000Z',
      '2025-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.000Z',
    ]);
    assert.ok(Date.now() - started < 2000);
  });
});
