// The page's only contact with the server: the JSON API of package webui,
// read with fetch, and a poller that reads it about once a second.

export class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function call(method, path, signal) {
  let res;
  try {
    res = await fetch(path, { method, signal, cache: 'no-store', headers: { Accept: 'application/json' } });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new APIError(0, `cannot reach weir: ${e.message}`);
  }
  let body = null;
  try {
    body = await res.json();
  } catch {
    // A proxy's HTML error page, say: report the status alone.
  }
  if (!res.ok) {
    const msg = body && typeof body.error === 'string' ? body.error : `${res.status} ${res.statusText}`;
    throw new APIError(res.status, msg);
  }
  return body;
}

const jobPath = (id) => `/api/jobs/${encodeURIComponent(id)}`;

export const listJobs = (signal) => call('GET', '/api/jobs', signal);
export const getJob = (id, signal) => call('GET', jobPath(id), signal);

// act POSTs cancel, drain or savepoint; it resolves to {ok, location?} and
// rejects with an APIError that carries the server's message.
export const act = (id, action) => call('POST', `${jobPath(id)}/${action}`);

// Beam's terminal job states: nothing changes after them.
const TERMINAL = new Set(['DONE', 'FAILED', 'CANCELLED', 'DRAINED', 'UPDATED']);
export const isTerminal = (state) => TERMINAL.has(state);

// poll calls step(signal) now and then every intervalMs after the previous
// call settled (never two at once, so a slow server is not piled on) until
// step resolves to false or stop is called. now() runs step at once, as
// after an action. stop() aborts a fetch in flight through signal.
export function poll(step, intervalMs) {
  const ctl = new AbortController();
  let timer = null;
  let running = false;
  let again = false;
  let done = false;

  async function tick() {
    timer = null;
    if (done) return;
    running = true;
    let more = true;
    try {
      more = await step(ctl.signal);
    } catch (e) {
      if (e.name !== 'AbortError') console.error('weir: poll step failed', e);
    }
    running = false;
    if (done || ctl.signal.aborted) return;
    if (more === false) {
      done = true;
      return;
    }
    timer = setTimeout(tick, again ? 0 : intervalMs);
    again = false;
  }

  tick();
  return {
    stop() {
      done = true;
      ctl.abort();
      clearTimeout(timer);
    },
    now() {
      if (done) return;
      if (running) {
        again = true;
        return;
      }
      clearTimeout(timer);
      tick();
    },
  };
}
