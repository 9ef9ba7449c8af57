// plan.js — the "Plan a cluster" tab: a model, the tokens to train on (a Chinchilla button), a
// deadline and a budget, the GPU types to compare with their prices editable, and GPU counts
// become a plan sweep (POST /v1/sweep {"kind":"plan"}), followed with a progress bar and a
// cancel button; its answer is a scatter of days against dollars (the Pareto front drawn, the
// deadline and budget as lines; a click on a point opens that layout in Step time), the cheapest
// plan within the deadline, the fastest within the budget, and every candidate in a table.
import { ApiError } from './api.js';
import { preset, presetChoices, presetList } from './catalog.js';
import { COLORS, chartBox, scatter } from './charts.js';
import { field, read } from './forms.js';
import { offer, openInEstimate } from './nav.js';
import { sweepPoller } from './poller.js';
import { $, el, fmtInt, fmtNum, fmtPct, fmtSeconds, prioritize, warnMark } from './util.js';

const form = () => $('#plan-form');
const DEFAULT_SYSTEMS = ['h100_sxm', 'h200', 'b200'];

async function buildSystems(presets) {
  const box = $('#pl-systems');
  const rows = await Promise.all(presets.systems.map(async (p) => {
    let sys = {};
    try { sys = await preset('systems', p.name); } catch { /* shown without a price */ }
    const check = el('input', { type: 'checkbox', id: `f-pl-sys-${p.name}`, 'data-system': p.name });
    check.checked = DEFAULT_SYSTEMS.includes(p.name);
    const price = el('input', { type: 'text', id: `f-pl-price-${p.name}`, 'data-price': p.name, inputmode: 'decimal',
      autocomplete: 'off', 'aria-label': `${p.name}: dollars per GPU-hour` });
    if (sys.price_per_gpu_hour !== undefined) price.value = sys.price_per_gpu_hour;
    return el('div', { class: 'pl-sys' }, check, el('label', { for: check.id }, p.name), price,
      el('small', { class: 'hint' }, '$/GPU-h'));
  }));
  box.replaceChildren(...rows);
}

function buildForm(presets) {
  const sc = 'pl';
  const chin = el('button', { type: 'button', class: 'ghost', id: 'pl-chinchilla' }, 'Chinchilla (≈20 per parameter)');
  chin.addEventListener('click', () => { $('#f-pl-tokens').value = 'chinchilla'; });
  $('#pl-fields').append(
    field({ scope: sc, label: 'Model', field: 'model', type: 'select', options: presetChoices(presets.models), value: 'llama3-70B' }),
    field({ scope: sc, label: 'Tokens to train on', field: 'tokens', type: 'text', value: 'chinchilla', hint: 'a number such as 1.5e13, or “chinchilla”: the compute-optimal tokens of the model’s size under the scaling tab’s fit' }),
    el('div', { class: 'fld' }, chin),
    field({ scope: sc, label: 'Global batch (tokens)', field: 'batch_tokens', type: 'text', value: 'auto',
      hint: '“auto”: DeepSeek LLM’s batch law for the run, per layout; or a number of tokens' }),
    // Each candidate runs at the first of these its GPU has: A100 presets without bfloat16 plan
    // at float16 beside H100s at bfloat16 (the API's datatype list, best first).
    field({ scope: sc, label: 'Datatype', field: 'datatype', type: 'select', value: 'bfloat16,float16',
      options: [['bfloat16,float16', 'bfloat16, else float16'], ['bfloat16', 'bfloat16 only'], ['float16', 'float16 only'], ['float32', 'float32']] }),
    field({ scope: sc, label: 'GPU counts', field: 'gpu_counts', type: 'text', value: '512, 1024, 2048, 4096', hint: 'comma-separated' }),
    field({ scope: sc, label: 'Deadline (days)', field: 'deadline_days', min: 0, placeholder: 'none' }),
    field({ scope: sc, label: 'Budget (dollars)', field: 'budget_dollars', min: 0, placeholder: 'none' }),
  );
  return buildSystems(presets);
}

function requestOf() {
  const f = form();
  const tokensText = read(f, 'tokens').trim();
  const tokens = tokensText === 'chinchilla' ? 'chinchilla' : Number(tokensText);
  // Number() takes "Infinity" and "1e400", which JSON would send as null
  if (tokens !== 'chinchilla' && !(Number.isFinite(tokens) && tokens > 0)) throw new ApiError(0, 'local', `must be a number or “chinchilla”, not “${tokensText}”`, 'tokens');
  const counts = read(f, 'gpu_counts').split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  if (!counts.length || counts.some((n) => !Number.isInteger(n) || n < 1)) throw new ApiError(0, 'local', 'give whole numbers of GPUs, separated by commas', 'gpu_counts');
  const systems = [];
  for (const c of $('#pl-systems').querySelectorAll('input[data-system]')) {
    if (!c.checked) continue;
    const name = c.dataset.system, text = $(`#f-pl-price-${name}`).value.trim();
    const s = { name };
    if (text !== '') {
      const price = Number(text);
      if (!(price >= 0)) throw new ApiError(0, 'local', `${name}: the price must be a number of dollars`, 'systems');
      s.price_per_gpu_hour = price;
    }
    systems.push(s);
  }
  const batchText = String(read(f, 'batch_tokens') ?? 'auto').trim();
  const batch = batchText === '' || batchText === 'auto' ? 'auto' : Number(batchText);
  if (batch !== 'auto' && !(Number.isInteger(batch) && batch > 0)) throw new ApiError(0, 'local', `must be “auto” or a whole number of tokens, not “${batchText}”`, 'batch_tokens');
  const req = { kind: 'plan', model: read(f, 'model'), tokens, batch_tokens: batch, gpu_counts: counts, systems,
    datatype: read(f, 'datatype').split(',') };
  for (const k of ['deadline_days', 'budget_dollars']) {
    const v = read(f, k);
    if (v !== undefined) req[k] = v;
  }
  return req;
}

const label = (c) => `${c.system} × ${fmtInt(c.num_procs)}`;
const layout = (e) => (e ? `TP ${e.tensor_par} · PP ${e.pipeline_par} · DP ${e.data_par}${e.context_par > 1 ? ` · CP ${e.context_par}` : ''}` : '—');

// Re-runs a candidate's layout as one estimate, with its whole breakdown, on Step time: the
// same system (its preset name when it is one), price, power, tokens, PUE and grid, so the bill
// there is the candidate's ideal bill here.
function openCandidate(c, st) {
  const sys = (st.spec.systems || []).find((s) => s.name === c.system);
  const training = { tokens: st.spec.tokens, gpu_hour_price: c.price_per_gpu_hour, gpu_power_kw: c.power_per_gpu_kw,
    pue: st.spec.pue, co2_kg_per_kwh: st.spec.co2_kg_per_kwh };
  return openInEstimate({ model: st.spec.model, system: sys ? sys.system : c.system, execution: c.execution, training });
}

function pick(title, c, why) {
  return el('div', { class: 'kpi' }, el('div', { class: 'kpi-label' }, title),
    el('div', { class: 'kpi-value' }, c ? label(c) : 'none'),
    el('div', { class: 'kpi-sub' }, c ? `${fmtNum(c.days)} days · $${fmtInt(Math.round(c.dollars))} · ${layout(c.execution)}` : why));
}

function drawChart(canvas, plan, st) {
  const usable = plan.candidates.filter((c) => c.fits && c.days !== null && c.dollars !== null);
  const names = [...new Set(usable.map((c) => c.system))];
  const series = names.map((n, i) => ({
    label: n, color: COLORS[i % COLORS.length], radius: 5,
    points: usable.filter((c) => c.system === n).map((c) => ({ x: c.days, y: c.dollars, c })),
  }));
  series.push({ label: 'Pareto front', line: true, color: '#111827', radius: 0, order: -1,
    points: plan.pareto.map((c) => ({ x: c.days, y: c.dollars })) });
  const xs = usable.map((c) => c.days), ys = usable.map((c) => c.dollars);
  if (plan.deadline_days) series.push({ label: 'deadline', line: true, color: '#dc2626', radius: 0,
    points: [{ x: plan.deadline_days, y: Math.min(...ys) }, { x: plan.deadline_days, y: Math.max(...ys) }] });
  if (plan.budget_dollars) series.push({ label: 'budget', line: true, color: '#f59e0b', radius: 0,
    points: [{ x: Math.min(...xs), y: plan.budget_dollars }, { x: Math.max(...xs), y: plan.budget_dollars }] });
  const chart = scatter(canvas, series, { x: { title: 'days (expected)' }, y: { title: 'dollars (expected)' } },
    (ctx) => (ctx.raw.c ? `${label(ctx.raw.c)}: ${fmtNum(ctx.raw.x)} days, $${fmtInt(Math.round(ctx.raw.y))}` : ctx.dataset.label));
  chart.options.onClick = (evt, hits) => {
    const hit = hits.find((h) => chart.data.datasets[h.datasetIndex].data[h.index].c);
    if (hit) openCandidate(chart.data.datasets[hit.datasetIndex].data[hit.index].c, st);
  };
  chart.update();
}

// GPU-hours as a planner reads them: 26.9M, 741k.
const fmtHours = (h) => (Math.abs(h) >= 1e6 ? `${+(h / 1e6).toPrecision(3)}M` : Math.abs(h) >= 1e3 ? `${+(h / 1e3).toPrecision(3)}k` : String(+h.toPrecision(3)));
// A [low, high] range; the verdicts' words as the API gives them.
const fmtRange = (r, f) => (Array.isArray(r) && r[0] !== null && r[1] !== null ? `${f(r[0])}–${f(r[1])}` : '—');
const VERDICT_CLASS = { within: 'ok', 'at risk': 'risk', misses: 'bad' };

function table(plan, st) {
  // Priority columns first (what a phone shows): the candidate, its GPU-hours with their range
  // beneath (the spread of published whole runs), its verdict, days, dollars and warnings; the rest
  // a tap away when the table is wider than its box (util.js prioritize): CO₂, energy and the
  // ideal figures first, the Step time button last.
  const head = ['system × GPUs', 'GPU-hours (range)', 'verdict', 'days', 'dollars', '⚠', 'deadline', 'budget', 'days range', 'dollars range', 'layout', 'batch', 'step', 'MFU', 'days ideal', 'dollars ideal', 'MWh', 't CO₂', ''];
  const body = plan.candidates.map((c) => {
    const open = el('button', { type: 'button', class: 'ghost open-candidate', disabled: c.execution ? undefined : 'disabled' }, 'Step time');
    open.addEventListener('click', () => openCandidate(c, st));
    const num = (v, f) => (v === null || v === undefined ? '—' : f(v));
    const usd = (d) => `$${fmtInt(Math.round(d))}`;
    const verdict = (v) => el('td', { class: `verdict-word ${VERDICT_CLASS[v] || ''}` }, v || '—');
    // The MFU-above-published warning on the MFU itself, not only behind the ⚠ mark.
    const high = (c.warnings || []).find((w) => w.code === 'mfu_above_published');
    const mfu = el('td', high ? { class: 'num mfu warn', title: high.message } : { class: 'num mfu' },
      num(c.mfu, fmtPct), high ? ' ⚠' : '');
    return el('tr', { 'data-index': c.index, class: c.rejected.length ? 'rejected' : '' },
      // the count on its own line at phone width (app.css), so the name column stays narrow
      el('td', { class: 'sticky' }, c.system, el('span', { class: 'count' }, ` × ${fmtInt(c.num_procs)}`)),
      el('td', { class: 'num gpu-hours', title: 'expected GPU-hours: the tuned stack times what published whole runs of this GPU generation paid over it; beneath, their range, the P10–P90 spread of those runs' },
        el('span', { class: 'point' }, num(c.gpu_hours, fmtHours)),
        el('span', { class: 'gpu-hours-range' }, fmtRange(c.gpu_hours_range, fmtHours))),
      el('td', { class: 'verdict' }, c.reason || 'ok'),
      el('td', { class: 'num days' }, num(c.days, fmtNum)),
      el('td', { class: 'num dollars' }, num(c.dollars, usd)),
      // last of the priority columns: a tapped-open list widens only its own cell
      el('td', { class: 'warn-cell' }, warnMark(c.warnings)),
      verdict(c.deadline_verdict), verdict(c.budget_verdict),
      el('td', { class: 'num days-range' }, fmtRange(c.days_range, fmtNum)),
      el('td', { class: 'num dollars-range' }, fmtRange(c.dollars_range, (d) => `$${fmtNum(d)}`)),
      el('td', { class: 'layout' }, layout(c.execution)),
      el('td', { class: 'num batch', title: c.batch ? `${c.batch.rule} batch, chosen: ${c.batch.chosen_by}` : '' }, num(c.batch_tokens, fmtNum)),
      el('td', {}, num(c.step_time_s, fmtSeconds)), mfu,
      el('td', {}, num(c.days_ideal, fmtNum)), el('td', { class: 'num dollars-ideal' }, num(c.dollars_ideal, usd)),
      el('td', {}, num(c.mwh, fmtNum)), el('td', {}, num(c.co2_tonnes, fmtNum)), el('td', {}, open));
  });
  return el('div', { class: 'table-wrap' }, prioritize(el('table', { class: 'grid plan' },
    el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))), el('tbody', {}, body)), [0, 1, 2, 3, 4, 5], [17, 16, 15, 14, 12, 11, 9, 8, 7, 6, 13, 10, 18]));
}

function showPlan(st) {
  const plan = st.plan;
  const out = $('#pl-results');
  const chart = chartBox('chart chart-scatter');
  out.replaceChildren(
    el('div', { class: 'kpis' },
      pick('Cheapest within the deadline', plan.cheapest_within_deadline, 'no candidate meets the deadline'),
      pick('Fastest within the budget', plan.fastest_within_budget, 'no candidate fits the budget')),
    el('p', { class: 'muted' }, 'GPU-hours, days and dollars are expected: the ideal run at the batch it would use, divided by its goodput after everything a run loses besides the step (interruptions at Llama 3’s rate, checkpoints every Young interval, restarts, evaluation, slow nodes), times what published whole runs on the same GPU generation paid over the same figure for them. Their range is those runs’ P10–P90 spread (four runs in five fall inside it); a deadline or budget inside it is at risk. Click a point to open its layout in Step time.'),
    el('h3', {}, 'Days against dollars'), chart.box,
    el('p', {}, el('a', { href: `/v1/sweep/${st.id}/results?format=csv`, download: `plan-${st.id.slice(0, 12)}.csv` }, 'Every candidate as CSV')),
    el('p', { class: 'share' }, 'Link to this plan: ', el('a', { href: `#plan=${st.id}` }, `#plan=${st.id}`)),
    table(plan, st));
  if (window.Chart) drawChart(chart.canvas, plan, st);
}

// From the Scaling budget tab: plan the tokens it found (and say which model size it chose).
function planTokens({ tokens, params }) {
  $('#f-pl-tokens').value = String(tokens);
  $('#pl-note').textContent = params ? `From Scaling budget: ${fmtNum(tokens)} tokens for a model of ${fmtNum(params)} parameters — pick the preset nearest that size.` : '';
  location.hash = '#plan';
}

let poller = null;

export const planTab = {
  name: 'plan',
  footer: 'Plan a cluster: the optimal-execution search per GPU type and count at the batch the run would use, priced with what whole runs lose, calibrated against published whole runs, with their spread as the range.',
  link: 'plan', // #plan=<id> follows a plan here
  async init() {
    await buildForm(presetList());
    poller = sweepPoller({ tab: 'pl', form, link: 'plan', noun: 'plan', requestOf,
      show: (st) => { if (st.status === 'done') showPlan(st); }, // a cancelled plan has no answer to draw
      describe: (s, p) => `Plan ${s.status} — ${fmtInt(p.done || 0)} of ${fmtInt(p.total || 0)} candidates searched` });
    offer('plan.tokens', planTokens);
  },
  follow: (id) => poller.follow(id),
};
