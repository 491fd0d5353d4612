/**
 * Named API tokens with scopes and queue patterns (`SANDGLASS_TOKENS` / `--tokens-file`), and the
 * single `SANDGLASS_TOKEN` as the token named `admin` with every scope on every queue.
 *
 * The file holds no secret: each entry has the SHA-256 of its token. A presented token is hashed
 * and compared with every entry's digest by `timingSafeEqual`, all entries every time, so neither
 * the digests nor the number or order of the entries show in the answer's timing.
 *
 * Scopes: `produce` (add, cancel, reschedule jobs), `consume` (claim, ack, fail, extend), `read`
 * (every GET), `admin` (dead letters, pause, limits, retention, schedules, groups). `admin` implies
 * the three others. Queue patterns are globs whose `*` stands for any run of characters; `*` alone
 * (or no `queues` at all) is every queue.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { shown } from './schema-errors.js';

export const SCOPES = ['produce', 'consume', 'read', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** One entry of the tokens file, as written there. */
export interface TokenEntry {
  name: string;
  /** Hex of the SHA-256 of the token's UTF-8 bytes (64 characters). */
  sha256: string;
  scopes: Scope[];
  /** Queue patterns; `['*']` when the entry has none. */
  queues: string[];
}

/** A token the service accepts, ready to be matched. */
export interface AccessToken {
  readonly name: string;
  /** The scopes as configured. */
  readonly scopes: readonly Scope[];
  /** The scopes it has, `admin`'s implied ones included. */
  readonly granted: ReadonlySet<Scope>;
  readonly queues: readonly string[];
  readonly digest: Buffer;
  readonly matchers: readonly RegExp[];
}

/** What the caller of a request may do: its token, or everything when the service has no token (loopback only). */
export type Access = AccessToken | typeof OPEN_ACCESS;

/** The access of every request to a service without tokens (it answers loopback names only). */
export const OPEN_ACCESS = Object.freeze({
  name: null,
  scopes: SCOPES,
  granted: new Set<Scope>(SCOPES) as ReadonlySet<Scope>,
  queues: ['*'] as readonly string[],
  matchers: [/^/] as readonly RegExp[],
});

/** The name of the single `SANDGLASS_TOKEN`. */
export const ADMIN_TOKEN_NAME = 'admin';
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;
/** A queue name's characters (QUEUE_NAME_RULE), plus `*`. */
const PATTERN = /^[A-Za-z0-9._*-]{1,100}$/;
const ENTRY_KEYS = new Set(['name', 'sha256', 'scopes', 'queues']);

/** What a bearer token may hold: printable ASCII without spaces (it travels in an HTTP header). */
export const TOKEN_CHARACTERS = /^[\x21-\x7e]+$/;

/** Hex of the SHA-256 of a token: what its entry's `sha256` holds (`sandglass token hash`). */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A glob of queue names (`*`: any run of characters) as an anchored regular expression. */
export function queuePattern(pattern: string): RegExp {
  const source = pattern
    .split('*')
    .map(part => part.replace(/[.\\^$+?()[\]{}|-]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`);
}

/**
 * Reads the tokens file's JSON: an array of `{ name, sha256, scopes, queues? }`. Strict: unknown
 * keys, a bad digest, an unknown or missing scope, a bad pattern, a repeated name or digest are
 * refused with a message that says which entry and why (an Error; config.ts makes it a ConfigError).
 */
export function parseTokenEntries(text: string, source: string): TokenEntry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`${source} is not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(parsed)) throw new Error(`${source}: expected a JSON array of { name, sha256, scopes, queues }`);
  const entries = parsed.map((raw: unknown, index) => parseTokenEntry(raw, `${source}[${index}]`));
  assertUnique(entries, source);
  return entries;
}

/**
 * One entry of the tokens file, checked: what `parseTokenEntries` does for each, and what
 * `sandglass token hash` does for the entry it prints. `where` starts each error message.
 */
export function parseTokenEntry(raw: unknown, where: string): TokenEntry {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new Error(`${where}: expected an object { name, sha256, scopes, queues }`);
  const entry = raw as Record<string, unknown>;
  const unknown = Object.keys(entry).find(key => !ENTRY_KEYS.has(key));
  if (unknown !== undefined) throw new Error(`${where}: unknown key '${unknown.slice(0, 40)}' (expected name, sha256, scopes, queues)`);
  const { name, sha256, scopes, queues } = entry;
  if (typeof name !== 'string' || !NAME.test(name))
    throw new Error(
      `${where}.name: expected 1-100 characters from A-Z a-z 0-9 . _ - (starting with a letter or digit), got ${shown(name)}`,
    );
  const at = `${where} ("${name}")`;
  if (typeof sha256 !== 'string' || !HEX_SHA256.test(sha256))
    throw new Error(
      `${at}.sha256: expected the 64 hex digits of the token's SHA-256 (echo -n "$TOKEN" | sha256sum, or sandglass token hash), got ${typeof sha256 === 'string' ? `${sha256.length} characters` : shown(sha256)}`,
    );
  if (!Array.isArray(scopes) || scopes.length === 0) throw new Error(`${at}.scopes: expected a non-empty array of ${SCOPES.join(', ')}`);
  for (const scope of scopes)
    if (!(SCOPES as readonly unknown[]).includes(scope))
      throw new Error(`${at}.scopes: unknown scope ${shown(scope)} (expected ${SCOPES.join(', ')})`);
  if (new Set(scopes).size !== scopes.length) throw new Error(`${at}.scopes: a scope is listed twice`);
  let patterns: string[] = ['*'];
  if (queues !== undefined) {
    if (!Array.isArray(queues) || queues.length === 0)
      throw new Error(`${at}.queues: expected a non-empty array of queue patterns (e.g. ["orders-*"]; ["*"] or no queues: every queue)`);
    for (const pattern of queues)
      if (typeof pattern !== 'string' || !PATTERN.test(pattern))
        throw new Error(
          `${at}.queues: expected queue names or patterns of 1-100 characters from A-Z a-z 0-9 . _ - and *, got ${shown(pattern)}`,
        );
    patterns = queues as string[];
  }
  return { name, sha256: sha256.toLowerCase(), scopes: scopes as Scope[], queues: patterns };
}

function assertUnique(entries: readonly TokenEntry[], source: string): void {
  const names = new Set<string>();
  const digests = new Set<string>();
  for (const entry of entries) {
    if (names.has(entry.name))
      throw new Error(`${source}: the name "${entry.name}" is used twice (names appear in logs: make them unique)`);
    if (digests.has(entry.sha256))
      throw new Error(`${source}: "${entry.name}" has the same sha256 as another entry (one token, one entry)`);
    names.add(entry.name);
    digests.add(entry.sha256);
  }
}

/** The entry of the single `SANDGLASS_TOKEN`: named `admin`, every scope, every queue. */
export function adminEntry(token: string): TokenEntry {
  return { name: ADMIN_TOKEN_NAME, sha256: tokenDigest(token), scopes: ['admin'], queues: ['*'] };
}

function toAccessToken(entry: TokenEntry): AccessToken {
  const granted = new Set<Scope>(entry.scopes.includes('admin') ? SCOPES : entry.scopes);
  return {
    name: entry.name,
    scopes: [...entry.scopes],
    granted,
    queues: [...entry.queues],
    digest: Buffer.from(entry.sha256, 'hex'),
    matchers: entry.queues.map(queuePattern),
  };
}

/**
 * The tokens a service accepts. `replace` swaps them at once (SIGHUP): requests already checked
 * keep the access they were given, the next ones are checked against the new set.
 */
export class TokenSet {
  #tokens: readonly AccessToken[] = [];

  /** `entries` must be unique by name and digest (see {@link combineEntries}). */
  constructor(entries: readonly TokenEntry[]) {
    this.replace(entries);
  }

  get size(): number {
    return this.#tokens.length;
  }

  replace(entries: readonly TokenEntry[]): void {
    assertUnique(entries, 'tokens');
    this.#tokens = entries.map(toAccessToken);
  }

  /** The token whose digest is the presented token's, compared with every entry in constant time. */
  authenticate(presented: string): AccessToken | undefined {
    const digest = createHash('sha256').update(presented, 'utf8').digest();
    let found: AccessToken | undefined;
    for (const token of this.#tokens) {
      // No early exit: every entry is compared, whichever matches.
      const equal = timingSafeEqual(digest, token.digest);
      if (equal && found === undefined) found = token;
    }
    return found;
  }
}

/** The single token (as `admin`) and the file's entries together, refused when a name or digest repeats. */
export function combineEntries(token: string | undefined, entries: readonly TokenEntry[], source = 'SANDGLASS_TOKENS'): TokenEntry[] {
  const all = token === undefined ? [...entries] : [adminEntry(token), ...entries];
  if (token !== undefined) {
    const admin = all[0] as TokenEntry;
    if (entries.some(entry => entry.name === ADMIN_TOKEN_NAME))
      throw new Error(`${source}: the name "${ADMIN_TOKEN_NAME}" is SANDGLASS_TOKEN's; give the entry another name`);
    if (entries.some(entry => entry.sha256 === admin.sha256))
      throw new Error(`${source}: an entry has the sha256 of SANDGLASS_TOKEN (one token, one entry)`);
  }
  return all;
}

/** Whether `access` has `scope` (or `admin`) on `queue`; `queue` undefined: the scope alone. */
export function allows(access: Access, scope: Scope | 'any', queue: string | undefined): boolean {
  if (scope !== 'any' && !access.granted.has(scope)) return false;
  return queue === undefined || mayUseQueue(access, queue);
}

/** Whether a queue matches one of the token's patterns. */
export function mayUseQueue(access: Access, queue: string): boolean {
  return access.matchers.some(matcher => matcher.test(queue));
}

/** Whether the token's patterns cover every queue (`*`). */
export function everyQueue(access: Access): boolean {
  return access.queues.includes('*');
}
