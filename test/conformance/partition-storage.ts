// The conformance suite of PartitionStorage (src/store/partition-storage.ts), the shape of River's
// riverdrivertest: every promise the interface's doc comments make, as a case that fails when a
// backend breaks it. A second backend passes this (and limiter-storage.ts, queue-storage.ts) to be
// one; test/scripts/storage-conformance.test.ts runs it against Redis.
import { describe } from 'node:test';
import { freshQueue, type OpenPartition, type StorageBackend } from './fixtures.js';
import { addsAndClaims } from './partition/adds-and-claims.js';
import { admin } from './partition/admin.js';
import { groups } from './partition/groups.js';
import { retention } from './partition/retention.js';
import { schedules } from './partition/schedules.js';
import { settles } from './partition/settles.js';

/** Registers the PartitionStorage contract's cases for `backend` (named `name` in the test names). */
export function partitionStorageContract(name: string, backend: StorageBackend): void {
  const open: OpenPartition = async () => {
    const [partition] = await freshQueue(backend).partitions({ create: true });
    if (!partition) throw new Error('a queue of one partition answered none');
    return partition;
  };
  describe(`PartitionStorage contract (${name})`, () => {
    describe('add and claim', () => addsAndClaims(open));
    describe('ack, fail, extend, release', () => settles(open));
    describe('cancel, reschedule, get, list, stats, dead letters', () => admin(open));
    describe('schedules', () => schedules(open));
    describe('retention of completed jobs', () => retention(open));
    describe('groups', () => groups(open));
  });
}
