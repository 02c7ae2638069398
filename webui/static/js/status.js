// The bar at the top right that says whether the page is live: when the
// last sample arrived, or why the last poll failed.

import * as f from './format.js';

const el = () => document.querySelector('[data-testid="poll-status"]');

export function ok() {
  const e = el();
  if (!e) return;
  e.className = 'poll ok';
  e.textContent = `live · ${f.clock(Date.now()).slice(0, 8)}`;
}

export function failed(err) {
  const e = el();
  if (!e) return;
  e.className = 'poll error';
  e.textContent = `not updating: ${err.message}`;
}

export function stopped(text) {
  const e = el();
  if (!e) return;
  e.className = 'poll stopped';
  e.textContent = text;
}
