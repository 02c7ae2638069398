// The page's entry point: a router over the location's hash. #/ is the job
// list, #/jobs/<id> one job. Each page owns its poll; leaving a page stops
// it, so one tab never polls two pages.

import { jobList } from './joblist.js';
import { jobPage } from './jobpage.js';

const main = document.getElementById('main');
let current = null;

function route() {
  if (current) current.stop();
  main.replaceChildren();
  window.scrollTo(0, 0);
  const m = /^#\/jobs\/(.+)$/.exec(location.hash);
  current = m ? jobPage(main, decodeURIComponent(m[1])) : jobList(main);
}

window.addEventListener('hashchange', route);
route();
