import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { ConnectionError, RedisCommandError, RedisOutOfMemoryError, SandglassError, VirtualClockError } from '../../core/errors.js';
import { PARTITION_KEY_NAMES, type PartitionKeys } from './keys.js';
import { clientAddress, isDisconnected, unreachableError } from './unreachable.js';

/** The atomic operations, one Lua file each in ./lua. */
export const SCRIPT_NAMES = [
  'add',
  'claim',
  'ack',
  'fail',
  'extend',
  'release',
  'cancel',
  'reschedule',
  'getJob',
  'stats',
  'listJobs',
  'dueHistogram',
  'retryDead',
  'purgeDead',
  'setPaused',
  'initQueue',
  'checkFormat',
  'scheduleRead',
  'scheduleWrite',
  'retention',
  'limiter',
  'groupAdmin',
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

interface LoadedScript {
  readonly source: string;
  readonly sha: string;
  /** The includes the source holds, in their order. */
  readonly includes: readonly string[];
}

/**
 * The includes a Lua file names on its `-- includes: a, b` line (none without one). The
 * line sits after the file's header block; Redis has no include mechanism, so the registry does
 * it: a script is sent with the includes it names and theirs.
 */
export function declaredIncludes(source: string, file = 'a Lua file'): string[] {
  const lines = [...source.matchAll(/^-- includes: *(.*)$/gm)];
  if (lines.length > 1) throw new Error(`${file} names its includes on more than one '-- includes:' line`);
  const line = lines[0]?.[1];
  if (line === undefined) return [];
  return line
    .split(',')
    .map(name => name.trim())
    .filter(name => name !== '');
}

/**
 * The includes a file needs, in the order they are sent: each one after the includes it names, each
 * once, in the order the names are first reached (depth first, in the order written), so that the
 * same files always give the same source and SHA. `includesOf` answers an include's own names, or
 * undefined when there is no such include. Throws on an unknown include and on a cycle.
 */
export function resolveIncludes(
  file: string,
  names: readonly string[],
  includesOf: (name: string) => readonly string[] | undefined,
): string[] {
  const order: string[] = [];
  const done = new Set<string>();
  const visit = (name: string, path: readonly string[]) => {
    if (done.has(name)) return;
    if (path.includes(name)) throw new Error(`Lua include cycle: ${[...path, name].join(' -> ')}`);
    const own = includesOf(name);
    if (own === undefined) throw new Error(`${path.at(-1) ?? file} includes '${name}', which is not in lua/includes/`);
    for (const dependency of own) visit(dependency, [...path, name]);
    done.add(name);
    order.push(name);
  };
  for (const name of names) visit(name, [file]);
  return order;
}

/**
 * The line that marks an include's per-call state: the `local` statements right after it (one line
 * each) bind names that hold something of the call (its KEYS and ARGV, or a memo of what it read).
 * In a script sent with EVALSHA they run as written, at the start of every call. In the Functions
 * library the includes' top level runs once, at FUNCTION LOAD, and its locals outlive a call: there
 * the names are declared at the top level and these statements run at the start of every function
 * instead (`bindCall`), so no call sees another's state. Every other top-level `local` of an include
 * is a `local function` or an UPPER_CASE constant (checked here).
 */
const PER_CALL_MARK = '-- per call:';

interface PerCallSplit {
  /** The include with each per-call statement reduced to its declaration (`local a, b`). */
  readonly declarations: string;
  /** The per-call statements as assignments (`a, b = ...`), in their order. */
  readonly assignments: readonly string[];
}

/** Splits an include's per-call statements (see PER_CALL_MARK) from the rest; throws on a top-level local that is neither. */
export function splitPerCall(source: string, file = 'an include'): PerCallSplit {
  const lines = source.split('\n');
  const assignments: string[] = [];
  // 'marked': right after the mark, 'in': after a per-call statement, 'out': elsewhere.
  let state: 'marked' | 'in' | 'out' = 'out';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line === PER_CALL_MARK) {
      state = 'marked';
      continue;
    }
    const statement = /^local ((?!function\b)[A-Za-z_][\w, ]*?) = (.*)$/.exec(line);
    if (state !== 'out' && statement) {
      const [, names = '', value = ''] = statement;
      lines[i] = `local ${names}`;
      assignments.push(`${names} = ${value}`);
      state = 'in';
      continue;
    }
    if (state === 'marked') throw new Error(`${file}: '${PER_CALL_MARK}' is followed by a line that is not a one-line local statement`);
    state = 'out';
    if (statement && !/^[A-Z][A-Z0-9_]*$/.test(statement[1] ?? '')) {
      throw new Error(`${file}: top-level local '${statement[1]}' is neither a constant (UPPER_CASE) nor marked '${PER_CALL_MARK}'`);
    }
  }
  return { declarations: lines.join('\n'), assignments };
}

/** A script's flags, from its shebang (`#!lua flags=allow-oom,no-writes`). */
function shebangFlags(shebang: string): string[] {
  const flags = /\bflags=(\S*)/.exec(shebang)?.[1];
  return flags ? flags.split(',').filter(flag => flag !== '') : [];
}

/** The Functions library: its name, the function of each operation and the source for FUNCTION LOAD. */
interface Library {
  readonly name: string;
  readonly source: string;
  readonly functions: Readonly<Record<ScriptName, string>>;
  /** The virtual clock's library only: the function that sets its offset. */
  readonly setClock?: string;
}

function loadScripts(): { scripts: Record<ScriptName, LoadedScript>; library: Library; clockLibrary: Library } {
  const dir = new URL('./lua/', import.meta.url);
  const includeDir = new URL('includes/', dir);
  const includes = new Map<string, string>();
  for (const file of readdirSync(includeDir)) {
    if (file.endsWith('.lua')) includes.set(file.slice(0, -4), readFileSync(new URL(file, includeDir), 'utf8'));
  }
  const includesOf = (name: string) => {
    const source = includes.get(name);
    return source === undefined ? undefined : declaredIncludes(source, `includes/${name}.lua`);
  };
  const scripts = {} as Record<ScriptName, LoadedScript>;
  const bodies: { name: ScriptName; flags: string[]; body: string }[] = [];
  const allNames: string[] = [];
  for (const name of SCRIPT_NAMES) {
    // The includes go between the shebang and the script's own text. The shebang must stay the
    // first line: its flags decide whether Redis runs the script when `maxmemory` is reached
    // (scripts that free memory or only move jobs are `allow-oom`, so workers keep draining a full
    // Redis; `add` is refused before it writes anything).
    const body = readFileSync(new URL(`${name}.lua`, dir), 'utf8');
    const shebang = /^#!lua[^\n]*\n/.exec(body)?.[0];
    if (!shebang) throw new Error(`Script ${name}.lua must start with a '#!lua' line`);
    const names = declaredIncludes(body, `${name}.lua`);
    if (names.length === 0) throw new Error(`Script ${name}.lua must name its includes on a '-- includes:' line`);
    const used = resolveIncludes(`${name}.lua`, names, includesOf);
    const source = `${shebang}${used.map(include => `${includes.get(include)}\n`).join('')}${body.slice(shebang.length)}`;
    scripts[name] = { source, sha: createHash('sha1').update(source).digest('hex'), includes: used };
    bodies.push({ name, flags: shebangFlags(shebang), body: body.slice(shebang.length) });
    allNames.push(...names);
  }
  const order = resolveIncludes('the library', allNames, includesOf);
  return { scripts, library: buildLibrary(order, includes, bodies), clockLibrary: buildLibrary(order, includes, bodies, 'virtual') };
}

/**
 * One library holding every include once (their per-call state declared, bound by `bindCall`) and
 * every operation as a function whose first act is `bindCall(KEYS, ARGV)`. The library and its
 * functions are named by a hash of the source, so that two versions of sandglass on one Redis (a
 * rolling upgrade) each find their own and neither replaces the other's.
 */
function buildLibrary(
  order: readonly string[],
  includes: ReadonlyMap<string, string>,
  bodies: readonly { name: ScriptName; flags: string[]; body: string }[],
  clock: 'server' | 'virtual' = 'server',
): Library {
  const parts = order.map(name => {
    const source = includes.get(name) ?? '';
    return splitPerCall(clock === 'virtual' && name === 'base' ? withVirtualTime(source) : source, `includes/${name}.lua`);
  });
  const prelude = parts.map(part => `${part.declarations}\n`).join('');
  const bind = `local function bindCall(KEYS, ARGV)\n${parts.flatMap(part => part.assignments.map(line => `  ${line}\n`)).join('')}end\n`;
  const register = (name: string, flags: readonly string[], body: string) =>
    `redis.register_function{function_name = '${name}', flags = { ${flags.map(flag => `'${flag}'`).join(', ')} }, callback = function(KEYS, ARGV)\nbindCall(KEYS, ARGV)\n${body}\nend}\n`;
  const hashOf = (text: string) => createHash('sha1').update(text).digest('hex').slice(0, 12);
  const hash = hashOf(`${prelude}${bind}${bodies.map(script => `${script.name} ${script.flags.join(',')}\n${script.body}`).join('')}`);
  const name = clock === 'virtual' ? `sandglass_testclock_${hash}` : `sandglass_${hash}`;
  const functions = {} as Record<ScriptName, string>;
  for (const script of bodies) functions[script.name] = `${name}_${script.name}`;
  // Not bound to a call's KEYS and ARGV (it has neither a partition's keys nor a wake channel).
  const setClock =
    clock === 'virtual'
      ? `redis.register_function{function_name = '${name}_setclock', flags = { 'no-writes' }, callback = function(KEYS, ARGV)\n${SET_CLOCK_BODY}\nend}\n`
      : '';
  const source = `#!lua name=${name}\n${prelude}${bind}${bodies.map(script => register(functions[script.name], script.flags, script.body)).join('')}${setClock}`;
  return { name, source, functions, ...(clock === 'virtual' ? { setClock: `${name}_setclock` } : {}) };
}

/**
 * The virtual clock of the test kit (sandglass/testing), in its own library only: base.lua reads
 * the server's TIME in its two clock functions and nowhere else, so replacing that one call moves
 * every "now" the scripts use (due times, leases, backoff, deadlines, retention, schedules' ticks,
 * limits' windows). The offset lives in the library's Lua state (top-level locals persist across
 * FCALLs), set by the library's own `setclock` function; until it is set every call fails, so a
 * library that reached a server by mistake runs nothing. The production library never contains it.
 */
function withVirtualTime(base: string): string {
  const calls = base.split("rcall('TIME')").length - 1;
  if (calls !== 2) throw new Error(`includes/base.lua: expected its two clock functions to read rcall('TIME'), found ${calls} reads`);
  const clock = [
    '-- The virtual clock: TIME plus the offset the test kit set (setclock), as TIME answers it.',
    'local clockOffsetMs',
    'local function virtualTime()',
    "  if clockOffsetMs == nil then error('ERR sandglass virtual clock: not set on this server (it restarted, or the test kit did not start it)') end",
    "  local t = rcall('TIME')",
    '  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + clockOffsetMs',
    '  local seconds = math.floor(ms / 1000)',
    "  return { string.format('%d', seconds), string.format('%d', (ms - seconds * 1000) * 1000 + tonumber(t[2]) % 1000) }",
    'end',
    '',
  ].join('\n');
  const reads = base.replaceAll("rcall('TIME')", 'virtualTime()');
  return reads.replace(/^-- The Redis server's clock/m, `${clock}-- The Redis server's clock`);
}

/** The body of the virtual library's `setclock`: sets the offset (ms, an integer) and answers it. */
const SET_CLOCK_BODY = [
  'local offset = tonumber(ARGV[1])',
  "if offset == nil or offset ~= math.floor(offset) then return redis.error_reply('ERR setclock: the offset must be an integer number of ms') end",
  'clockOffsetMs = offset',
  'return offset',
].join('\n');

const { scripts: SCRIPTS, library: LIBRARY, clockLibrary: CLOCK_LIBRARY } = loadScripts();

/** The Functions library's name and source, as FUNCTION LOAD is sent it (for tests and tools). */
export function librarySource(): { readonly name: string; readonly source: string } {
  return { name: LIBRARY.name, source: LIBRARY.source };
}

/** Source of one script as sent to Redis (for tests and tools). */
export function scriptSource(name: ScriptName): string {
  return SCRIPTS[name].source;
}

/** The includes one script is sent with, in their order (for tests and tools). */
export function scriptIncludes(name: ScriptName): readonly string[] {
  return SCRIPTS[name].includes;
}

/** How long one script call waits for Redis, unless the connection says otherwise (`commandTimeout`). */
export const DEFAULT_CALL_TIMEOUT_MS = 3_000;

// Set by connection.ts for every client sandglass uses; a client it never saw gets the default.
const callTimeouts = new WeakMap<object, number>();

/** Sets how long each call on `redis` may wait for an answer before it fails with a ConnectionError. */
export function setCallTimeout(redis: Redis | Cluster, timeoutMs: number): void {
  callTimeouts.set(redis, timeoutMs);
}

/**
 * Rejects with a ConnectionError when `work` has not settled within the connection's call timeout
 * (plus `extraMs`, time Redis is asked to spend, such as WAIT's). ioredis alone bounds nothing
 * here: a frozen server (SIGSTOP, a blackholed network) never answers and never closes the socket,
 * and a command queued while reconnecting waits for the next of ever sparser retry rounds (2.8 s,
 * then 8.8, 14.9 s...). The command itself is not withdrawn: like an add whose reply was lost, it
 * may still run once Redis answers, which adds (by id) and claims (by claim id) are made safe for.
 */
export function withinCallTimeout<R>(redis: Redis | Cluster, operation: string, work: Promise<R>, extraMs = 0): Promise<R> {
  const timeoutMs = (callTimeouts.get(redis) ?? DEFAULT_CALL_TIMEOUT_MS) + extraMs;
  // One promise and one timer per call (no race between two promises): this runs for every claim
  // and every ack. A `work` that settles after the timeout is heard and ignored.
  return new Promise<R>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          // Not connected: it is the connection that is missing (refused, no route), said as the CLI says it.
          isDisconnected(redis)
            ? unreachableError(redis, operation, `no answer within ${timeoutMs} ms`)
            : new ConnectionError(
                `${operation}: Redis at ${clientAddress(redis)} did not answer within ${timeoutMs} ms (frozen or overloaded)`,
              ),
        ),
      timeoutMs,
    );
    work.then(
      value => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * How a script is sent: `fcall` calls the operation's function of the library (see scriptPath),
 * `evalsha` the script by its SHA, `eval` its source (after NOSCRIPT, which puts it back into the
 * script cache).
 */
type SendForm = 'fcall' | 'evalsha' | 'eval';

/**
 * Runs a script on one partition: FCALL of its function where the connection has Redis Functions,
 * else EVALSHA, and EVAL when Redis answers NOSCRIPT (after a restart, a failover or `SCRIPT FLUSH`),
 * which also puts the script back into Redis's cache. Errors come back as sandglass errors.
 */
export async function runScript(
  redis: Redis | Cluster,
  name: ScriptName,
  keys: PartitionKeys,
  args: ReadonlyArray<string | number>,
  extraKeys: readonly string[] = [],
): Promise<unknown> {
  const script = SCRIPTS[name];
  const fn = libraryOf(redis).functions[name];
  const numKeys = partitionKeyList(keys).length + extraKeys.length;
  // The arrays go to ioredis as they are: it flattens its arguments into a fresh array anyway, so
  // nothing is copied here per call (this runs for every claim and every ack).
  const rest = [partitionKeyList(keys), extraKeys, keys.wakeChannel, args] as unknown as string[];
  return run(redis, name, form =>
    form === 'fcall'
      ? redis.fcall(fn, numKeys, ...rest)
      : form === 'eval'
        ? redis.eval(script.source, numKeys, ...rest)
        : redis.evalsha(script.sha, numKeys, ...rest),
  );
}

// The KEYS of each partition, in script order, built once per partition (every call names them all).
const keyLists = new WeakMap<PartitionKeys, readonly string[]>();

function partitionKeyList(keys: PartitionKeys): readonly string[] {
  let list = keyLists.get(keys);
  if (list === undefined) {
    list = PARTITION_KEY_NAMES.map(key => keys[key]);
    keyLists.set(keys, list);
  }
  return list;
}

/**
 * Runs a script, then `WAIT replicas timeoutMs` on the same connection (one pipeline, so a Cluster
 * client sends both to the node that owns the keys). Returns the script's reply and how many
 * replicas acknowledged the write.
 */
export async function runScriptAndWait(
  redis: Redis | Cluster,
  name: ScriptName,
  keys: PartitionKeys,
  args: ReadonlyArray<string | number>,
  replicas: number,
  timeoutMs: number,
): Promise<{ reply: unknown; acknowledged: number }> {
  const script = SCRIPTS[name];
  const fn = libraryOf(redis).functions[name];
  const keyList = partitionKeyList(keys);
  const argv = [keys.wakeChannel, ...args];
  // Script and WAIT go in one pipeline, so that a Cluster client sends both to the node that owns
  // the keys (WAIT counts the replicas that have this connection's writes). ioredis follows ASK and
  // MOVED for a single command but not for such a pipeline (WAIT is a write command): here they are
  // followed by sending the pipeline to the node named (after ASKING for ASK). ioredis finds the
  // keys of FCALL as of EVALSHA (after the key count), so either is routed by its first key.
  const sendAndWait = async (via: Redis | Cluster, asking: boolean, form: SendForm) => {
    const pipeline = via.pipeline();
    if (asking) pipeline.asking();
    if (form === 'fcall') pipeline.fcall(fn, keyList.length, ...keyList, ...argv);
    else if (form === 'eval') pipeline.eval(script.source, keyList.length, ...keyList, ...argv);
    else pipeline.evalsha(script.sha, keyList.length, ...keyList, ...argv);
    pipeline.call('WAIT', replicas, timeoutMs);
    const results = ((await pipeline.exec()) ?? []).slice(asking ? 1 : 0);
    const [scriptError, reply] = results[0] ?? [new Error('empty pipeline reply'), undefined];
    const [waitError, acknowledged] = results[1] ?? [new Error('empty pipeline reply'), undefined];
    if (scriptError) throw scriptError;
    if (waitError) throw waitError;
    return { reply, acknowledged: Number(acknowledged) };
  };
  const send = async (form: SendForm) => {
    let via: Redis | Cluster = redis;
    let asking = false;
    for (let hop = 0; ; hop++) {
      try {
        return await sendAndWait(via, asking, form);
      } catch (error) {
        const node = hop < MAX_REDIRECTIONS ? redirectedNode(redis, error) : undefined;
        if (!node) throw error; // ASK or MOVED to a node not known yet: waited out as a migration
        via = node.client;
        asking = node.asking;
      }
    }
  };
  return run(redis, name, send, timeoutMs);
}

/**
 * The one runner behind both: sends FCALL where the connection has the library (loading it again
 * and retrying once when Redis answers that the function is not found), else EVALSHA, and EVAL when
 * Redis answers NOSCRIPT; each attempt is bounded by the call timeout (plus `extraMs`, time Redis is
 * asked to spend, such as WAIT's), a slot migration is waited out, errors are mapped to sandglass
 * errors.
 */
async function run<R>(redis: Redis | Cluster, name: ScriptName, send: (form: SendForm) => Promise<R>, extraMs = 0): Promise<R> {
  const once = async () => {
    if ((scriptPaths.get(redis) ?? (await probeScriptPath(redis))) === 'functions') {
      try {
        return await send('fcall');
      } catch (error) {
        if (isFunctionNotFound(error)) {
          // FUNCTION FLUSH, a restart without persistence, a failover to a replica without the library,
          // a Cluster node that joined since: load it again (on every master) and call again, once.
          // Gone again by then (flushed once more): this call goes by EVALSHA (and EVAL), which
          // carries its script and so cannot miss it. Nothing ran on a "not found".
          if ((await reloadLibrary(redis)) === 'functions') {
            try {
              return await send('fcall');
            } catch (again) {
              if (!isFunctionNotFound(again)) throw again;
            }
          }
        } else if (isRefused(error) && libraryOf(redis) === LIBRARY) {
          scriptPaths.set(redis, 'eval'); // FUNCTION LOAD allowed but FCALL not: EVALSHA from now on
        } else {
          throw error;
        }
      }
    }
    // The scripts read the server's own clock: a client on the virtual clock never runs one.
    if (libraryOf(redis) !== LIBRARY)
      throw new VirtualClockError(`${name}: the virtual clock's library could not be called on this server`);
    try {
      return await send('evalsha');
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return await send('eval');
    }
  };
  try {
    return await retryWhileMigrating(() => withinCallTimeout(redis, name, once(), extraMs));
  } catch (error) {
    throw toSandglassError(error, name, redis);
  }
}

/**
 * How a connection runs the scripts: `functions` (FCALL of the library's functions) or `eval`
 * (EVALSHA). Functions are the default where Redis has them (7.0 and later): the library's includes
 * are built once, at FUNCTION LOAD, where every EVALSHA builds its script's includes (their closures
 * and tables) again before its work starts.
 *
 * The environment variable `SANDGLASS_SCRIPTS=eval` makes every connection use EVALSHA (read when a
 * connection first runs a script), e.g. to compare both, or where FUNCTION LOAD must not be sent.
 */
export type ScriptPath = 'functions' | 'eval';

// Decided once per client (a Cluster client for all its masters): set by the probe, or to `eval` when
// Functions are refused. A client not yet probed has no entry.
const scriptPaths = new WeakMap<object, ScriptPath>();
const probes = new WeakMap<object, Promise<ScriptPath>>();

/** The path `redis` runs scripts on (probing it first if no script ran on it yet): for tests, tools and reports. */
export async function scriptPath(redis: Redis | Cluster): Promise<ScriptPath> {
  return scriptPaths.get(redis) ?? (await probeScriptPath(redis));
}

/** Probes `redis` once (concurrent first calls share the probe): loads the library unless told not to. */
function probeScriptPath(redis: Redis | Cluster): Promise<ScriptPath> {
  if (process.env.SANDGLASS_SCRIPTS === 'eval' && libraryOf(redis) === LIBRARY) {
    scriptPaths.set(redis, 'eval');
    return Promise.resolve('eval');
  }
  let probe = probes.get(redis);
  if (probe === undefined) {
    probe = loadLibrary(redis).finally(() => probes.delete(redis));
    probes.set(redis, probe);
  }
  return probe;
}

const reloads = new WeakMap<object, Promise<ScriptPath>>();

/** loadLibrary once for all the calls that found the library gone at the same time (it is sent whole, and compiled). */
function reloadLibrary(redis: Redis | Cluster): Promise<ScriptPath> {
  let reload = reloads.get(redis);
  if (reload === undefined) {
    reload = loadLibrary(redis).finally(() => reloads.delete(redis));
    reloads.set(redis, reload);
  }
  return reload;
}

/**
 * FUNCTION LOAD of the library on `redis` (on a Cluster, on every master): `functions` when every
 * node has it now (loaded, or already there: "already exists"), and remembered. A node that refuses
 * it (no FUNCTION command before Redis 7, an ACL without it: NOPERM, a managed service's own error)
 * makes the connection use EVALSHA, remembered too. When the load could not be sent (the connection
 * is down, a Cluster whose nodes are not known yet) nothing is remembered: this call uses EVALSHA
 * and a later one probes again.
 */
async function loadLibrary(redis: Redis | Cluster): Promise<ScriptPath> {
  const nodes: Redis[] = 'refreshSlotsCache' in redis ? redis.nodes('master') : [redis];
  if (nodes.length === 0) return 'eval';
  const library = libraryOf(redis);
  if (library !== LIBRARY) await assertVirtualClockServer(redis as Redis);
  const outcomes = await Promise.all(
    nodes.map(node =>
      node.call('FUNCTION', 'LOAD', library.source).then(
        () => 'loaded' as const,
        (error: unknown) => {
          if (!(error instanceof Error) || error.name !== 'ReplyError' || TRANSIENT_REFUSAL.test(error.message)) return 'unsent' as const;
          return / already exists/.test(error.message) ? ('loaded' as const) : ('refused' as const);
        },
      ),
    ),
  );
  if (outcomes.includes('refused')) {
    scriptPaths.set(redis, 'eval');
    return 'eval';
  }
  if (outcomes.includes('unsent')) return 'eval';
  scriptPaths.set(redis, 'functions');
  return 'functions';
}

// The servers the test kit (sandglass/testing) started and put on its virtual clock: their loopback
// port -> the run_id the kit saw when it started them. Empty unless a test environment is open.
const virtualClockServers = new Map<number, string>();
// The library each client calls, decided at its first call (a client keeps it for its life).
const libraries = new WeakMap<object, Library>();
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

/**
 * For sandglass/testing only: every client of 127.0.0.1:`port` opened from now on runs the scripts
 * of the virtual clock's library, and only while that port's server has the run_id `runId` (the
 * server the kit started; any other server refuses it with a VirtualClockError). Returns the undo.
 */
export function registerVirtualClockServer(port: number, runId: string): () => void {
  virtualClockServers.set(port, runId);
  return () => {
    if (virtualClockServers.get(port) === runId) virtualClockServers.delete(port);
  };
}

/** For sandglass/testing only: sets the virtual clock's offset (ms) on `redis`, the kit's own client. */
export async function setVirtualClockOffset(redis: Redis, offsetMs: number): Promise<void> {
  if (libraryOf(redis) === LIBRARY) throw new VirtualClockError("This client is not on a test environment's server");
  await scriptPath(redis);
  await redis.fcall(CLOCK_LIBRARY.setClock as string, 0, String(offsetMs));
}

function libraryOf(redis: Redis | Cluster): Library {
  let library = libraries.get(redis);
  if (library === undefined) {
    const options = 'refreshSlotsCache' in redis ? undefined : redis.options;
    const virtual = options !== undefined && LOOPBACK.has(options.host ?? '') && virtualClockServers.has(options.port ?? 6379);
    library = virtual ? CLOCK_LIBRARY : LIBRARY;
    libraries.set(redis, library);
  }
  return library;
}

/** The guard of the virtual clock: the server answering on the port must be the one the test kit started. */
async function assertVirtualClockServer(redis: Redis): Promise<void> {
  const expected = virtualClockServers.get(redis.options.port ?? 6379);
  const info = String(await redis.call('INFO', 'server'));
  const runId = /^run_id:(\w+)/m.exec(info)?.[1];
  if (expected === undefined || runId !== expected) {
    throw new VirtualClockError(
      `The Redis on port ${redis.options.port} is not the server this test environment started (run_id ${runId ?? 'unknown'}, expected ${expected ?? 'none'}): a virtual clock is only put on the kit's own server`,
    );
  }
}

/** Replies that say "not now" rather than "not here" (a full Redis, a script running, a load or failover under way). */
const TRANSIENT_REFUSAL = /^(OOM|BUSY|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|READONLY|ASK|MOVED) /;

/** Redis has no such function: the library is gone (FUNCTION FLUSH, a restart, a failover) or never reached this node. */
function isFunctionNotFound(error: unknown): boolean {
  return error instanceof Error && /^ERR Function not found/.test(error.message);
}

/** FCALL itself refused (an ACL, a managed service): not the script's own error. */
function isRefused(error: unknown): boolean {
  return error instanceof Error && (/^NOPERM/.test(error.message) || /^ERR unknown command/.test(error.message));
}

/** How long a call waits out a slot migration (TRYAGAIN) before giving up. */
const MIGRATION_PATIENCE_MS = 5_000;

/**
 * While a Cluster slot moves, a script naming keys of which some are missing gets TRYAGAIN for as
 * long as the move lasts (every sandglass script names all of a partition's keys). Nothing ran, so
 * the call is retried with backoff for a few seconds; adds are idempotent by id and settles are
 * fenced, so a retry can never double an effect.
 */
async function retryWhileMigrating<R>(call: () => Promise<R>): Promise<R> {
  const giveUpAt = Date.now() + MIGRATION_PATIENCE_MS;
  for (let delayMs = 20; ; delayMs = Math.min(500, delayMs * 2)) {
    try {
      return await call();
    } catch (error) {
      if (!isMigrating(error) || Date.now() + delayMs > giveUpAt) throw error;
      await new Promise(resolve => setTimeout(resolve, delayMs));
    }
  }
}

/** Redirections followed by one call with `waitForReplicas` (a slot moves once at a time). */
const MAX_REDIRECTIONS = 5;

/**
 * The node an ASK or MOVED reply of a Cluster names, if the client knows it. A MOVED also makes the
 * client refresh its slot map, so that the next calls go to the new owner directly.
 */
function redirectedNode(redis: Redis | Cluster, error: unknown): { client: Redis; asking: boolean } | undefined {
  const redirect = error instanceof Error ? /^(ASK|MOVED) \d+ (.+):(\d+)$/.exec(error.message) : null;
  if (!redirect || !('refreshSlotsCache' in redis)) return undefined;
  const [, kind, host, port] = redirect;
  if (kind === 'MOVED') redis.refreshSlotsCache();
  const client = redis.nodes('master').find(node => node.options.host === host && String(node.options.port) === port);
  return client ? { client, asking: kind === 'ASK' } : undefined;
}

/**
 * TRYAGAIN (or an ASK or MOVED not followed), or ioredis giving up after redirections (ASK, MOVED,
 * TRYAGAIN): none of them ran the script. ioredis also gives up "after redirections" when a node's connection keeps closing (a dead
 * master): that is an unreachable node, not a migration, and is not waited out.
 */
function isMigrating(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (/^(TRYAGAIN|ASK|MOVED) /.test(error.message)) return true;
  return error.message.startsWith('Too many Cluster redirections') && /Last error: \S*:? ?(TRYAGAIN|ASK|MOVED)\b/.test(error.message);
}

/** Maps what ioredis throws to the typed errors of `errors.ts`; with `redis`, a lost connection names its address and last error. */
export function toSandglassError(error: unknown, operation: string, redis?: Redis | Cluster): Error {
  if (error instanceof SandglassError) return error;
  if (!(error instanceof Error)) return new RedisCommandError(`${operation}: ${String(error)}`, { cause: error });
  const message = error.message;
  if (message.startsWith('OOM')) {
    return new RedisOutOfMemoryError(`${operation}: Redis is out of memory (maxmemory reached); nothing was written`, { cause: error });
  }
  if (
    message.startsWith('BUSY') ||
    message.startsWith('LOADING') ||
    message.startsWith('MASTERDOWN') ||
    message.startsWith('TRYAGAIN') ||
    message.startsWith('ASK ') ||
    message.startsWith('MOVED ') ||
    message.startsWith('CLUSTERDOWN') ||
    message.startsWith('Too many Cluster redirections')
  ) {
    return new ConnectionError(`${operation}: Redis is not serving commands right now (${message.split('\n')[0]})`, { cause: error });
  }
  if (error.name === 'ReplyError') return new RedisCommandError(`${operation}: ${message}`, { cause: error });
  if (redis) return unreachableError(redis, operation, message, error);
  return new ConnectionError(`${operation}: Redis is unreachable (${message})`, { cause: error });
}
