// A schedule's rule in words: intervals ('5m', '1h30m') and common cron patterns ('every day at
// 09:00', 'at 07:30 on Mon–Fri'). Pure functions of their arguments, with no DOM.

/** 300_000 -> '5m', 5_400_000 -> '1h30m', 1_500 -> '1.5s', 86_400_000 -> '1d'. */
export function fmtEvery(ms) {
  let rest = Number(ms);
  if (!Number.isFinite(rest) || rest <= 0) return `${String(ms)} ms`;
  let text = '';
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
  ]) {
    if (rest >= size) {
      text += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  if (rest > 0) text += `${Number((rest / 1000).toFixed(3))}s`;
  return text;
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const NUMBER = /^\d{1,2}$/;
const pad = n => String(n).padStart(2, '0');

/**
 * Common cron patterns in words ('every 15 min', 'every day at 09:00', 'at 09:00 on Mon–Fri');
 * undefined for anything else, which is then shown as the pattern itself. Times are the
 * schedule's own time zone, which is shown beside it.
 */
export function describeCron(pattern) {
  const fields = String(pattern).trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) return undefined;
  const [second, minute, hour, dom, month, dow] = fields.length === 6 ? fields : ['0', ...fields];
  if (![second, minute, hour, dom].every(field => /^[\d*/,-]+$/.test(field)) || ![month, dow].every(field => /^[\w*/,-]+$/.test(field)))
    return undefined;
  const step = field => /^\*\/(\d+)$/.exec(field)?.[1];

  if (dom === '*' && month === '*' && dow === '*') {
    if (fields.length === 6 && minute === '*' && hour === '*') {
      if (second === '*') return 'every second';
      if (step(second)) return `every ${step(second)} s`;
    }
    if (second === '0' && hour === '*') {
      if (minute === '*') return 'every minute';
      if (step(minute)) return `every ${step(minute)} min`;
      if (NUMBER.test(minute)) return `every hour at :${pad(minute)}`;
    }
    if (second === '0' && NUMBER.test(minute) && step(hour)) return `every ${step(hour)} h at :${pad(minute)}`;
  }
  // A time of day (or a few), then which days.
  if (!NUMBER.test(second) || !NUMBER.test(minute) || !/^\d{1,2}(,\d{1,2}){0,3}$/.test(hour)) return undefined;
  const times = hour
    .split(',')
    .map(h => `${pad(h)}:${pad(minute)}${second === '0' ? '' : `:${pad(second)}`}`)
    .join(' and ');
  const days = dayText(dom, month, dow);
  return days === undefined ? undefined : `${days.prefix}at ${times}${days.suffix}`;
}

function dayText(dom, month, dow) {
  const months = month === '*' ? '' : listText(month, MONTHS, 1);
  if (months === undefined) return undefined;
  const inMonths = months ? ` in ${months}` : '';
  // Both set means "either" in cron: too subtle for one line, so the pattern is shown instead.
  if (dom !== '*' && dow !== '*') return undefined;
  if (dow !== '*') {
    const days = listText(dow, WEEKDAYS, 0);
    return days === undefined ? undefined : { prefix: '', suffix: ` on ${days}${inMonths}` };
  }
  if (dom !== '*') {
    if (!/^\d{1,2}(,\d{1,2})*$/.test(dom)) return undefined;
    return { prefix: '', suffix: ` on day ${dom.split(',').join(', ')} of ${months ? months : 'each month'}` };
  }
  return { prefix: months ? '' : 'every day ', suffix: inMonths };
}

/** '1-5' -> 'Mon–Fri', '1,3' -> 'Mon, Wed', 'MON' -> 'Mon'; undefined for steps and unknown names. */
function listText(field, names, first) {
  const name = token => {
    const upper = token.toUpperCase();
    const byName = names.findIndex(n => n.toUpperCase() === upper);
    if (byName !== -1) return names[byName];
    if (!NUMBER.test(token)) return undefined;
    const index = Number(token) - first;
    // Weekday 7 is Sunday too.
    return names[names === WEEKDAYS && index === 7 ? 0 : index];
  };
  const parts = field.split(',').map(part => {
    const [from, to, extra] = part.split('-');
    if (extra !== undefined) return undefined;
    const a = name(from ?? '');
    if (to === undefined) return a;
    const b = name(to);
    return a && b ? `${a}–${b}` : undefined;
  });
  return parts.every(Boolean) ? parts.join(', ') : undefined;
}
