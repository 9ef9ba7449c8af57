// main.js — the page's entry point: loads the presets, builds each tab, and routes the URL
// fragment: #estimate, #sweep, #plan, #scaling, #goodput pick a tab; #r=<hash> reopens a stored result
// (GET /v1/results/<hash>) on its tab; #sweep=<id> follows a sweep, #plan=<id> a plan.
import { api } from './api.js';
import { currentRequest, fillForm, initEstimate, showEstimate } from './estimate.js';
import { fillGoodput, initGoodput, showGoodput } from './goodput.js';
import { fillScaling, initScaling, showScaling } from './scaling.js';
import { initMeasured } from './measured.js';
import { follow, initSweep } from './sweep.js';
import { followPlan, initPlan } from './plan.js';
import { $, $$ } from './util.js';

const TABS = ['estimate', 'sweep', 'plan', 'scaling', 'goodput'];
const TAB_OF_ENDPOINT = { estimate: 'estimate', scaling: 'scaling', goodput_optimize: 'goodput' };

// The model each tab answers with, for the footer: every tab is a different one.
const FOOTERS = {
  estimate: 'Step time and memory: Calculon’s analytical model of Megatron-style training, with Fathom’s modern block (grouped-query attention, gated MLP, embeddings, fused attention, FP8, context parallelism, ZeRO).',
  sweep: 'Fastest layout: Calculon’s optimal-execution search over its analytical model.',
  plan: 'Plan a cluster: the optimal-execution search per GPU type and count, priced, with Young’s checkpoint interval and Llama 3’s failure rate.',
  scaling: 'Scaling budget: the 2020 scaling-law calculator (Transformer-XL on WikiText-103) and the Chinchilla law (Hoffmann et al. 2022).',
  goodput: 'Goodput: the Pollux model of throughput × statistical efficiency (Qiao et al. 2021).',
};

function showTab(name) {
  $('#footer').textContent = `${FOOTERS[name]} Numbers are estimates, not measurements.`;
  for (const t of TABS) {
    $(`#tab-${t}`).hidden = t !== name;
    $(`#nav-${t}`).setAttribute('aria-selected', String(t === name));
  }
}

function banner(text) {
  const b = $('#banner');
  b.textContent = text;
  b.hidden = !text;
}

async function openResult(hash) {
  const { data } = await api('GET', `/v1/results/${hash}`);
  const tab = TAB_OF_ENDPOINT[data.endpoint];
  if (!tab) throw new Error(`a ${data.endpoint} result cannot be shown on this page (open ${data.path} in the API)`);
  showTab(tab);
  if (tab === 'estimate') {
    await fillForm(data.request);
    // Names of matching presets read better than the objects the normalized request holds.
    const named = currentRequest();
    showEstimate({ ...data.request, model: named.model, system: named.system }, data.response, hash);
  } else if (tab === 'scaling') {
    await fillScaling(data.request, hash);
    await showScaling(data.response, hash);
  } else {
    fillGoodput(data.request);
    showGoodput(data.response, hash);
  }
}

async function route() {
  const h = location.hash.slice(1);
  banner('');
  try {
    if (h.startsWith('r=')) await openResult(h.slice(2));
    else if (h.startsWith('sweep=')) { showTab('sweep'); await follow(h.slice(6)); }
    else if (h.startsWith('plan=')) { showTab('plan'); await followPlan(h.slice(5)); }
    else showTab(TABS.includes(h) ? h : 'estimate');
  } catch (e) {
    showTab('estimate');
    banner(`Cannot open this link: ${e.message}`);
  }
}

async function main() {
  if (!window.Chart) banner('The charting library is missing (run scripts/build_web.sh): results show without charts.');
  let presets;
  try {
    presets = (await api('GET', '/v1/presets')).data;
  } catch (e) {
    banner(`Cannot load the presets: ${e.message}`);
    return;
  }
  await initEstimate(presets);
  initSweep(presets);
  await initPlan(presets);
  initScaling();
  initGoodput();
  initMeasured();
  for (const b of $$('nav [role="tab"]')) b.addEventListener('click', () => { location.hash = b.id.slice(4); });
  window.addEventListener('hashchange', route);
  await route();
  document.body.dataset.ready = 'true';
}

main();
