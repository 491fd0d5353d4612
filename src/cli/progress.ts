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
  return plainLines<ProgressState>({ bytesRead: 0, imported: 0, skipped: 0 }, latest => {
    const share = sizeBytes ? `, ${Math.min(100, Math.floor((latest.bytesRead * 100) / sizeBytes))}% read` : '';
    return `import: ${latest.imported} imported, ${latest.skipped} skipped${share}, ${rate(latest.imported)} jobs/s`;
  });
}

/** The reporter for a log: the latest state as one line (`line`) every PLAIN_INTERVAL_MS. */
function plainLines<S extends object>(
  initial: S,
  line: (latest: S) => string,
): { readonly isBar: false; update(state: S): void; stop(): void } {
  let latest = initial;
  const timer = setInterval(() => process.stderr.write(`${line(latest)}\n`), PLAIN_INTERVAL_MS);
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

/** Counts of a migration, as the bar shows them. */
export interface MigrationState {
  read: number;
  moved: number;
  existing: number;
  skipped: number;
}

/** Progress of `sandglass migrate`: jobs read of `total` (what the source held when it began). */
export function startMigrationProgress(total: number): { readonly isBar: boolean; update(state: MigrationState): void; stop(): void } {
  const startedAt = performance.now();
  const rate = (done: number) => Math.round((done * 1000) / Math.max(1, performance.now() - startedAt));
  const counts = ({ moved, existing, skipped }: MigrationState) => `${moved} moved, ${existing} already there, ${skipped} skipped`;
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: 'migrate [{bar}] {percentage}% | {counts} | {rate} jobs/s | eta {eta_formatted}',
        stream: process.stderr,
        hideCursor: true,
        clearOnComplete: false,
      },
      cliProgress.Presets.shades_classic,
    );
    // Jobs added to the source after the count can take `read` past `total`: the bar stops at its end.
    bar.start(Math.max(1, total), 0, { counts: counts({ read: 0, moved: 0, existing: 0, skipped: 0 }), rate: 0 });
    let stopped = false;
    return {
      isBar: true,
      update(state) {
        bar.update(Math.min(state.read, Math.max(1, total)), { counts: counts(state), rate: rate(state.read) });
      },
      stop() {
        if (stopped) return;
        stopped = true;
        bar.stop();
      },
    };
  }
  return plainLines<MigrationState>(
    { read: 0, moved: 0, existing: 0, skipped: 0 },
    latest => `migrate: ${latest.read} of ${total} read, ${counts(latest)}, ${rate(latest.read)} jobs/s`,
  );
}
