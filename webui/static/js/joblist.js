// The job list (#/): every job the server knows, newest first, polled.

import { listJobs, poll } from './api.js';
import { h, table, cell, num, badge } from './dom.js';
import * as f from './format.js';
import * as status from './status.js';

export const stateBadge = (state, testid) => badge(state || 'UNKNOWN', `state state-${state || 'UNKNOWN'}`, testid);

export const jobHref = (id) => `#/jobs/${encodeURIComponent(id)}`;

export function jobList(root) {
  const body = h('div', { testid: 'job-list' });
  root.append(h('h1', null, 'Jobs'), body);
  const p = poll(async (signal) => {
    try {
      render(body, await listJobs(signal));
      status.ok();
    } catch (e) {
      if (e.name === 'AbortError') return false;
      status.failed(e);
    }
    return true;
  }, 1000);
  return { stop: p.stop };
}

const COLS = [['ID'], ['Name'], ['State'], ['Start'], ['Duration', 'num'], ['Error']];

function render(body, jobs) {
  const at = (j) => Date.parse(j.start) || 0;
  const sorted = [...(Array.isArray(jobs) ? jobs : [])].sort((a, b) =>
    at(b) - at(a) || String(a.id).localeCompare(String(b.id)));
  const rows = sorted.map((j) =>
    h('tr', { testid: 'job-row', 'data-job-id': j.id, class: 'link', onclick: () => { location.hash = jobHref(j.id); } },
      cell('id', h('a', { href: jobHref(j.id), testid: 'job-link' }, j.id), { class: 'mono' }),
      cell('name', j.name, { testid: 'job-name' }),
      cell('state', stateBadge(j.state, 'job-state')),
      cell('start', f.dateTime(j.start), { class: 'mono', title: f.iso(j.start) }),
      num('seconds', f.seconds(j.seconds)),
      cell('error', j.error || '', { class: 'error-text', testid: 'job-error' })));
  body.replaceChildren(table(COLS, rows, 'No jobs yet: submit one to this server.', { class: 'jobs' }));
  const empty = body.querySelector('tr.empty');
  if (empty) empty.setAttribute('data-testid', 'jobs-empty');
}
