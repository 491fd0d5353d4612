/**
 * `@opentelemetry/api`, loaded only once something registered with it. Loading the API costs a
 * process about 40 ms of CPU at start (measured: `import` of the package on the dev machine), which
 * every CLI call and cold worker would pay for nothing without an SDK. An SDK (a tracer, meter or
 * context manager, a diag logger) registers itself in the API's global, `Symbol.for(
 * 'opentelemetry.js.api.1')` on `globalThis`, which every copy of the API shares; until that exists,
 * nothing is registered and sandglass has nothing to trace with.
 */
import { createRequire } from 'node:module';
import type * as Api from '@opentelemetry/api';

/** The `@opentelemetry/api` module. */
export type OpenTelemetryApi = typeof Api;

// The key of API 1.x's global (its major version); the API reads registrations of other 1.x copies.
const GLOBAL_KEY = Symbol.for('opentelemetry.js.api.1');
let loaded: OpenTelemetryApi | undefined;

/**
 * The API once anything is registered with OpenTelemetry in this process, else undefined (and the
 * API stays unloaded). Synchronous: the package's CommonJS build, through `require`.
 */
export function openTelemetry(): OpenTelemetryApi | undefined {
  if (loaded === undefined) {
    if ((globalThis as Record<symbol, unknown>)[GLOBAL_KEY] === undefined) return undefined;
    loaded = createRequire(import.meta.url)('@opentelemetry/api') as OpenTelemetryApi;
  }
  return loaded;
}
