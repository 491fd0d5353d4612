// What a Redis server runs, and when: MONITOR reports each command as it executes (a command a
// paused or frozen server holds shows up when it finally runs). A raw socket, not ioredis's
// monitor(): that one can fail its start ("Command queue state error") when another client's
// command is reported in the same read as the MONITOR reply, which happens under load.
import { connect } from 'node:net';

export interface CommandMonitor {
  close(): void;
}

/**
 * Starts MONITOR on the server at `port`; resolves once it is on. `onCommand` gets each command's
 * execution time (server clock, ms) and its line as MONITOR prints it (arguments quoted).
 */
export function monitorCommands(port: number, onCommand: (atMs: number, line: string) => void, timeoutMs = 5_000): Promise<CommandMonitor> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`MONITOR on ${port} did not start within ${timeoutMs} ms`));
    }, timeoutMs);
    let buffered = '';
    let on = false;
    socket.setEncoding('utf8');
    socket.on('error', error => {
      clearTimeout(timer);
      if (!on) reject(error);
    });
    socket.on('connect', () => socket.write('MONITOR\r\n'));
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      for (let end = buffered.indexOf('\r\n'); end !== -1; end = buffered.indexOf('\r\n')) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (!on) {
          if (line !== '+OK') {
            clearTimeout(timer);
            socket.destroy();
            reject(new Error(`MONITOR on ${port} answered ${line}`));
            return;
          }
          on = true;
          clearTimeout(timer);
          resolve({ close: () => socket.destroy() });
          continue;
        }
        const time = /^\+(\d+\.\d+) /.exec(line)?.[1];
        if (time !== undefined) onCommand(Number(time) * 1_000, line);
      }
    });
  });
}

/**
 * The memo key a MONITOR line names if it is a claim script call of `queue`'s `partition` (every
 * claim names `<prefix>:{<queue>:<partition>}:claim:<claim id>`; no other script call does, and the
 * script's own commands are reported as `[0 lua]` lines, not `"evalsha"` or `"fcall"`), else undefined.
 */
export function claimRun(line: string, queue: string, partition: number): string | undefined {
  if (!line.includes('] "evalsha" ') && !line.includes('] "fcall" ')) return undefined;
  const tag = `{${queue}:${partition}}:claim:`;
  return line.split('"').find(arg => arg.includes(tag));
}
