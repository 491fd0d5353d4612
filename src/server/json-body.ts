/**
 * The JSON body parser: fastify's own (secure-json-parse, with `__proto__` and `constructor.prototype`
 * keys refused), preceded by a nesting check on the raw text so that a deep document is refused
 * before any recursive code sees it, and followed by precise error codes. Numbers that parsing would
 * change are refused with their path, in every body (deploy/json-text.ts): beyond the double range, and
 * integers beyond ±(2^53 - 1), which only the raw text shows (after JSON.parse the digits are gone).
 */
import type { FastifyInstance } from 'fastify';
import { findChangedNumber } from '../deploy/json-text.js';
import { HttpError } from './errors.js';

/** Deepest nesting of objects and arrays accepted in a body, counting the body itself. */
export const MAX_JSON_DEPTH = 64;

/** Makes `application/json` the only body type; an empty body parses as `undefined`. */
export function installJsonParser(app: FastifyInstance): void {
  const secureParse = app.getDefaultJsonParser('error', 'error');
  // JSON only: a text/plain body is what a cross-site form or no-cors fetch can send, so it gets 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
      done(new HttpError('JSON_TOO_DEEP', `The body nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      return;
    }
    secureParse(request, text, (error, value) => {
      if (!error) {
        const changed = findChangedNumber(text, value);
        if (changed !== undefined) return done(new HttpError('VALIDATION', `body${changed.path} ${changed.problem}`), undefined);
        return done(null, value);
      }
      done(isValidJson(text) ? forbiddenKey() : new HttpError('INVALID_JSON', 'The body is not valid JSON'), undefined);
    });
  });
}

function forbiddenKey(): HttpError {
  return new HttpError('FORBIDDEN_KEY', 'The body has a `__proto__` key or a `constructor` key holding `prototype`; rename it');
}

/** Only called on the error path, to tell bad syntax from a refused key. */
function isValidJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `[` and `{` outside strings nest deeper than `maxDepth` in `text`. One pass, no recursion,
 * no allocation: safe on any input, valid JSON or not.
 */
export function jsonDepthExceeds(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}
