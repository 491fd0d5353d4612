/**
 * The dashboard's static files, served from the repository's `dashboard/` folder: `/` is
 * index.html, `/<name>` any file of the folder itself (no subfolders, no dot files, names from
 * a safe alphabet, so no path can leave the folder).
 */
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HttpError } from './errors.js';

/** `<repo>/dashboard`: two levels up from this module, both from src/server (tsx) and dist/server. */
export const DEFAULT_DASHBOARD_DIR = fileURLToPath(new URL('../../dashboard/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

export interface DashboardFile {
  body: Buffer;
  contentType: string;
}

/** Reads `name` from `dir`; 404 DASHBOARD_NOT_FOUND when it (or the folder) is missing or not servable. */
export async function readDashboardFile(dir: string, name: string): Promise<DashboardFile> {
  const contentType = TYPES[extname(name).toLowerCase()];
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name) || contentType === undefined) {
    throw new HttpError('DASHBOARD_NOT_FOUND', `No dashboard file '${name.slice(0, 100)}'`);
  }
  try {
    return { body: await readFile(join(dir, name)), contentType };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'EISDIR' && code !== 'ENOTDIR') throw error;
    if (name === 'index.html') {
      throw new HttpError('DASHBOARD_NOT_FOUND', 'The dashboard is not installed: its folder (dashboard/ next to src/ and dist/) has no index.html. The HTTP API under /v1 works without it.');
    }
    throw new HttpError('DASHBOARD_NOT_FOUND', `No dashboard file '${name}'`);
  }
}
