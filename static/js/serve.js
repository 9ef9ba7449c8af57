// serve.js — the "Serve" tab: a model, GPU types with their prices, a traffic level and latency
// targets become a serving plan (POST /v1/sweep {"kind":"serving_plan"}), followed with a
// progress bar and a cancel button; its answer is each GPU type's cheapest fleet (layout,
// replicas, aggregated or disaggregated, $/h, $/Mtok, TTFT p99, TPOT) and the Pareto front of
// dollars against TPOT. One configuration — a row of the plan, or one set by hand — is estimated
// with POST /v1/inference and drawn as its curve of tokens/s per GPU against tokens/s per user,
// with its TTFT, TPOT, KV cache and what bounds its decode step.
import { ApiError, api, clearErrors, keepResultInUrl, shareLink, showError } from './api.js';
import { choicesOf, preset, presetChoices, presetList } from './catalog.js';
import { COLORS, chartBox, scatter } from './charts.js';
import { field, read, write } from './forms.js';
import { sweepPoller } from './poller.js';
import { $, el, fmtBytes, fmtInt, fmtNum, fmtSeconds } from './util.js';

const form = () => $('#serve-form');
const oneForm = () => $('#serve-one-form');
const DEFAULT_SYSTEMS = ['h100_sxm', 'h200', 'b200'];
const FORMAT_LABELS = { bf16: 'BF16', fp8: 'FP8', fp4: 'FP4 (NVFP4)', int4: 'INT4 (weight-only)',
  mxfp4: 'MXFP4 experts (gpt-oss)' };

async function buildSystems(systems) {
  const rows = await Promise.all(systems.map(async (p) => {
    let sys = {};
    try { sys = await preset('systems', p.name); } catch { /* shown without a price */ }
    const check = el('input', { type: 'checkbox', id: `f-sv-sys-${p.name}`, 'data-system': p.name });
    check.checked = DEFAULT_SYSTEMS.includes(p.name);
    const price = el('input', { type: 'text', id: `f-sv-price-${p.name}`, 'data-price': p.name, inputmode: 'decimal',
      autocomplete: 'off', 'aria-label': `${p.name}: dollars per GPU-hour` });
    if (sys.price_per_gpu_hour !== undefined) price.value = sys.price_per_gpu_hour;
    return el('div', { class: 'pl-sys' }, check, el('label', { for: check.id }, p.name), price,
      el('small', { class: 'hint' }, '$/GPU-h'));
  }));
  $('#sv-systems').replaceChildren(...rows);
}

function buildForms(presets) {
  const models = presetChoices(presets.models);
  const engines = choicesOf('serving', 'engine', { trtllm: 'TensorRT-LLM', vllm: 'vLLM', sglang: 'SGLang' });
  $('#sv-fields').append(
    field({ scope: 'sv', label: 'Model', field: 'model', type: 'select', options: models, value: 'llama3-70B' }),
    field({ scope: 'sv', label: 'Engine', field: 'engine', type: 'select', options: engines, value: 'vllm' }),
    field({ scope: 'sv', label: 'Requests per second', field: 'traffic.requests_per_s', value: 20, min: 0, required: true, hint: 'the whole fleet' }),
    field({ scope: 'sv', label: 'Prompt tokens', field: 'traffic.input_tokens', value: 2000, min: 1, required: true }),
    field({ scope: 'sv', label: 'Output tokens', field: 'traffic.output_tokens', value: 200, min: 1, required: true }),
    field({ scope: 'sv', label: 'TTFT p99 (ms)', field: 'slo.ttft_ms_p99', value: 2000, min: 0, placeholder: 'none', hint: 'time to first token' }),
    field({ scope: 'sv', label: 'TPOT (ms)', field: 'slo.tpot_ms', value: 50, min: 0, placeholder: 'none', hint: 'time per output token' }),
  );
  const dtypes = choicesOf('serving', 'weights_datatype', FORMAT_LABELS).filter(([v]) => v !== 'nvfp4');
  $('#sv-formats').replaceChildren(...dtypes.map(([v, label]) => {
    const check = el('input', { type: 'checkbox', id: `f-sv-fmt-${v}`, 'data-format': v });
    return el('div', { class: 'pl-sys' }, check, el('label', { for: check.id }, label));
  }));
  $('#sv-one-fields').append(
    field({ scope: 'svo', label: 'Model', field: 'model', type: 'select', options: models, value: 'llama3-70B' }),
    field({ scope: 'svo', label: 'GPU', field: 'system', type: 'select', options: presetChoices(presets.systems), value: 'h100_sxm' }),
    field({ scope: 'svo', label: 'Tensor parallel', field: 'serving.tensor_par', value: 4, min: 1, step: 1, required: true }),
    field({ scope: 'svo', label: 'Weights', field: 'serving.weights_datatype', type: 'select',
      options: [['', 'as shipped'], ...dtypes], value: '', hint: 'the model’s checkpoint: BF16 unless it ships another' }),
    field({ scope: 'svo', label: 'Prompt tokens', field: 'serving.input_tokens', value: 2000, min: 1, required: true }),
    field({ scope: 'svo', label: 'Output tokens', field: 'serving.output_tokens', value: 200, min: 1, required: true }),
    field({ scope: 'svo', label: 'Requests per second', field: 'serving.requests_per_s', value: 5, min: 0, placeholder: 'as many as fit', hint: 'per replica' }),
    field({ scope: 'svo', label: 'Engine', field: 'serving.engine', type: 'select', options: engines, value: 'vllm' }),
  );
  oneForm().addEventListener('submit', (e) => {
    e.preventDefault();
    // a field the page refuses (not a number, below its minimum) is shown beside it, as the API's
    let req;
    try { req = oneRequest(); } catch (err) { clearErrors(oneForm()); showError(oneForm(), err); return; }
    estimate(req);
  });
  return buildSystems(presets.systems);
}

function planRequest() {
  const f = form();
  const req = { kind: 'serving_plan', model: read(f, 'model'), engine: read(f, 'engine'),
    traffic: { requests_per_s: read(f, 'traffic.requests_per_s'), input_tokens: read(f, 'traffic.input_tokens'),
      output_tokens: read(f, 'traffic.output_tokens') }, slo: {}, systems: [] };
  for (const k of ['ttft_ms_p99', 'tpot_ms']) {
    const v = read(f, `slo.${k}`);
    if (v !== undefined && v > 0) req.slo[k] = v;
  }
  for (const c of $('#sv-systems').querySelectorAll('input[data-system]')) {
    if (!c.checked) continue;
    const name = c.dataset.system, text = $(`#f-sv-price-${name}`).value.trim();
    const s = { name };
    if (text !== '') {
      const price = Number(text);
      if (!(price >= 0)) throw new ApiError(0, 'local', `${name}: the price must be a number of dollars`, 'systems');
      s.price_per_gpu_hour = price;
    }
    req.systems.push(s);
  }
  const formats = [...$('#sv-formats').querySelectorAll('input[data-format]:checked')].map((c) => c.dataset.format);
  if (formats.length) req.weights_datatypes = formats;
  return req;
}

function oneRequest() {
  const f = oneForm(), n = (k) => read(f, k);
  const serving = {};
  for (const k of ['tensor_par', 'weights_datatype', 'input_tokens', 'output_tokens', 'engine']) serving[k] = n(`serving.${k}`);
  if (serving.weights_datatype === '') delete serving.weights_datatype; // the model's checkpoint_weights
  const rate = n('serving.requests_per_s');
  if (rate !== undefined && rate > 0) serving.requests_per_s = rate;
  return { model: n('model'), system: n('system'), serving };
}

const layoutText = (c) => {
  const l = c.layout, parts = [`TP ${l.tensor_par}`];
  if (l.pipeline_par > 1) parts.push(`PP ${l.pipeline_par}`);
  if (l.attention_data_par > 1) parts.push(`DP ${l.attention_data_par}`);
  if (l.expert_par > 1) parts.push(`EP ${l.expert_par}`);
  return `${parts.join(' · ')} ${c.weights_datatype}`;
};
const fleetText = (c) => (c.mode === 'disaggregated'
  ? `${fmtInt(c.replicas)} decode + ${fmtInt(c.prefill_replicas)} prefill` : `${fmtInt(c.replicas)} replicas`);
const ms = (s) => (Number.isFinite(s) ? `${fmtNum(s * 1e3)} ms` : '—');

function bestTable(plan) {
  const head = ['GPU', 'mode', 'layout', 'fleet', 'GPUs', '$/h', '$/M out', 'TTFT p99', 'TPOT', ''];
  const rows = plan.systems.map((s) => {
    const c = s.best;
    if (!c) return el('tr', { class: 'rejected' }, el('td', {}, s.name), el('td', { colspan: 9 }, `no layout meets the targets (${s.candidates} tried)${s.hint ? `: ${s.hint}` : ''}`));
    const open = el('button', { type: 'button', class: 'ghost' }, 'Curve');
    open.addEventListener('click', () => { fillOne({ ...c.request, model: read(form(), 'model'), system: s.name }); estimate(c.request); });
    return el('tr', { 'data-system': s.name }, el('td', {}, s.name), el('td', {}, c.mode), el('td', { class: 'layout' }, layoutText(c)),
      el('td', {}, fleetText(c)), el('td', {}, fmtInt(c.gpus)), el('td', {}, `$${fmtNum(c.dollars_per_hour)}`),
      el('td', {}, `$${fmtNum(c.dollars_per_million_output_tokens)}`), el('td', {}, ms(c.ttft_p99_s)), el('td', {}, ms(c.tpot_s)),
      el('td', {}, open));
  });
  return el('div', { class: 'table-wrap' }, el('table', { class: 'grid serve' },
    el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))), el('tbody', {}, rows)));
}

function drawFront(canvas, plan) {
  const meets = plan.candidates.filter((c) => c.meets);
  const names = [...new Set(meets.map((c) => c.system))];
  const series = names.map((n, i) => ({ label: n, color: COLORS[i % COLORS.length], radius: 4,
    points: meets.filter((c) => c.system === n).map((c) => ({ x: c.tpot_s * 1e3, y: c.dollars_per_hour, c })) }));
  series.push({ label: 'Pareto front', line: true, color: '#111827', radius: 0, order: -1,
    points: plan.pareto.map((i) => plan.candidates[i]).map((c) => ({ x: c.tpot_s * 1e3, y: c.dollars_per_hour })) });
  scatter(canvas, series, { x: { title: 'TPOT (ms)' }, y: { title: 'dollars per hour (fleet)' } },
    (ctx) => (ctx.raw.c ? `${ctx.raw.c.system} ${layoutText(ctx.raw.c)}, ${fleetText(ctx.raw.c)}: ${fmtNum(ctx.raw.x)} ms, $${fmtNum(ctx.raw.y)}/h` : ctx.dataset.label));
}

function showPlan(st) {
  const plan = st.serving_plan;
  const chart = chartBox('chart chart-scatter');
  const cheapest = plan.cheapest === null ? null : plan.candidates[plan.cheapest];
  $('#sv-results').replaceChildren(
    el('div', { class: 'kpis' }, kpi('Cheapest fleet', cheapest ? `${cheapest.system}` : 'none',
      cheapest ? `${layoutText(cheapest)} · ${fleetText(cheapest)} · $${fmtNum(cheapest.dollars_per_hour)}/h` : 'no layout meets the targets')),
    el('p', { class: 'muted' }, 'Each GPU type’s cheapest fleet meeting the targets: the fewest replicas of each layout (aggregated, or prefill and decode apart) at the traffic’s rate, with the queue for prompts counted. “Curve” estimates one replica with POST /v1/inference.'),
    bestTable(plan),
    el('h3', {}, 'Dollars against TPOT'), chart.box,
    el('p', {}, el('a', { href: `/v1/sweep/${st.id}/results?format=csv`, download: `serving-plan-${st.id.slice(0, 12)}.csv` }, 'Every candidate as CSV')),
    el('p', { class: 'share' }, 'Link to this plan: ', el('a', { href: `#serve=${st.id}` }, `#serve=${st.id}`)));
  if (window.Chart) drawFront(chart.canvas, plan);
}

const kpi = (label, value, sub) => el('div', { class: 'kpi' }, el('div', { class: 'kpi-label' }, label),
  el('div', { class: 'kpi-value' }, value), sub ? el('div', { class: 'kpi-sub' }, sub) : null);

function fillOne(req) {
  const f = oneForm(), s = req.serving || {};
  write(f, 'model', typeof req.model === 'string' ? req.model : read(f, 'model'));
  if (typeof req.system === 'string') write(f, 'system', req.system);
  const layout = s.disaggregated ? s.disaggregated.decode : s;
  write(f, 'serving.tensor_par', layout.tensor_par ?? 1);
  write(f, 'serving.weights_datatype', s.weights_datatype ?? '');
  if (s.engine) write(f, 'serving.engine', s.engine);
  for (const k of ['input_tokens', 'output_tokens']) if (s[k] !== undefined) write(f, `serving.${k}`, typeof s[k] === 'object' ? s[k].mean : s[k]);
  write(f, 'serving.requests_per_s', s.requests_per_s ?? '');
}

async function estimate(req) {
  clearErrors(oneForm());
  try {
    const from = location.hash;
    const res = await api('POST', '/v1/inference', req);
    showOne(res.data, res.hash);
    keepResultInUrl(res.hash, from);
  } catch (e) {
    showError(oneForm(), e);
  }
}

function showOne(r, hash) {
  const out = $('#sv-one-results');
  out.hidden = false; // before drawing: a chart in a hidden box has no size
  if (!r.fits_memory) {
    out.replaceChildren(el('p', { class: 'warn' }, `Does not fit: ${fmtBytes(r.memory.weights_bytes)} of ${FORMAT_LABELS[r.weights_datatype]} weights per GPU, room for ${fmtInt(r.max_concurrency)} requests.`));
    return;
  }
  const chart = chartBox('chart chart-scatter');
  const warn = (r.warnings || []).map((w) => el('p', { class: 'warn', title: w.code }, w.message));
  out.replaceChildren(
    el('div', { class: 'kpis' },
      kpi('Output tokens/s per GPU', fmtNum(r.output_tokens_per_s_per_gpu), `${fmtNum(r.output_tokens_per_s_per_user)} per user`),
      kpi('TTFT', ms(r.ttft_s), `p99 ${ms(r.ttft_p99_s)}`),
      kpi('TPOT', ms(r.tpot_s), `decode is ${r.decode.bound}-bound`),
      kpi('Requests in flight', fmtNum(r.concurrency), `of ${fmtInt(r.max_concurrency)} that fit`),
      kpi('KV cache per token', fmtBytes(r.kv_cache_bytes_per_token), `${r.engine.decode_attention_kernel} decode attention`),
      kpi('$ per million tokens', r.dollars_per_million_tokens ? `$${fmtNum(r.dollars_per_million_tokens.output)} out` : '—',
        r.dollars_per_million_tokens ? `$${fmtNum(r.dollars_per_million_tokens.input)} in` : 'no price')),
    ...warn,
    el('h3', {}, 'Tokens/s per GPU against tokens/s per user'), chart.box,
    el('p', { class: 'muted' }, `Weights ${FORMAT_LABELS[r.weights_datatype]}, KV cache ${FORMAT_LABELS[r.kv_datatype]}. Each point one concurrency, 1 to ${fmtInt(r.max_concurrency)} requests in flight; the decode step takes ${fmtSeconds(r.decode.time_s)} at the operating point.`),
    shareLink(hash));
  const pts = (r.curve || []).map((c) => ({ x: c.output_tokens_per_s_per_user, y: c.output_tokens_per_s_per_gpu, c }));
  if (window.Chart) scatter(chart.canvas, [
    { label: 'concurrency 1 … max', points: pts, line: true, radius: 3, color: '#2563eb' },
    { label: 'this load', points: [{ x: r.output_tokens_per_s_per_user, y: r.output_tokens_per_s_per_gpu }], color: '#dc2626', radius: 7, style: 'rectRot', order: -1 },
  ], { x: { title: 'output tokens/s per user' }, y: { title: 'output tokens/s per GPU' } },
  (c) => (c.raw.c ? `${fmtInt(c.raw.c.concurrency)} in flight: ${fmtNum(c.raw.y)} tokens/s/GPU, ${fmtNum(c.raw.x)} per user` : c.dataset.label));
}

let poller = null;

export const serveTab = {
  name: 'serve',
  footer: 'Serve: prefill and decode step times, the KV cache and continuous batching (doc/serving.md), each engine’s documented scheduler.',
  endpoints: ['inference'],
  link: 'serve', // #serve=<id> follows a serving plan here
  async init() {
    await buildForms(presetList());
    poller = sweepPoller({ tab: 'sv', form, link: 'serve', noun: 'plan', requestOf: planRequest,
      show: (st) => { if (st.status === 'done') showPlan(st); },
      describe: (s, p) => `Serving plan ${s.status} — ${fmtInt(p.done || 0)} of ${fmtInt(p.total || 0)} layouts` });
  },
  open(result, hash) {
    fillOne(result.request);
    showOne(result.response, hash);
  },
  follow: (id) => poller.follow(id),
};
