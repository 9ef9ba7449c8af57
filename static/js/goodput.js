// goodput.js — the Goodput tab: POST /v1/goodput/optimize with "curve": true for one allocation
// (nodes, replicas) and a fitted Pollux model; draws goodput against the total batch size of
// the 50 candidates and marks the optimum.
import { api, clearErrors, keepResultInUrl, shareLink, showError } from './api.js';
import { chartBox, scatter } from './charts.js';
import { field, read, write } from './forms.js';
import { $, el, fmtInt, fmtNum } from './util.js';

const form = () => $('#goodput-form');

// An example model (a fitted ResNet-like job from tests/data/goodput); replace with your own
// fit (POST /v1/goodput/fit turns measured step times into perf_params).
const EXAMPLE = {
  perf_params: { alpha_c: 0.1953, beta_c: 0.003192, alpha_n: 0.05971, beta_n: 0.01298, alpha_r: 0.007899, beta_r: 0.006781, gamma: 1.885 },
  grad_params: { sqr: 0.002213, var: 0.05458 },
};
const HINTS = {
  alpha_c: 'compute time per step, fixed part (s)', beta_c: 'compute time per sample (s)', alpha_n: 'sync time between nodes, fixed (s)',
  beta_n: 'sync time per extra node (s)', alpha_r: 'sync time within a node, fixed (s)', beta_r: 'sync time per extra replica (s)', gamma: 'overlap of compute and sync (1..10)',
  sqr: 'squared gradient norm', var: 'gradient variance',
};

function buildForm() {
  const perf = $('#gp-perf');
  for (const [k, v] of Object.entries(EXAMPLE.perf_params)) perf.append(field({ scope: 'gp', label: k, field: `perf_params.${k}`, value: v, hint: HINTS[k], required: true }));
  for (const [k, v] of Object.entries(EXAMPLE.grad_params)) perf.append(field({ scope: 'gp', label: k, field: `grad_params.${k}`, value: v, hint: HINTS[k], required: true }));
  $('#gp-alloc').append(
    field({ scope: 'gp', label: 'Nodes', field: 'num_nodes', value: 1, min: 1, step: 1, required: true }),
    field({ scope: 'gp', label: 'Replicas (GPUs)', field: 'num_replicas', value: 4, min: 1, step: 1, required: true }),
    field({ scope: 'gp', label: 'Initial batch size', field: 'init_batch_size', value: 32, min: 1, step: 1, required: true, hint: 'the batch the learning rate was tuned for' }),
    field({ scope: 'gp', label: 'Largest total batch', field: 'max_batch_size', value: 512, min: 1, step: 1, required: true }),
    field({ scope: 'gp', label: 'Smallest batch per GPU', field: 'atomic_bsz_range[0]', value: 16, min: 1, step: 1 }),
    field({ scope: 'gp', label: 'Largest batch per GPU', field: 'atomic_bsz_range[1]', value: 256, min: 1, step: 1, hint: 'what fits in GPU memory' }),
    field({ scope: 'gp', label: 'Allow gradient accumulation', field: 'accumulation', type: 'checkbox', value: true,
      hint: 'accumulation steps: add up the gradients of several per-GPU batches before one optimizer step, so the total batch can exceed what fits in memory at once' }),
  );
  $('#gp-perf').closest('fieldset').append(el('p', { class: 'muted note' }, 'This is an example fit. Fit your own job from measured step times with ',
    el('a', { href: '/openapi.json#/paths/~1v1~1goodput~1fit', class: 'fit-link' }, 'POST /v1/goodput/fit'), ' (Pollux’s throughput model) and paste its perf_params here.'));
  form().addEventListener('submit', (e) => { e.preventDefault(); submit(); });
}

function requestOf() {
  const f = form(), n = (k) => read(f, k);
  const req = { perf_params: {}, grad_params: {}, curve: true };
  for (const k of Object.keys(EXAMPLE.perf_params)) req.perf_params[k] = n(`perf_params.${k}`);
  for (const k of Object.keys(EXAMPLE.grad_params)) req.grad_params[k] = n(`grad_params.${k}`);
  for (const k of ['init_batch_size', 'num_nodes', 'num_replicas', 'max_batch_size']) req[k] = n(k);
  req.atomic_bsz_range = [n('atomic_bsz_range[0]') ?? null, n('atomic_bsz_range[1]') ?? null];
  req.accumulation = n('accumulation');
  return req;
}

async function submit() {
  clearErrors(form());
  try {
    const from = location.hash;
    const res = await api('POST', '/v1/goodput/optimize', requestOf());
    showGoodput(res.data, res.hash);
    keepResultInUrl(res.hash, from);
  } catch (e) {
    showError(form(), e);
  }
}

const kpi = (label, value, sub) => el('div', { class: 'kpi' }, el('div', { class: 'kpi-label' }, label), el('div', { class: 'kpi-value' }, value), sub ? el('div', { class: 'kpi-sub' }, sub) : null);

function showGoodput(r, hash) {
  const out = $('#gp-results');
  out.hidden = false; // before drawing: a chart in a hidden box has no size
  const chart = chartBox('chart chart-scatter');
  out.replaceChildren(
    el('div', { class: 'kpis' },
      kpi('Best goodput', `${fmtNum(r.goodput_samples_per_s)} samples/s`, 'useful progress per second'),
      kpi('Total batch', fmtInt(r.batch_size)),
      kpi('Batch per GPU', fmtInt(r.atomic_bsz)),
      kpi('Accumulation steps', fmtInt(r.accum_steps))),
    el('p', { class: 'warn', hidden: r.goodput_samples_per_s !== 0 }, 'No candidate had a per-GPU batch inside the allowed range.'),
    el('p', { class: 'muted note' }, `Accumulation steps: ${fmtInt(r.accum_steps)} extra per-GPU batches whose gradients are added up before each optimizer step (total batch = GPUs × per-GPU batch × (accumulation steps + 1)). ` +
      'When the per-GPU range and the largest total batch leave a single feasible candidate, the curve is that single point.'),
    el('h3', {}, 'Goodput against total batch size'), chart.box, shareLink(hash));
  const curve = (r.curve || []).map((c) => ({ x: c.batch_size, y: c.goodput_samples_per_s, c }));
  scatter(chart.canvas, [
    { label: 'candidates', points: curve, line: true, radius: 2, color: '#2563eb' },
    { label: 'optimum', points: [{ x: r.batch_size, y: r.goodput_samples_per_s, c: r }], color: '#dc2626', radius: 7, style: 'rectRot', order: -1 },
  ], { x: { title: 'total batch size (samples)', log: true }, y: { title: 'goodput (samples/s)' } },
  (c) => `batch ${fmtInt(c.raw.x)} (${c.raw.c.atomic_bsz}/GPU × ${c.raw.c.accum_steps + 1}): ${fmtNum(c.raw.y)} samples/s`);
}

function fillGoodput(req) {
  const f = form();
  for (const [k, v] of Object.entries(req.perf_params || {})) write(f, `perf_params.${k}`, v);
  for (const [k, v] of Object.entries(req.grad_params || {})) write(f, `grad_params.${k}`, v);
  for (const k of ['init_batch_size', 'num_nodes', 'num_replicas', 'max_batch_size', 'accumulation']) if (k in req) write(f, k, req[k]);
  (req.atomic_bsz_range || []).forEach((v, i) => write(f, `atomic_bsz_range[${i}]`, v ?? ''));
}

export const goodputTab = {
  name: 'goodput',
  footer: 'Goodput: the Pollux model of throughput × statistical efficiency (Qiao et al. 2021).',
  endpoints: ['goodput_optimize'],
  init: buildForm,
  open(result, hash) {
    fillGoodput(result.request);
    showGoodput(result.response, hash);
  },
};
