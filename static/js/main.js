// main.js — the page's entry point: loads the catalog (presets and the API's enumerations),
// builds each tab, and routes the URL fragment: #<tab> picks a tab; #r=<hash> reopens a stored
// result (GET /v1/results/<hash>) on the tab that lists its endpoint; #<link>=<id> follows a
// sweep on the tab with that link (#sweep=<id>, #plan=<id>, #serve=<id>).
//
// A tab is a module exporting one descriptor: {name (#name, #nav-name, #tab-name), footer (the
// model it answers with), init() (builds its form; may be async), endpoints? + open(result,
// hash) (shows a stored result), link? + follow(id) (follows a sweep)}. Adding a tab is its
// module, its <section> in index.html and one entry below; tabs reach each other through nav.js.
import { api } from './api.js';
import { loadCatalog } from './catalog.js';
import { estimateTab } from './estimate.js';
import { goodputTab } from './goodput.js';
import { planTab } from './plan.js';
import { scalingTab } from './scaling.js';
import { serveTab } from './serve.js';
import { sweepTab } from './sweep.js';
import { $, $$ } from './util.js';

const TABS = [estimateTab, sweepTab, planTab, serveTab, scalingTab, goodputTab];

function showTab(tab) {
  $('#footer').textContent = `${tab.footer} Numbers are estimates, not measurements.`;
  for (const t of TABS) {
    $(`#tab-${t.name}`).hidden = t !== tab;
    $(`#nav-${t.name}`).setAttribute('aria-selected', String(t === tab));
  }
}

function banner(text) {
  const b = $('#banner');
  b.textContent = text;
  b.hidden = !text;
}

async function openResult(hash) {
  const { data } = await api('GET', `/v1/results/${hash}`);
  const tab = TABS.find((t) => (t.endpoints || []).includes(data.endpoint));
  if (!tab) throw new Error(`a ${data.endpoint} result cannot be shown on this page (open ${data.path} in the API)`);
  showTab(tab);
  await tab.open(data, hash);
}

// A link's id goes into an API path: a result's hash and a sweep's id are 64 lowercase hex
// digits, and anything else ('../../x') is refused here rather than sent.
function linkId(id, what) {
  if (!/^[0-9a-f]{64}$/.test(id)) throw new Error(`'${id}' is not a ${what} (64 lowercase hex digits)`);
  return id;
}

async function route() {
  const h = location.hash.slice(1);
  const eq = h.indexOf('=');
  banner('');
  try {
    if (h.startsWith('r=')) { await openResult(linkId(h.slice(2), 'result')); return; }
    const follower = eq > 0 && TABS.find((t) => t.link === h.slice(0, eq));
    if (follower) { showTab(follower); await follower.follow(linkId(h.slice(eq + 1), `${follower.link} id`)); return; }
    showTab(TABS.find((t) => t.name === h) || TABS[0]);
  } catch (e) {
    showTab(TABS[0]);
    banner(`Cannot open this link: ${e.message}`);
  }
}

async function main() {
  if (!window.Chart) banner('The charting library is missing (run scripts/build_web.sh): results show without charts.');
  try {
    await loadCatalog();
  } catch (e) {
    banner(`Cannot load the presets and the API description: ${e.message}`);
    return;
  }
  for (const t of TABS) await t.init();
  for (const b of $$('nav [role="tab"]')) b.addEventListener('click', () => { location.hash = b.id.slice(4); });
  window.addEventListener('hashchange', route);
  await route();
  document.body.dataset.ready = 'true';
}

main();
