import { Redis } from 'ioredis';
import { registerVirtualClockServer, setVirtualClockOffset } from './scripts.js';

/**
 * The test kit's hold on the server it started (sandglass/testing): registers the server's
 * run_id so that the process's clients of its port run the virtual clock's library (and only
 * against that server), sets the clock's offset, and wakes the workers after a move.
 */
export class VirtualClockServer {
  readonly #admin: Redis;
  readonly #unregister: () => void;

  private constructor(admin: Redis, unregister: () => void) {
    this.#admin = admin;
    this.#unregister = unregister;
  }

  /** Takes the server at 127.0.0.1:`port` (just started by the caller) onto the virtual clock, at offset `offsetMs`. */
  static async open(port: number, offsetMs: number): Promise<VirtualClockServer> {
    const url = `redis://127.0.0.1:${port}`;
    const probe = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
    probe.on('error', () => undefined);
    const info = String(await probe.call('INFO', 'server').finally(() => probe.disconnect()));
    const runId = /^run_id:(\w+)/m.exec(info)?.[1] ?? '';
    // Registered before the admin client exists, so that it too runs the clock's library.
    const unregister = registerVirtualClockServer(port, runId);
    const admin = new Redis(url, { maxRetriesPerRequest: 1 });
    admin.on('error', () => undefined);
    const server = new VirtualClockServer(admin, unregister);
    try {
      await server.setOffset(offsetMs);
      return server;
    } catch (error) {
      server.close();
      throw error;
    }
  }

  /** Sets how far the scripts' "now" is ahead of the server's TIME (ms). */
  setOffset(offsetMs: number): Promise<void> {
    return setVirtualClockOffset(this.#admin, offsetMs);
  }

  /**
   * Tells every listening worker of queues under `prefix` (in any process) to look now, as after a
   * lost wake-up message: a listener hears a due time that is not a number as "look now".
   */
  async wakeAll(prefix: string): Promise<void> {
    const channels = (await this.#admin.call('PUBSUB', 'CHANNELS', `${prefix}:*wake`)) as string[];
    await Promise.all(channels.map(channel => this.#admin.publish(channel, 'now')));
  }

  /** Lets the server go: clients opened from now on read the real clock (the caller stops the server). */
  close(): void {
    this.#unregister();
    this.#admin.disconnect();
  }
}
