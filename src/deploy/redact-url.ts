// The rule lives in src/core, where the library's connection errors use it too.
export { redactUrl } from '../core/redact-url.js';
