/**
 * sandglass/testing: test delayed jobs, retries, leases, schedules and limits without waiting for
 * them. A test environment is a private real redis-server with a virtual clock that every
 * sandglass script reads as "now"; `env.clock.advance('30m')` moves it, `env.drain()` runs what
 * fell due. The real engine, not a double.
 */
export {
  createTestEnvironment,
  TestEnvironment,
  type TestEnvironmentOptions,
  type TestQueueOptions,
  type TestWorkerOptions,
} from './environment.js';
export { VirtualClock, type Instant } from './clock.js';
export { DrainTimeoutError } from './drain.js';
export { VirtualClockError } from '../index.js';
