/**
 * The dashboard's static files, served from the repository's `dashboard/` folder: `/` is
 * index.html, `/<name>` any file of the folder itself (no subfolders, no dot files, names from
 * a safe alphabet, so no path can leave the folder). index.html gets the library's queue-name rule
 * filled in, so that the browser's form checks names by the same rule as the API.
 */
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { QUEUE_NAME_RULE } from '../index.js';
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

/** A file name: one path segment from a safe alphabet, not starting with a dot. (A rule of its own, not the queue-name rule.) */
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** Placeholders of index.html and what they become. */
const INDEX_FIELDS: Record<string, string> = {
  '{{queueNamePattern}}': QUEUE_NAME_RULE.pattern,
  '{{queueNameRule}}': `A queue name: ${QUEUE_NAME_RULE.description}`,
};

export interface DashboardFile {
  body: Buffer;
  contentType: string;
}

/** Reads `name` from `dir`; 404 DASHBOARD_NOT_FOUND when it (or the folder) is missing or not servable. */
export async function readDashboardFile(dir: string, name: string): Promise<DashboardFile> {
  const contentType = TYPES[extname(name).toLowerCase()];
  if (!FILE_NAME.test(name) || contentType === undefined) {
    throw new HttpError('DASHBOARD_NOT_FOUND', `No dashboard file '${name.slice(0, 100)}'`);
  }
  try {
    const body = await readFile(join(dir, name));
    return { body: name === 'index.html' ? fillIndex(body) : body, contentType };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'EISDIR' && code !== 'ENOTDIR') throw error;
    if (name === 'index.html') {
      throw new HttpError(
        'DASHBOARD_NOT_FOUND',
        'The dashboard is not installed: its folder (dashboard/ next to src/ and dist/) has no index.html. The HTTP API under /v1 works without it.',
      );
    }
    throw new HttpError('DASHBOARD_NOT_FOUND', `No dashboard file '${name}'`);
  }
}

/** index.html with its placeholders filled in (HTML-escaped: they go into attribute values). */
function fillIndex(body: Buffer): Buffer {
  let html = body.toString('utf8');
  for (const [placeholder, value] of Object.entries(INDEX_FIELDS)) html = html.replaceAll(placeholder, escapeHtml(value));
  return Buffer.from(html);
}

function escapeHtml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
