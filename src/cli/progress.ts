// Progress of long work on stderr: a bar when a person watches (stderr is a terminal), else a plain
// line every few seconds, which reads well in a CI log or a file.
import cliProgress from 'cli-progress';

const PLAIN_INTERVAL_MS = 2_000;

export interface ProgressState {
  bytesRead: number;
  imported: number;
  skipped: number;
}

export interface Progress {
  /** Whether a bar owns the terminal (then other stderr output waits until `stop`). */
  readonly isBar: boolean;
  update(state: ProgressState): void;
  stop(): void;
}

/** Starts reporting; `sizeBytes` gives the bar an end when the input's size is known. */
export function startProgress(sizeBytes: number | undefined): Progress {
  const startedAt = performance.now();
  const rate = (imported: number) => Math.round((imported * 1000) / Math.max(1, performance.now() - startedAt));
  return process.stderr.isTTY ? startBar(sizeBytes, rate) : startLines(sizeBytes, rate);
}

function startBar(sizeBytes: number | undefined, rate: (imported: number) => number): Progress {
  const known = sizeBytes !== undefined && sizeBytes > 0;
  const bar = new cliProgress.SingleBar(
    {
      format: known
        ? 'import [{bar}] {percentage}% | {imported} imported, {skipped} skipped | {rate} jobs/s | eta {eta_formatted}'
        : 'import {imported} imported, {skipped} skipped | {rate} jobs/s | {duration_formatted}',
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(known ? sizeBytes : 1, 0, { imported: 0, skipped: 0, rate: 0 });
  let stopped = false;
  return {
    isBar: true,
    update({ bytesRead, imported, skipped }) {
      bar.update(known ? Math.min(bytesRead, sizeBytes) : 0, { imported, skipped, rate: rate(imported) });
    },
    stop() {
      if (stopped) return;
      stopped = true;
      bar.stop();
    },
  };
}

function startLines(sizeBytes: number | undefined, rate: (imported: number) => number): Progress {
  let latest: ProgressState = { bytesRead: 0, imported: 0, skipped: 0 };
  const timer = setInterval(() => {
    const share = sizeBytes ? `, ${Math.min(100, Math.floor((latest.bytesRead * 100) / sizeBytes))}% read` : '';
    process.stderr.write(`import: ${latest.imported} imported, ${latest.skipped} skipped${share}, ${rate(latest.imported)} jobs/s\n`);
  }, PLAIN_INTERVAL_MS);
  timer.unref();
  return {
    isBar: false,
    update(state) {
      latest = { ...state };
    },
    stop() {
      clearInterval(timer);
    },
  };
}
