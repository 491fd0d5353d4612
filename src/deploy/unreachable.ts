// The words of the library's ConnectionError for an unreachable Redis, for the CLI's own message.
export { cannotReachRedis, givenUpReason } from '../core/unreachable.js';
