// A fault-injecting TCP proxy for the chaos tests: clients connect to it instead of Redis and it
// forwards bytes to a private redis-server, unless told to delay, drop, hold or cut them.
// Loopback only, node:net only, bounded: each direction holds at most HIGH_WATER bytes before it
// stops reading its source (TCP backpressure), and close() destroys every socket it made.
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * What the proxy does with the bytes of every connection, current and new:
 * - `pass`: forwards both ways.
 * - `latency`: forwards both ways, each chunk `ms` later (in each direction, so a round trip
 *   gains 2 x ms), in order.
 * - `dropReplies`: forwards client -> server, swallows server -> client (the command runs, its
 *   reply is lost). A connection that swallowed bytes is reset when the mode changes, since its
 *   client's parser may be left in the middle of a reply.
 * - `dropRepliesThenReset`: `dropReplies`, then `afterMs` after the first swallowed reply every
 *   connection that swallowed bytes is reset and the mode goes back to `pass` by itself, so that
 *   the client reconnects and its resent commands are answered (the ambiguous-reply case).
 * - `blackhole`: accepts connections and forwards nothing either way. Bytes are held, not
 *   discarded (as TCP would retransmit them across a partition): leaving the mode delivers them.
 * - `dropRepliesAfterRequest`: `pass`, until a client -> server chunk containing `match` passes:
 *   from then on that one connection's replies are swallowed (that command runs, its reply is
 *   lost, and so are those of the commands after it), and `resetAfterMs` later the connection is
 *   reset and the mode goes back to `pass` by itself. Exactly one chosen call loses its reply.
 * - `holdRequest`: `pass`, but the first client -> server chunk containing `match` (and what
 *   follows it on its connection) waits until `before()` settles; then the mode is `pass` again.
 *   `before` can make Redis refuse that one call for real (CONFIG SET min-replicas-to-write).
 */
export type FaultMode =
  | { readonly kind: 'pass' }
  | { readonly kind: 'latency'; readonly ms: number }
  | { readonly kind: 'dropReplies' }
  | { readonly kind: 'dropRepliesThenReset'; readonly afterMs: number }
  | { readonly kind: 'blackhole' }
  | { readonly kind: 'dropRepliesAfterRequest'; readonly match: string; readonly resetAfterMs: number }
  | { readonly kind: 'holdRequest'; readonly match: string; readonly before: () => Promise<unknown> };

export const pass: FaultMode = { kind: 'pass' };
export const dropReplies: FaultMode = { kind: 'dropReplies' };
export const blackhole: FaultMode = { kind: 'blackhole' };
export function latency(ms: number): FaultMode {
  return { kind: 'latency', ms };
}
export function dropRepliesThenReset(afterMs: number): FaultMode {
  return { kind: 'dropRepliesThenReset', afterMs };
}
export function dropRepliesAfterRequest(match: string, resetAfterMs: number): FaultMode {
  return { kind: 'dropRepliesAfterRequest', match, resetAfterMs };
}
export function holdRequest(match: string, before: () => Promise<unknown>): FaultMode {
  return { kind: 'holdRequest', match, before };
}

export interface FaultProxyStats {
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Connections open now. */
  readonly open: number;
  /** Connections destroyed by the proxy (resetAll, dropRepliesThenReset, leaving dropReplies). */
  readonly resets: number;
  /** Bytes forwarded client -> server and server -> client. */
  readonly upBytes: number;
  readonly downBytes: number;
  /** Server -> client bytes swallowed by the drop modes. */
  readonly droppedBytes: number;
  /**
   * Bytes held by the proxy (delayed or blackholed) when their connection was reset, so never
   * delivered: client -> server (commands that never ran) and server -> client (replies lost
   * although their command ran: the ambiguous case).
   */
  readonly discardedUpBytes: number;
  readonly discardedDownBytes: number;
}

export interface FaultProxy {
  readonly port: number;
  /** `redis://127.0.0.1:<port>`: give this to Queue, Worker or PullConsumer as `connection`. */
  readonly url: string;
  setMode(mode: FaultMode | 'pass' | 'dropReplies' | 'blackhole'): void;
  readonly mode: FaultMode;
  /** Destroys every connection now (client and server side); clients reconnect through the proxy. */
  resetAll(): void;
  stats(): FaultProxyStats;
  /** Stops listening and destroys every socket. */
  close(): Promise<void>;
}

/** Bytes one direction of one connection may hold (delayed or blackholed) before it stops reading. */
const HIGH_WATER = 4 * 1024 * 1024;

interface Chunk {
  readonly data: Buffer;
  readonly releaseAt: number;
}

export async function startFaultProxy(options: { target: { host: string; port: number }; port?: number }): Promise<FaultProxy> {
  const { target } = options;
  let mode: FaultMode = pass;
  let closed = false;
  let resetTimer: NodeJS.Timeout | undefined;
  const counts = { accepted: 0, resets: 0, upBytes: 0, downBytes: 0, droppedBytes: 0, discardedUpBytes: 0, discardedDownBytes: 0 };
  const links = new Set<Link>();

  const dropsReplies = () => mode.kind === 'dropReplies' || mode.kind === 'dropRepliesThenReset';

  /** One direction of one connection: an ordered, bounded queue of chunks waiting for release. */
  class Direction {
    readonly #chunks: Chunk[] = [];
    #head = 0;
    #held = 0;
    #timer: NodeJS.Timeout | undefined;
    #waitingForDrain = false;
    /** Held by `holdRequest` until its `before()` settles. */
    #gated = false;

    constructor(
      readonly from: Socket,
      readonly to: Socket,
      readonly up: boolean,
      readonly link: Link,
    ) {}

    push(data: Buffer): void {
      if (this.up && (mode.kind === 'dropRepliesAfterRequest' || mode.kind === 'holdRequest') && data.includes(mode.match)) {
        const chosen = mode;
        mode = pass;
        if (chosen.kind === 'dropRepliesAfterRequest') {
          this.link.dropping = true;
          setTimeout(() => this.link.destroy(true), chosen.resetAfterMs);
        } else {
          this.#gated = true;
          void chosen.before().finally(() => {
            this.#gated = false;
            this.pump();
          });
        }
      }
      if (!this.up && this.link.dropping) {
        counts.droppedBytes += data.length;
        return;
      }
      if (!this.up && dropsReplies()) {
        counts.droppedBytes += data.length;
        this.link.tainted = true;
        if (mode.kind === 'dropRepliesThenReset' && !resetTimer) {
          const afterMs = mode.afterMs;
          resetTimer = setTimeout(() => {
            resetTimer = undefined;
            mode = pass;
            resetTainted();
          }, afterMs);
        }
        return;
      }
      const delayMs = mode.kind === 'latency' ? mode.ms : 0;
      this.#chunks.push({ data, releaseAt: Date.now() + delayMs });
      this.#held += data.length;
      if (this.#held >= HIGH_WATER) this.from.pause();
      this.pump();
    }

    /** Writes every chunk whose time has come, in order, as fast as the destination takes them. */
    pump(): void {
      if (this.#waitingForDrain || this.link.destroyed || this.#gated) return;
      clearTimeout(this.#timer);
      this.#timer = undefined;
      if (mode.kind === 'blackhole') {
        this.from.pause();
        return;
      }
      while (this.#head < this.#chunks.length) {
        const chunk = this.#chunks[this.#head] as Chunk;
        const waitMs = chunk.releaseAt - Date.now();
        if (waitMs > 0) {
          this.#timer = setTimeout(() => this.pump(), waitMs);
          break;
        }
        this.#head += 1;
        this.#held -= chunk.data.length;
        if (this.up) counts.upBytes += chunk.data.length;
        else counts.downBytes += chunk.data.length;
        if (!this.to.write(chunk.data)) {
          this.#waitingForDrain = true;
          this.to.once('drain', () => {
            this.#waitingForDrain = false;
            this.pump();
          });
          break;
        }
      }
      if (this.#head === this.#chunks.length) {
        this.#chunks.length = 0;
        this.#head = 0;
      } else if (this.#head > 1024) {
        this.#chunks.splice(0, this.#head);
        this.#head = 0;
      }
      if (this.#held < HIGH_WATER / 2 && !this.#waitingForDrain) this.from.resume();
    }

    stop(): void {
      if (this.up) counts.discardedUpBytes += this.#held;
      else counts.discardedDownBytes += this.#held;
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#chunks.length = 0;
      this.#head = 0;
      this.#held = 0;
    }
  }

  class Link {
    tainted = false;
    /** Chosen by `dropRepliesAfterRequest`: its replies are swallowed until it is reset. */
    dropping = false;
    destroyed = false;
    readonly up: Direction;
    readonly down: Direction;

    constructor(
      readonly client: Socket,
      readonly server: Socket,
    ) {
      this.up = new Direction(client, server, true, this);
      this.down = new Direction(server, client, false, this);
      client.on('data', data => this.up.push(data));
      server.on('data', data => this.down.push(data));
      for (const socket of [client, server]) {
        socket.on('error', () => this.destroy());
        socket.on('close', () => this.destroy());
      }
      // A half-close (client QUIT, server shutdown) is passed on as a full close: simpler, and
      // ioredis treats both the same.
      client.on('end', () => this.destroy());
      server.on('end', () => this.destroy());
    }

    /** Resets both sides (RST where the platform allows, so the peer sees ECONNRESET). */
    destroy(reset = false): void {
      if (this.destroyed) return;
      this.destroyed = true;
      links.delete(this);
      if (reset) counts.resets += 1;
      this.up.stop();
      this.down.stop();
      for (const socket of [this.client, this.server]) {
        if (reset && typeof socket.resetAndDestroy === 'function' && socket.readyState !== 'opening') socket.resetAndDestroy();
        else socket.destroy();
      }
    }
  }

  function resetTainted(): void {
    for (const link of [...links]) if (link.tainted) link.destroy(true);
  }

  const server: Server = createServer({ pauseOnConnect: true }, client => {
    if (closed) {
      client.destroy();
      return;
    }
    counts.accepted += 1;
    client.setNoDelay(true);
    const upstream = createConnection({ host: target.host, port: target.port });
    upstream.setNoDelay(true);
    const link = new Link(client, upstream);
    links.add(link);
    upstream.once('connect', () => {
      if (!link.destroyed && mode.kind !== 'blackhole') client.resume();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('fault proxy: no TCP address');
  const port = address.port;

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get mode() {
      return mode;
    },
    setMode(next) {
      const previous = mode;
      mode = typeof next === 'string' ? ({ pass, dropReplies, blackhole } as const)[next] : next;
      if (mode.kind === 'latency' && !(Number.isFinite(mode.ms) && mode.ms >= 0)) throw new RangeError(`latency: bad ms ${mode.ms}`);
      if (mode.kind === 'dropRepliesThenReset' && !(Number.isFinite(mode.afterMs) && mode.afterMs >= 0))
        throw new RangeError(`dropRepliesThenReset: bad afterMs ${mode.afterMs}`);
      if (!dropsReplies()) {
        clearTimeout(resetTimer);
        resetTimer = undefined;
      }
      // A connection that swallowed part of a reply stream cannot be trusted to forward again.
      if ((previous.kind === 'dropReplies' || previous.kind === 'dropRepliesThenReset') && !dropsReplies()) resetTainted();
      for (const link of links) {
        // Leaving a blackhole releases what it held; entering one stops reading.
        link.up.pump();
        link.down.pump();
      }
    },
    resetAll() {
      for (const link of [...links]) link.destroy(true);
    },
    stats() {
      return { ...counts, open: links.size };
    },
    async close() {
      if (closed) return;
      closed = true;
      clearTimeout(resetTimer);
      const stopped = new Promise<void>(resolve => server.close(() => resolve()));
      for (const link of [...links]) link.destroy();
      await stopped;
    },
  };
}
