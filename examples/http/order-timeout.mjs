// The order-timeout example over the HTTP API, in plain Node (fetch only, no package): what a
// service in any language does against `sandglass serve`. Twenty orders get a "close it if still
// unpaid" job due 1.5-3.5 s after it is placed; seven are paid before then (their job is cancelled);
// a pull consumer closes the other thirteen, each exactly once and never before its due time.
//
//   SANDGLASS_URL=http://127.0.0.1:8080 [SANDGLASS_TOKEN=...] node examples/http/order-timeout.mjs
//
// The last line it prints is a JSON summary: { closed, cancelled, earliestMarginMs, duplicates }.
const base = (process.env.SANDGLASS_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
const token = process.env.SANDGLASS_TOKEN;
const queue = process.env.SANDGLASS_QUEUE ?? `order-timeout-${Date.now()}`;
const ORDERS = 20;
const PAID = new Set([2, 5, 8, 11, 14, 17, 20]);
const LEASE_MS = 10_000;

/** One API call: JSON in, JSON out; an error answer throws with its code. */
async function call(method, path, body, timeoutMs = 10_000) {
  const response = await fetch(`${base}/v1/queues/${queue}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const answer = await response.json();
  if (!response.ok) throw Object.assign(new Error(`${method} ${path}: ${answer.error.code}: ${answer.error.message}`), answer.error);
  return answer;
}

// An id goes into a path RFC 3986 percent-encoded: encodeURIComponent does that.
const jobPath = id => `/jobs/${encodeURIComponent(id)}`;

const dueAt = new Map();
for (let order = 1; order <= ORDERS; order += 1) {
  const id = `order:${order}`;
  await call('POST', '/jobs', { id, payload: { orderId: order }, delay: 1_500 + order * 100 });
  dueAt.set(id, (await call('GET', jobPath(id))).dueAt);
}
for (const order of PAID) await call('DELETE', jobPath(`order:${order}`)); // paid in time

const closed = [];
let earliestMarginMs = Infinity;
let duplicates = 0;
const deadline = Date.now() + 30_000;
while (closed.length + PAID.size < ORDERS && Date.now() < deadline) {
  // A long poll: the HTTP timeout stays above waitMs, or every idle poll would be cut short.
  const { jobs } = await call('POST', '/claim', { max: 10, waitMs: 2_000, leaseMs: LEASE_MS }, 12_000);
  for (const job of jobs) {
    // Never early, on the Redis clock that decides "due": the claim's lease started at
    // leaseUntilAt - leaseMs, which is at or after the due time the add answered.
    earliestMarginMs = Math.min(earliestMarginMs, job.leaseUntilAt - LEASE_MS - dueAt.get(job.id));
    if (closed.includes(job.payload.orderId)) duplicates += 1;
    else closed.push(job.payload.orderId); // close the order (idempotently, by its id)
    await call('POST', `${jobPath(job.id)}/ack`, { token: job.token });
  }
}
console.log(JSON.stringify({ closed: closed.sort((a, b) => a - b), cancelled: [...PAID], earliestMarginMs, duplicates }));
