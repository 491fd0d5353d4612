// The HTTP API as the dashboard calls it, and the token it sends.
//
// The token is typed once and kept in sessionStorage (this tab only), or arrives in a `#token=`
// link, which is removed from the address bar at once so it does not stay in the history.

const TOKEN_KEY = 'sandglass.token';

let token = takeTokenFromFragment() ?? sessionStorage.getItem(TOKEN_KEY) ?? '';
let onUnauthorized = () => undefined;

function takeTokenFromFragment() {
  const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (!match) return undefined;
  let value = match[1] ?? '';
  try {
    value = decodeURIComponent(value);
  } catch {
    // Not percent-encoded: keep it as typed.
  }
  sessionStorage.setItem(TOKEN_KEY, value);
  history.replaceState(null, '', location.pathname + location.search);
  return value;
}

export const hasToken = () => token !== '';

export function setToken(value) {
  token = value;
  sessionStorage.setItem(TOKEN_KEY, value);
}

/** `handler` runs whenever the server answers 401 (no token, or a wrong one). */
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

/** An answer other than 2xx, or no answer at all (`status` 0). */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/** Calls the API: answers the parsed JSON body, or throws an ApiError. */
export async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, { method, headers, cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    throw new ApiError(0, 'NETWORK', `Cannot reach the sandglass server (${error instanceof Error ? error.message : String(error)})`);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (response.status === 401) onUnauthorized();
  if (!response.ok) {
    const error = data && typeof data === 'object' && data.error ? data.error : {};
    throw new ApiError(
      response.status,
      String(error.code ?? `HTTP_${response.status}`),
      String(error.message ?? (text.slice(0, 200) || response.statusText)),
    );
  }
  return data;
}

export const queuePath = name => `/v1/queues/${encodeURIComponent(name)}`;
export const jobPath = (name, id) => `${queuePath(name)}/jobs/${encodeURIComponent(id)}`;

/** An error as one line for the page. */
export function describe(error) {
  if (!(error instanceof ApiError)) return error instanceof Error ? error.message : String(error);
  if (error.status === 0) return error.message;
  return `${error.message} (${error.code})`;
}
