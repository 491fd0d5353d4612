// Failures are never silent by default (issue 22): a Worker with no 'failed' / 'dead' listener says
// each failure through its logger, at most one line per kind per interval; a listener takes over.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue, Worker, type Logger } from '../../src/index.js';
import { describeThrown, UnheardFailures } from '../../src/worker/unheard-failures.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

function recordingLogger(): Logger & { warnings: string[]; errors: string[] } {
  const warnings: string[] = [];
  const errors: string[] = [];
  return {
    warnings,
    errors,
    debug: () => undefined,
    info: () => undefined,
    warn: message => void warnings.push(message),
    error: message => void errors.push(message),
  };
}

describe('failures nobody listens to', () => {
  it('are logged: a retry as a warning, a dead letter as an error, a thrown non-Error as its JSON', async () => {
    const name = uniqueQueue('unheard');
    const logger = recordingLogger();
    const queue = redis.track(new Queue(name, { connection: redis.url }));
    let attempts = 0;
    redis.track(
      new Worker(
        name,
        () => {
          attempts += 1;
          throw { code: 'CARD_DECLINED', attempt: attempts };
        },
        { connection: redis.url, logger, maxAttempts: 2, backoff: { type: 'fixed', delayMs: 20 } },
      ),
    );
    await queue.add({ orderId: 42 }, { id: 'order:42' });
    await waitFor(() => logger.errors.length === 1, 10_000);
    assert.equal(logger.warnings.length, 1, logger.warnings.join('\n'));
    assert.match(logger.warnings[0] as string, new RegExp(`job order:42 of queue ${name} failed attempt 1 of 2 and runs again at \\d{4}-`));
    assert.match(logger.warnings[0] as string, /a thrown object, not an Error: \{"code":"CARD_DECLINED","attempt":1\}/);
    assert.match(logger.errors[0] as string, /job order:42 .* went to the dead letters after attempt 2 of 2/);
    assert.match(logger.errors[0] as string, /listen to the worker's 'failed' and 'dead' events/);
    // The dead letter keeps the same useful description, not "[object Object]".
    const dead = await queue.get('order:42');
    assert.match(String(dead?.lastError), /CARD_DECLINED/);
  });

  it('are not logged when the worker listens to them', async () => {
    const name = uniqueQueue('heard');
    const logger = recordingLogger();
    const queue = redis.track(new Queue(name, { connection: redis.url }));
    const worker = redis.track(
      new Worker(
        name,
        () => {
          throw new Error('declined');
        },
        { connection: redis.url, logger, maxAttempts: 1 },
      ),
    );
    const heard: string[] = [];
    worker.on('failed', job => heard.push(job.id));
    await queue.add({ orderId: 7 }, { id: 'order:7' });
    await waitFor(() => heard.length === 1, 10_000);
    await sleep(100);
    assert.deepEqual([logger.warnings, logger.errors], [[], []]);
  });

  it('say at most one line per kind per interval, and count the ones not shown', () => {
    const logger = recordingLogger();
    let now = 0;
    const unheard = new UnheardFailures(logger, 10_000, () => now);
    const failure = (id: string, retryAt?: number) => ({ queue: 'q', id, attempt: 1, maxAttempts: 3, error: new Error('x'), retryAt });
    unheard.report(failure('a', 5_000));
    unheard.report(failure('b', 5_000));
    unheard.report(failure('c', 5_000));
    unheard.report(failure('d')); // another kind: its own line
    now = 10_000;
    unheard.report(failure('e', 15_000));
    assert.equal(logger.warnings.length, 2);
    assert.equal(logger.errors.length, 1);
    assert.match(logger.warnings[1] as string, /job e .*\(2 more like it in the last 10 s not shown\)/);
  });

  it('describe what was thrown, whatever it was', () => {
    assert.equal(describeThrown('plain text'), 'plain text');
    assert.match(describeThrown(new TypeError('bad')), /^TypeError: bad/);
    assert.equal(describeThrown(42), 'a thrown number, not an Error: 42');
    assert.equal(describeThrown(null), 'a thrown null, not an Error: null');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    assert.equal(describeThrown(cyclic), 'a thrown object, not an Error: [object Object]');
    assert.equal(describeThrown(10n), 'a thrown bigint, not an Error: 10');
  });
});
