// scaling.js — the Scaling tab: POST /v1/scaling. With the 2020 calculator's law a budget (GPU
// hours, dollars or model width) gives the rest of the plan, drawn on its loss-versus-compute
// curve; with the Chinchilla law (Epoch AI's fit, doc/scaling.md) a compute budget, or hours of a
// current GPU, gives the optimal parameters and tokens, and a model size its optimal tokens.
import { api, ApiError, clearErrors, keepResultInUrl, shareLink, showError } from './api.js';
import { choicesOf, enumOf, preset, presetList } from './catalog.js';
import { chartBox, scatter } from './charts.js';
import { field, read, readNumber, write } from './forms.js';
import { planTokens } from './nav.js';
import { $, el, fmtInt, fmtNum } from './util.js';

const form = () => $('#scaling-form');
// The GPUs of the calculator's speed table (core/scaling/scaling_speed.c), as the API names them.
const gpus = () => enumOf('scaling_request', 'gpu');

const budget = () => $('#f-sc-budget');
// The calculator's constants of each GPU (its speed fit, price and power), read once from the
// normalized request the server stores: the price per GPU-hour is shown from them and edited.
const gpuConstants = {};
async function constantsOf(name) {
  if (!gpuConstants[name]) {
    const r = await api('POST', '/v1/scaling', { law: 'hf2020', gpu: name, hours: 1 });
    gpuConstants[name] = (await api('GET', `/v1/results/${r.hash}`)).data.request.gpu;
  }
  return gpuConstants[name];
}
async function showPrice() {
  const name = read(form(), 'gpu');
  try { write(form(), 'gpu_price', (await constantsOf(name)).price_per_hour); } catch { /* the field keeps its value */ }
}

function buildForm() {
  const sc = 'sc';
  $('#sc-hf').append(
    el('p', { class: 'muted note' }, 'The loss is the validation loss of Transformer-XL on WikiText-103, the 2020 calculator’s experiments; its laws fit that setup, not your data.'),
    field({ scope: sc, label: 'GPU', field: 'gpu', type: 'select', options: choicesOf('scaling_request', 'gpu'), value: 'V100' }),
    field({ scope: sc, label: 'Price ($ per GPU-hour)', field: 'gpu_price', min: 0, required: true, hint: 'the calculator’s price for this GPU; change it to yours' }),
    field({ scope: sc, label: 'Mixed precision (apex amp mode)', field: 'amp_mode', type: 'select', value: 'O0', options: choicesOf('scaling_request', 'amp_mode', { O0: 'O0 (fp32)' }) }),
    field({ scope: sc, label: 'Budget kind', field: 'budget_kind', id: 'budget_kind', type: 'select', value: 'hours', options: [['hours', 'GPU-hours'], ['dollars', 'dollars'], ['width', 'model width']] }),
    field({ scope: sc, label: 'Budget', field: 'hours', id: 'budget', value: 1000, required: true }),
    field({ scope: sc, label: 'Grid (kg CO₂ per kWh)', field: 'co2_kg_per_kwh', value: 0.534, min: 0 }),
  );
  const gh = presetList().systems.filter((p) => !p.user).map((p) => [p.name, p.name]);
  $('#sc-gh').append(
    field({ scope: sc, label: 'GPU (a system preset)', field: 'gh_gpu', type: 'select', options: gh, value: 'h100_sxm' }),
    el('small', { class: 'hint', id: 'sc-gh-peak' }),
    field({ scope: sc, label: 'GPU-hours', field: 'gh_hours', value: 1000000, min: 1, required: true }),
    field({ scope: sc, label: 'MFU (model FLOPs utilization)', field: 'gh_mfu', value: 0.4, min: 0.01, max: 1, required: true, hint: 'Llama 3 405B ran at 38–43 % on H100s' }),
    field({ scope: sc, label: 'Price ($ per GPU-hour)', field: 'gh_price', value: 2, min: 0, required: true, hint: 'the preset’s; change it to yours' }),
  );
  $('#sc-ch').append(
    field({ scope: sc, label: 'Compute budget (FLOPs)', field: 'flops', value: '5.76e23', min: 0, hint: 'or leave empty and give parameters (and tokens)' }),
    field({ scope: sc, label: 'Parameters', field: 'params', placeholder: 'e.g. 70e9', min: 0 }),
    field({ scope: sc, label: 'Tokens', field: 'tokens', placeholder: 'e.g. 1.4e12', min: 0, hint: 'empty: the compute-optimal tokens of that size' }),
  );
  form().addEventListener('change', (e) => {
    if (e.target.dataset.field === 'gpu') showPrice();
    if (e.target.dataset.field === 'budget_kind') budget().dataset.field = e.target.value;
    const law = read(form(), 'law');
    $('#sc-hf').hidden = law !== 'hf2020';
    $('#sc-ch').hidden = law !== 'chinchilla';
    $('#sc-gh').hidden = law !== 'gpuhours';
    if (e.target.dataset.field === 'gh_gpu') showGhPrice();
  });
  form().addEventListener('submit', (e) => { e.preventDefault(); submit(); });
}

// Hours of a current GPU (a system preset: its dense BF16 peak and price) at an MFU buy
// C = hours · 3600 · peak · MFU FLOPs, split by Fathom's one Chinchilla rule: the API's
// compute-optimal split of C under Epoch AI's fit (doc/scaling.md; about 20 tokens per
// parameter), the same rule as the "Chinchilla" law here and the plan's "chinchilla" tokens.
const FIT = 'Epoch AI’s fit of the Chinchilla law (Besiroglu et al. 2024, a replication of Hoffmann et al. 2022’s approach 3): L = 1.8172 + 482.01/N^0.3478 + 2085.43/D^0.3658';
// The largest budget the fit was checked against: Chinchilla itself, 70 B parameters on 1.4 T
// tokens, 5.76e23 FLOPs (Hoffmann et al. 2022, sec. 4). Beyond it the answer is extrapolated.
const CHINCHILLA_FLOPS = 5.76e23;
const peakOf = (sys) => sys?.matrix?.bfloat16?.tflops;
async function showGhPrice() {
  try {
    const sys = await preset('systems', read(form(), 'gh_gpu'));
    if (typeof sys.price_per_gpu_hour === 'number') write(form(), 'gh_price', sys.price_per_gpu_hour);
    $('#sc-gh-peak').textContent = peakOf(sys) ? `dense BF16 peak ${fmtInt(peakOf(sys))} TFLOP/s (the preset’s)` : 'this preset has no bfloat16 rate';
  } catch { /* keeps its values */ }
}

async function gpuHoursRequest(f) {
  const sys = await preset('systems', read(f, 'gh_gpu'));
  const hours = read(f, 'gh_hours'), mfu = read(f, 'gh_mfu');
  if (!peakOf(sys)) throw new ApiError(0, 'local', 'this GPU preset has no bfloat16 rate', 'gh_gpu');
  const flops = hours * 3600 * peakOf(sys) * 1e12 * mfu;
  return { gpu: read(f, 'gh_gpu'), hours, mfu, price: read(f, 'gh_price'), flops,
    req: { law: 'chinchilla', flops } };
}

function requestOf() {
  const f = form();
  if (read(f, 'law') === 'chinchilla') {
    const req = { law: 'chinchilla' };
    for (const k of ['flops', 'params', 'tokens']) {
      const v = read(f, k);
      if (v !== undefined) req[k] = v;
    }
    return req;
  }
  const kind = read(f, 'budget_kind');
  const req = { law: 'hf2020', gpu: read(f, 'gpu'), amp_mode: read(f, 'amp_mode'), [kind]: readNumber(budget()), co2_kg_per_kwh: read(f, 'co2_kg_per_kwh') };
  return req;
}

// The GPU by name, or its constants with the planner's price when they changed it.
async function withPrice(req) {
  const price = read(form(), 'gpu_price');
  const c = await constantsOf(req.gpu).catch(() => null);
  if (c && price !== c.price_per_hour) req.gpu = { ...c, price_per_hour: price };
  return req;
}

async function submit() {
  clearErrors(form());
  try {
    if (read(form(), 'law') === 'gpuhours') {
      const g = await gpuHoursRequest(form());
      const res = await api('POST', '/v1/scaling', g.req);
      showGpuHours(g, res.data);
      return;
    }
    let req = requestOf();
    if (req.law === 'hf2020') req = await withPrice(req);
    const from = location.hash;
    const res = await api('POST', '/v1/scaling', req);
    // Before drawing: the frontier's 17 further calls take a while, and the planner may follow
    // "Plan a cluster for these tokens" meanwhile.
    keepResultInUrl(res.hash, from);
    await showScaling(res.data, res.hash);
  } catch (e) {
    showError(form(), e);
  }
}

// The GPU-hours answer: model size, tokens and loss, the rule said, and where it extrapolates.
function showGpuHours(g, r) {
  const out = $('#sc-results');
  out.hidden = false;
  const notes = [];
  if (g.flops > CHINCHILLA_FLOPS) notes.push(`${fmtNum(g.flops)} FLOPs is ${fmtNum(g.flops / CHINCHILLA_FLOPS)}× Chinchilla’s own 5.76e23 (70 B parameters, 1.4 T tokens), the largest run the fit was checked against: the model size and loss are extrapolated.`);
  if (g.mfu > 0.5) notes.push(`an MFU of ${Math.round(g.mfu * 100)} % is above what dense runs publish (38–47 % in BF16 on H100s): fewer FLOPs are likely.`);
  out.replaceChildren(
    el('div', { class: 'kpis', id: 'sc-gh-answer' },
      kpi('Model size (parameters)', `${fmtNum(r.params / 1e9)} B`), kpi('Tokens', `${fmtNum(r.tokens / 1e12)} T`),
      kpi('Loss', fmtNum(r.loss, 4)), kpi('Cost', `$${fmtNum(g.hours * g.price / 1e6)} M`)),
    el('p', { class: 'muted', id: 'sc-gh-rule' }, `${fmtInt(g.hours)} ${g.gpu} GPU-hours at ${Math.round(g.mfu * 100)} % MFU of its dense BF16 peak are ${fmtNum(g.flops)} FLOPs. ` +
      `Split at the compute optimum, C = 6·N·D: ${fmtNum(r.tokens_per_param, 3)} tokens per parameter, about Chinchilla’s 20. ` +
      `${FIT} — the one rule of the Chinchilla law here and of the plan’s “chinchilla” tokens.`),
    ...(r.warnings || []).map((w) => el('p', { class: 'warn extrapolation-fit' }, w)),
    ...notes.map((n) => el('p', { class: 'warn extrapolation' }, n)),
    el('p', {}, el('button', { type: 'button', class: 'ghost', id: 'sc-plan', onclick: () => planTokens({ tokens: r.tokens, params: r.params }) }, 'Plan a cluster for these tokens')));
}

const kpi = (label, value) => el('div', { class: 'kpi' }, el('div', { class: 'kpi-label' }, label), el('div', { class: 'kpi-value' }, value));

// The loss law of the plan, from its normalized request (GET /v1/results/<hash>): loss =
// a·x^(−b) + c with x = FLOs / 86400.
async function lossFit(hash) {
  try { return (await api('GET', `/v1/results/${hash}`)).data.request.loss_fit; } catch { return null; }
}

async function showScaling(r, hash) {
  const out = $('#sc-results');
  out.hidden = false; // before drawing: a chart in a hidden box has no size
  const chart = chartBox('chart chart-scatter');
  if (r.law === 'chinchilla') {
    out.replaceChildren(
      el('div', { class: 'kpis' }, kpi('Compute', `${fmtNum(r.flops)} FLOPs`), kpi('Parameters', fmtNum(r.params)),
        kpi('Tokens', fmtNum(r.tokens)), kpi('Tokens per parameter', fmtNum(r.tokens_per_param, 3)), kpi('Loss', fmtNum(r.loss, 4))),
      el('p', { class: 'muted', id: 'sc-ch-rule' }, `${r.compute_optimal ? 'The compute-optimal split (about 20 tokens per parameter).' : 'The loss of this model size trained on this many tokens.'} ${FIT}.`),
      ...(r.warnings || []).map((w) => el('p', { class: 'warn extrapolation-fit' }, w)),
      el('p', {}, el('button', { type: 'button', class: 'ghost', id: 'sc-plan', onclick: () => planTokens({ tokens: r.tokens, params: r.params }) },
        'Plan a cluster for these tokens')),
      el('h3', {}, 'Loss against compute on the compute-optimal frontier'), chart.box, shareLink(hash));
    // The frontier is a few more calls of the same endpoint (cached server-side).
    const budgets = Array.from({ length: 17 }, (_, i) => 10 ** (18 + i * 0.5));
    const pts = await Promise.all(budgets.map((flops) => api('POST', '/v1/scaling', { law: 'chinchilla', flops }).then((x) => ({ x: x.data.flops, y: x.data.loss })).catch(() => null)));
    scatter(chart.canvas, [
      { label: 'compute-optimal loss', points: pts.filter(Boolean), line: true, radius: 0, color: '#2563eb' },
      { label: r.compute_optimal ? 'this budget' : 'this model and data', points: [{ x: r.flops, y: r.loss }], color: '#dc2626', radius: 7, style: 'rectRot', order: -1 },
    ], { x: { title: 'compute (FLOPs)', log: true }, y: { title: 'loss' } }, (c) => `${fmtNum(c.raw.x)} FLOPs → loss ${fmtNum(c.raw.y, 4)}`);
    return;
  }
  out.replaceChildren(
    el('div', { class: 'kpis' }, kpi('GPU-hours', fmtNum(r.hours)), kpi('Cost', `$${fmtNum(r.dollars)}`), kpi('Energy', `${fmtNum(r.kwh)} kWh`), kpi('CO₂', `${fmtNum(r.co2_kg)} kg`)),
    el('div', { class: 'kpis' }, kpi('Loss reached', fmtNum(r.loss, 4)), kpi('Parameters', fmtNum(r.model_params)),
      kpi('Shape', `${r.optimal_shape.depth} layers × ${fmtInt(r.optimal_shape.width)}`), kpi('Compute', `${fmtNum(r.flos)} FLOPs`)),
    el('p', { class: 'muted' }, `Width ${fmtNum(r.width)} (continuous); a deeper alternative: ${r.alternate_shape.depth} layers × ${fmtInt(r.alternate_shape.width)}. ` +
      `Tipping point: width ${fmtNum(r.tipping_point.width)} at ${fmtNum(r.tipping_point.hours)} GPU-hours.`),
    ...(r.warnings || []).map((w) => el('p', { class: 'warn' }, w)),
    // The 2020 calculator's laws were fitted to Transformer-XL runs on WikiText-103 far below a
    // billion parameters: a budget that asks for more is answered by extrapolation.
    ...(r.model_params > 1e9 ? [el('p', { class: 'warn extrapolation' }, `${fmtNum(r.model_params)} parameters is far beyond the models the 2020 calculator was fitted to (Transformer-XL on WikiText-103, below a billion parameters): this answer is an extrapolation. For today’s models and GPUs choose “Hours of today’s GPUs”.`)] : []),
    el('h3', {}, 'Loss against compute'), chart.box, shareLink(hash));
  const fit = hash ? await lossFit(hash) : null;
  const curve = [];
  if (fit) {
    for (let i = 0; i <= 60; i++) {
      const flos = r.flos * 10 ** (-3 + i * 0.1);
      curve.push({ x: flos, y: fit.a * (flos / 86400) ** -fit.b + fit.c });
    }
  }
  scatter(chart.canvas, [
    { label: 'loss law (loss_fit)', points: curve, line: true, radius: 0, color: '#2563eb' },
    { label: 'this plan', points: [{ x: r.flos, y: r.loss }], color: '#dc2626', radius: 7, style: 'rectRot', order: -1 },
  ], { x: { title: 'compute (FLOPs)', log: true }, y: { title: 'validation loss' } }, (c) => `${fmtNum(c.raw.x)} FLOPs → loss ${fmtNum(c.raw.y, 4)}`);
}

// Puts a stored request back into the form (shared links). The stored request holds the GPU as
// its constants; the GPU whose name gives the same request hash is the one the link used.
async function fillScaling(req, hash) {
  const f = form();
  write(f, 'law', req.law);
  if (req.law === 'chinchilla') for (const k of ['flops', 'params', 'tokens']) write(f, k, req[k] ?? '');
  else {
    const kind = ['hours', 'dollars', 'width'].find((k) => k in req);
    write(f, 'budget_kind', kind);
    budget().dataset.field = kind;
    budget().value = req[kind];
    if (req.gpu && typeof req.gpu === 'object') write(f, 'gpu_price', req.gpu.price_per_hour);
    write(f, 'amp_mode', req.amp_mode);
    write(f, 'co2_kg_per_kwh', req.co2_kg_per_kwh);
    for (const name of gpus()) {
      const same = await api('POST', '/v1/scaling', { ...req, gpu: name }).catch(() => null);
      if (same && same.hash === hash) { write(f, 'gpu', name); break; }
    }
  }
  form().dispatchEvent(new Event('change'));
}

export const scalingTab = {
  name: 'scaling',
  footer: 'Scaling budget: the 2020 scaling-law calculator (Transformer-XL on WikiText-103) and the Chinchilla law (Epoch AI’s fit of Hoffmann et al. 2022, about 20 tokens per parameter).',
  endpoints: ['scaling'],
  init() {
    buildForm();
    showPrice();
    showGhPrice();
  },
  async open(result, hash) {
    await fillScaling(result.request, hash);
    await showScaling(result.response, hash);
  },
};
