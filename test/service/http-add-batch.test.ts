// Concurrent single adds (one job per POST) share script calls per partition (add-coalescer.ts);
// each request still answers alone: its own id once its job is stored, its own refusal, and on a
// Redis failure every request of the failed call answers 503 while nothing answered 201 is lost.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue } from '../../src/index.js';
import { useApp, type Answer } from '../helpers/http.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: true });
const api = useApp(redis, { partitions: 2 });

/** Script calls Redis has run so far (INFO commandstats): FCALL, or EVALSHA on the fallback path. */
async function calls(): Promise<number> {
  const stats = await redis.raw.info('commandstats');
  const count = (command: string) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return count('fcall') + count('evalsha');
}

describe('HTTP single adds, concurrent', () => {
  it('many clients at once: every job stored once, each request answered with its own id, fewer script calls than adds', async () => {
    const queue = uniqueQueue('batch');
    await api.call('POST', `/v1/queues/${queue}/jobs`, { payload: 'warm', delay: '1h' });
    const before = await calls();
    const count = 200;
    const answers = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        api.call(
          'POST',
          `/v1/queues/${queue}/jobs`,
          i % 2 === 0 ? { payload: { i }, delay: '1h' } : { payload: { i }, delay: '1h', id: `own-${i}` },
        ),
      ),
    );
    const scriptCalls = (await calls()) - before;
    assert.deepEqual(new Set(answers.map(a => a.status)), new Set([201]));
    const ids = answers.map(a => a.body.id as string);
    assert.equal(new Set(ids).size, count, 'every request has its own id');
    for (let i = 1; i < count; i += 2) assert.equal(ids[i], `own-${i}`, 'a given id is answered to its own request');
    for (const [i, id] of ids.entries()) {
      const job = await api.call('GET', `/v1/queues/${queue}/jobs/${id}`);
      assert.equal(job.status, 200, `job ${id} stored`);
      assert.deepEqual(job.body.payload, { i }, `job ${id} holds its own request's payload`);
    }
    assert.equal((await api.call('GET', `/v1/queues/${queue}`)).body.stats.delayed, count + 1, 'each stored once');
    assert.ok(scriptCalls > 0 && scriptCalls < count, `${count} concurrent adds took ${scriptCalls} script calls`);
  });

  it('one id twice in the same batch: the second sees the first (kept, or replaced with ifExists replace)', async () => {
    const queue = uniqueQueue('dup');
    const post = (body: object) => api.call('POST', `/v1/queues/${queue}/jobs`, { delay: '1h', ...body });
    const fillers = (n: number) => Array.from({ length: n }, (_, i) => post({ payload: `filler ${i}` }));
    // Fillers around them, so that they travel with others.
    const [kept, keptAgain] = await Promise.all([
      post({ id: 'twice', payload: 'first' }),
      post({ id: 'twice', payload: 'second' }),
      ...fillers(8),
    ]);
    assert.deepEqual([kept?.status, keptAgain?.status, kept?.body.id, keptAgain?.body.id], [201, 201, 'twice', 'twice']);
    assert.equal(
      (await api.call('GET', `/v1/queues/${queue}/jobs/twice`)).body.payload,
      'first',
      'ifExists keep: the second changes nothing',
    );

    const replaced = await Promise.all([
      post({ id: 'swap', payload: 'first', ifExists: 'replace' }),
      post({ id: 'swap', payload: 'second', ifExists: 'replace' }),
      ...fillers(8),
    ]);
    assert.deepEqual(new Set(replaced.map(a => a.status)), new Set([201]));
    assert.equal((await api.call('GET', `/v1/queues/${queue}/jobs/swap`)).body.payload, 'second', 'the later add wins, as in sequence');
    assert.equal((await api.call('GET', `/v1/queues/${queue}`)).body.stats.delayed, 18);
  });

  it('queue.add of one id twice in one turn: one script call, the second sees the first', async () => {
    const queue = new Queue(uniqueQueue('dup-lib'), { connection: redis.url });
    redis.track(queue);
    await queue.add('warm', { delay: '1h' });
    const before = await calls();
    const ids = await Promise.all([
      queue.add('first', { id: 'once', delay: '1h' }),
      queue.add('second', { id: 'once', delay: '1h' }),
      queue.add('replacement', { id: 'again', delay: '1h' }),
      queue.add('replaced', { id: 'again', delay: '1h', ifExists: 'replace' }),
    ]);
    // One call for the three adds with ifExists keep, then one for the replace.
    assert.equal((await calls()) - before, 2);
    assert.deepEqual(ids, ['once', 'once', 'again', 'again']);
    assert.equal((await queue.get('once'))?.payload, 'first');
    assert.equal((await queue.get('again'))?.payload, 'replaced');
  });

  it('one bad job among concurrent good ones fails alone: invalid (400) or replacing a running job (409)', async () => {
    const queue = uniqueQueue('bad');
    const post = (body: object) => api.call('POST', `/v1/queues/${queue}/jobs`, body);
    assert.equal((await post({ id: 'busy', payload: 'run me' })).status, 201);
    const claimed = await api.call('POST', `/v1/queues/${queue}/claim`, { max: 1 });
    assert.equal(claimed.body.jobs[0]?.id, 'busy');

    const good = (i: number) => post({ id: `good-${i}`, payload: i, delay: '1h', ifExists: 'replace' });
    const answers = await Promise.all([
      ...Array.from({ length: 10 }, (_, i) => good(i)),
      post({ payload: 'bad', delay: 'soon' }),
      post({ id: 'busy', payload: 'replacement', ifExists: 'replace' }),
      ...Array.from({ length: 10 }, (_, i) => good(10 + i)),
    ]);
    const invalid = answers[10] as Answer;
    const running = answers[11] as Answer;
    assert.deepEqual([invalid.status, invalid.body.error.code], [400, 'VALIDATION']);
    assert.deepEqual([running.status, running.body.error.code], [409, 'CONFLICT']);
    assert.match(running.body.error.message, /Job busy is running and cannot be replaced$/);
    const goods = answers.filter((_, i) => i !== 10 && i !== 11);
    assert.deepEqual(
      goods.map(a => [a.status, a.body.id]),
      Array.from({ length: 20 }, (_, i) => [201, `good-${i}`]),
    );
    const stats = (await api.call('GET', `/v1/queues/${queue}`)).body.stats;
    assert.deepEqual([stats.delayed, stats.active], [20, 1], 'the good ones stored, the running one untouched');
  });
});

describe('HTTP single adds, Redis gone mid-batch', () => {
  it('every request of the failed calls answers 503 REDIS_UNAVAILABLE; every job answered 201 is there after the restart', async () => {
    const queue = uniqueQueue('gone');
    const stored: string[] = [];
    const refused: Answer[] = [];
    let sent = 0;
    // 40 clients, each adding until an add is refused.
    const client = async (c: number) => {
      for (let n = 0; ; n++) {
        const id = `c${c}-${n}`;
        sent += 1;
        const answer = await api.call('POST', `/v1/queues/${queue}/jobs`, { id, payload: n, delay: '1h' });
        if (answer.status !== 201) return refused.push(answer);
        assert.equal(answer.body.id, id);
        stored.push(id);
      }
    };
    const clients = Promise.all(Array.from({ length: 40 }, (_, c) => client(c)));
    await waitFor(() => stored.length >= 400, 20_000, '400 adds answered');
    // Writes held: one call per partition waits in Redis, the adds that follow wait behind it.
    await redis.raw.client('PAUSE', 10_000, 'WRITE');
    await sleep(300); // the 40 next adds reach the service meanwhile
    assert.equal(sent, stored.length + 40, 'every client waiting on an add');
    await redis.server.kill('SIGKILL');
    await clients;

    assert.equal(refused.length, 40, 'each client got one refusal');
    for (const answer of refused) assert.deepEqual([answer.status, answer.body.error.code], [503, 'REDIS_UNAVAILABLE']);
    await redis.server.restart();
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 10_000, 'readyz 200 after the restart');
    for (const id of stored) assert.equal((await api.call('GET', `/v1/queues/${queue}/jobs/${id}`)).status, 200, `job ${id} kept`);
  });
});
