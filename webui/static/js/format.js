// Human units for the figures of a jobview sample. Every function takes a
// raw JSON value and returns a string; none throws: a missing or non-finite
// value prints as a dash, so one odd figure never blanks a table.

// jobview.MinWatermark and MaxWatermark (Beam's mtime bounds).
export const MIN_WATERMARK = -9223372036854775;
export const MAX_WATERMARK = 9223372036854775;

export const DASH = '–';

const finite = (x) => typeof x === 'number' && Number.isFinite(x);

// scaled prints n in steps of 1000 with the given unit names, as 1.2k or
// 34M: one decimal below 10, none above, so columns stay narrow.
function scaled(n, units, sep) {
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 999.5 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  const digits = i === 0 && Number.isInteger(v) ? 0 : Math.abs(v) < 9.95 ? 1 : 0;
  return v.toFixed(digits) + sep + units[i];
}

// count: 950, 1.2k, 34M.
export function count(n) {
  return finite(n) ? scaled(n, ['', 'k', 'M', 'G', 'T', 'P'], '') : DASH;
}

// rate: elements per second, 1.2k/s.
export function rate(n) {
  return finite(n) ? count(n) + '/s' : DASH;
}

// bytes: decimal units, 3.4 MB.
export function bytes(n) {
  if (!finite(n) || n < 0) return DASH;
  return scaled(n, ['B', 'kB', 'MB', 'GB', 'TB', 'PB'], ' ');
}

export function byteRate(n) {
  return finite(n) ? bytes(n) + '/s' : DASH;
}

// seconds: 350 ms, 2.1 s, 3m 12s, 1h 02m, 2d 3h.
export function seconds(s) {
  if (!finite(s)) return DASH;
  const neg = s < 0 ? '-' : '';
  const a = Math.abs(s);
  if (a === 0) return '0 s';
  if (a < 1) return neg + Math.round(a * 1000) + ' ms';
  if (a < 60) return neg + a.toFixed(1) + ' s';
  const two = (x) => String(Math.floor(x)).padStart(2, '0');
  if (a < 3600) return `${neg}${Math.floor(a / 60)}m ${two(a % 60)}s`;
  if (a < 86400) return `${neg}${Math.floor(a / 3600)}h ${two((a % 3600) / 60)}m`;
  return `${neg}${Math.floor(a / 86400)}d ${Math.floor((a % 86400) / 3600)}h`;
}

export function millis(ms) {
  return finite(ms) ? seconds(ms / 1000) : DASH;
}

export function percent(r) {
  return finite(r) ? Math.round(r * 100) + '%' : DASH;
}

// toMillis accepts epoch milliseconds or an RFC 3339 string (Go's
// time.Time); Go's zero time and anything unparsable are null.
function toMillis(t) {
  if (finite(t)) return t;
  if (typeof t !== 'string' || t === '' || t.startsWith('0001-01-01')) return null;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : ms;
}

// iso: the full UTC time, for tooltips.
export function iso(t) {
  const ms = toMillis(t);
  return ms === null ? '' : new Date(ms).toISOString();
}

// dateTime: 2026-12-01 12:00:05 UTC, for start times and triggers.
export function dateTime(t) {
  const s = iso(t);
  return s === '' ? DASH : s.slice(0, 10) + ' ' + s.slice(11, 19);
}

// clock: the time of day to the millisecond if t is today (UTC), else the
// date and time to the second. Event times of a backfill are days old, and
// then the date is what matters.
export function clock(t) {
  const s = iso(t);
  if (s === '') return DASH;
  const today = new Date().toISOString().slice(0, 10);
  return s.slice(0, 10) === today ? s.slice(11, 23) : s.slice(0, 10) + ' ' + s.slice(11, 19);
}

// watermark: a time, or −∞ before any watermark, +∞ once the input ended.
export function watermark(ms) {
  if (!finite(ms)) return DASH;
  if (ms <= MIN_WATERMARK) return '−∞';
  if (ms >= MAX_WATERMARK) return '+∞';
  return clock(ms);
}

export function watermarkTitle(ms) {
  if (!finite(ms)) return '';
  if (ms <= MIN_WATERMARK) return 'no watermark yet';
  if (ms >= MAX_WATERMARK) return 'input ended';
  return iso(ms);
}

// lag: seconds behind; a dash while the watermark is at either end of
// time, where jobview reports zero.
export function lag(s, wm) {
  if (finite(wm) && (wm <= MIN_WATERMARK || wm >= MAX_WATERMARK)) return DASH;
  return seconds(s);
}
