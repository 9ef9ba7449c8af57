// estimate_view.js — the Step time tab's answer: step time and sample rate first, then where
// the step time goes (a stacked bar), the experts' share, memory per tier against capacity and
// per pipeline stage, data-parallel traffic, the whole run's bill and every statistic. Pure
// drawing: it reads a request and its response and writes #est-results.
import { shareLink } from './api.js';
import { cachedPreset } from './catalog.js';
import { chartBox, stackedTime } from './charts.js';
import { openInEstimate } from './nav.js';
import { $, el, fmtBytes, fmtInt, fmtNum, fmtPct, fmtSeconds, fmtStat, statMeaning } from './util.js';

const BREAKDOWN = [
  ['forward', 'Forward'], ['backward', 'Backward'], ['optimizer', 'Optimizer'],
  ['recompute', 'Recompute'], ['recommunication', 'Recompute comm.'], ['bubble', 'Pipeline bubble'],
  ['tensor_parallel_comm', 'TP comm. (exposed)'], ['pipeline_parallel_comm', 'PP comm. (exposed)'],
  ['data_parallel_comm', 'DP comm. (exposed)'], ['context_parallel_comm', 'CP comm. (exposed)'],
  ['expert_parallel_comm', 'Expert-parallel all-to-all (exposed)'], ['forward_offload', 'Offload, forward (exposed)'],
  ['backward_offload', 'Offload, backward (exposed)'], ['host_launch', 'Waiting on the host (kernel launches)'],
];

function describe(req, resp) {
  const e = req.execution, s = resp.summary;
  const name = (v, kind) => (typeof v === 'string' ? v : `custom ${kind}`);
  return `${name(req.model, 'model')} on ${fmtInt(e.num_procs ?? s.num_procs)} × ${name(req.system, 'system')} · ` +
    `TP ${e.tensor_par}${(e.context_par ?? 1) > 1 ? ` × CP ${e.context_par}` : ''} × PP ${e.pipeline_par} × DP ${e.data_par}` +
    `${(e.expert_par ?? 1) > 1 ? ` · EP ${e.expert_par}` : ''}${(e.expert_tensor_par ?? 1) > 1 ? ` × ETP ${e.expert_tensor_par}` : ''} · batch ${fmtInt(e.batch_size)} ` +
    `(${fmtInt(s.num_microbatches)} microbatches of ${e.microbatch_size} per replica)`;
}

function kpi(label, value, sub) {
  return el('div', { class: 'kpi' }, el('div', { class: 'kpi-label' }, label), el('div', { class: 'kpi-value' }, value), sub ? el('div', { class: 'kpi-sub' }, sub) : null);
}

function memBar(tier, used, cap) {
  const over = used > cap;
  const pct = cap > 0 ? Math.min(100, (100 * used) / cap) : 100;
  return el('div', { class: `mem${over ? ' over' : ''}`, 'data-tier': tier },
    el('div', { class: 'mem-head' }, el('span', {}, `Tier ${tier} (${tier === 1 ? 'GPU memory' : 'offload memory'})`),
      el('span', {}, `${fmtBytes(used)} of ${fmtBytes(cap)} per GPU${over ? ' — does not fit' : ''}`)),
    el('div', { class: 'mem-track' }, el('div', { class: 'mem-fill', style: `width:${pct.toFixed(2)}%` })));
}

// Why the answer may look better than a real run would: next to the headline figures, each with
// its code (the API's warnings, with their sources).
function warningsBlock(warnings) {
  if (!warnings || !warnings.length) return el('span');
  return el('ul', { class: 'warnings', 'aria-label': 'warnings' },
    warnings.map((w) => el('li', { class: 'warn', 'data-code': w.code }, w.message)));
}

// Renders a result (fresh, or reopened from a link).
export function showEstimate(req, resp, hash) {
  const out = $('#est-results');
  const s = resp.summary;
  const run = resp.run;
  const parts = BREAKDOWN.map(([k, label]) => ({ label, value: s.time_breakdown_s[k] || 0 })).filter((p) => p.value > 0);
  const chart = chartBox('chart chart-bar');
  out.hidden = false; // before drawing: a chart in a hidden box has no size
  $('#est-placeholder').hidden = true;
  out.replaceChildren(
    el('p', { class: 'describe' }, describe(req, resp)),
    el('div', { class: 'kpis' },
      kpi('Step time', fmtSeconds(s.step_time_s), 'one optimizer step of the global batch'),
      kpi('Sample rate', `${fmtNum(s.sample_rate)} samples/s`, `${fmtNum(s.tokens_per_s)} tokens/s`),
      kpi('MFU', fmtPct(s.mfu ?? s.total_efficiency), `model FLOPs utilization: the model’s FLOPs (recompute not counted) over the GPUs’ peak · compute ${fmtPct(s.compute_efficiency)} · system ${fmtPct(s.system_efficiency)}`),
      kpi('Memory', resp.fits_memory ? 'fits' : 'does not fit', `${fmtBytes(s.mem_tier1_bytes)} per GPU in tier 1`)),
    warningsBlock(resp.warnings),
    modelKpis(s),
    el('h3', {}, 'Where the step time goes'),
    chart.box,
    expertsLine(s, req),
    s.outer_layers_time_s > 0 ? el('p', { class: 'muted outer' }, `Embedding, output layer and loss (first and last pipeline stage): ${fmtSeconds(s.outer_layers_time_s)} per step.`) : el('span'),
    el('h3', {}, 'Memory per GPU against capacity'),
    memBar(1, s.mem_tier1_bytes, s.mem_tier1_capacity_bytes),
    memBar(2, s.mem_tier2_bytes, s.mem_tier2_capacity_bytes),
    fitBlock(req, resp),
    stageMemory(s.memory, s.mem_tier1_capacity_bytes, s.mem_tier2_bytes > 0),
    dataParallel(s.data_parallel, req.execution),
    ...(resp.violations || []).map((v) => el('p', { class: 'warn' }, v.message)),
    run ? runBlock(run) : el('p', { class: 'muted' }, 'Give training tokens under “Whole training run” to see days, GPU-hours, dollars, energy and CO₂.'),
    shareLink(hash),
    statsTable(resp.stats),
  );
  out.querySelector('.kpis .kpi:last-child').classList.add(resp.fits_memory ? 'ok' : 'bad');
  if (window.Chart) stackedTime(chart.canvas, parts, s.step_time_s);
}

// The experts' share of the step: their grouped GEMMs (inside forward and backward) and where
// the all-to-all ran.
function expertsLine(s, req) {
  if (!(s.routed_expert_compute_s > 0) && s.expert_parallel_tier == null) return el('span');
  const sys = typeof req.system === 'object' ? req.system : cachedPreset('systems', req.system) || {};
  const tier = s.expert_parallel_tier;
  const net = tier != null ? (sys.networks || [])[tier] : null;
  const a2a = s.time_breakdown_s?.expert_parallel_comm || 0;
  return el('p', { class: 'muted experts-line' },
    el('span', { class: 'routed' }, `Routed experts’ matrix multiplies: ${fmtSeconds(s.routed_expert_compute_s || 0)} per step (inside forward and backward). `),
    tier != null
      ? el('span', { class: 'a2a-tier', 'data-tier': tier }, `Token all-to-all on network tier ${tier}${net ? ` (${fmtInt(net.size)} GPUs, ${net.bandwidth} GB/s)` : ''}: ${fmtSeconds(a2a)} exposed.`)
      : el('span', { class: 'a2a-tier' }, 'No expert parallelism: every GPU holds every expert, no all-to-all.'));
}

// The model's size and work, and what each GPU does with it.
function modelKpis(s) {
  if (s.parameters_total === undefined) return el('span');
  const k = (key, label, value, sub) => { const n = kpi(label, value, sub); n.dataset.kpi = key; return n; };
  return el('div', { class: 'kpis small model-kpis' },
    k('parameters', 'Parameters', fmtInt(s.parameters_total), `${fmtNum(s.parameters_total / 1e9)} billion, embeddings included`),
    s.parameters_active !== undefined && s.parameters_active !== s.parameters_total
      ? k('parameters_active', 'Active parameters (per token)', fmtInt(s.parameters_active), `${fmtNum(s.parameters_active / 1e9)} billion: the experts a token is routed to, shared experts and the rest`)
      : null,
    s.parameters_mtp > 0
      ? k('parameters_mtp', 'Of which MTP', fmtInt(s.parameters_mtp), `the multi-token-prediction depths: ${fmtNum((s.parameters_total - s.parameters_mtp) / 1e9)} billion without them, as published`)
      : null,
    s.parameters_trainable !== undefined && s.parameters_trainable !== s.parameters_total
      ? k('parameters_trainable', 'Trained (fine-tuning)', fmtInt(s.parameters_trainable), `the adapters: ${fmtPct(s.parameters_trainable / s.parameters_total)} of the model; the rest is frozen (no gradients, no optimizer state)`)
      : null,
    k('memory_per_gpu', 'Memory per GPU', fmtBytes(s.mem_tier1_bytes), `tier 1 (device)${s.mem_tier2_bytes > 0 ? `, ${fmtBytes(s.mem_tier2_bytes)} in tier 2 (host)` : ''}`),
    k('flops_per_token', 'Model FLOPs per token', `${fmtNum(s.model_flops_per_token / 1e9)} GFLOP`, 'forward and backward, attention included'),
    k('tflops_per_proc', 'TFLOP/s per GPU', fmtNum(s.tflops_per_proc), 'model FLOPs per second on each GPU'),
    k('tokens_per_proc', 'Tokens/s per GPU', fmtNum(s.tokens_per_s_per_proc), `${fmtNum(s.tokens_per_s)} tokens/s in all`));
}

// A layout that does not fit: the cheapest change that makes it fit (the API's
// cheapest_fitting_change), what it costs in step time, and a button that estimates it.
function fitBlock(req, resp) {
  const c = resp.cheapest_fitting_change;
  if (resp.fits_memory || !c) {
    return resp.fits_memory ? el('span')
      : el('p', { class: 'warn fit-change none' }, 'Nothing Fathom tries (selective recompute, FP8 storage, 16-bit moments, more sharding, a smaller microbatch, full recompute) makes this layout fit: use more GPUs or more pipeline stages.');
  }
  const value = (v) => (v === null ? 'left out' : Array.isArray(v) ? v.join(', ') : String(v));
  const changes = Object.entries(c.changes).map(([k, v]) => el('li', { 'data-field': k }, el('code', {}, k), ` = ${value(v)}`));
  const pct = c.step_time_change_pct;
  const use = el('button', { type: 'button', class: 'use-fit' }, 'Estimate with this change');
  use.addEventListener('click', () => openInEstimate({ ...req, execution: c.execution }));
  return el('div', { class: 'fit-change' },
    el('h3', {}, 'The cheapest change that fits'),
    el('ul', {}, changes),
    el('p', { class: 'fit-cost' }, `Step time ${fmtSeconds(c.step_time_s)} (${pct >= 0 ? '+' : ''}${fmtNum(pct)}% against this layout), ${fmtBytes(c.mem_tier1_bytes)} per GPU in tier 1.`),
    use);
}

// Memory per GPU on the first and the last pipeline stage, by kind; the heaviest one marked.
const MEM_ROWS = [['weights', 'weights'], ['gradients', 'gradients'], ['optimizer', 'optimizer state'], ['activations', 'activations'], ['buffers', 'buffers'], ['moe_buffers', 'dispatcher buffers'], ['reserve', 'reserve: CUDA context, NCCL, workspaces, fragmentation'], ['total', 'total']];
const reserveOf = (st) => (st.reserve ? st.reserve.cuda_context + st.reserve.nccl + st.reserve.workspaces + st.reserve.fragmentation : 0);
// The headers wrap (the stage on one line, its blocks and microbatches under it) and the last row
// is each stage's verdict against tier-1 capacity, so a phone sees every stage's total and verdict.
function stageMemory(memory, capacity, offload) {
  if (!memory || !memory.stages) return el('span');
  // one column per rank: without pipeline parallelism the first stage is the last
  const mem = { ...memory, stages: memory.stages.filter((st, i, all) => st.rank === undefined || all.findIndex((o) => o.rank === st.rank) === i) };
  const heavy = (st) => st.stage === mem.heaviest_stage || (mem.stages.length === 1 && memory.stages.some((o) => o.stage === mem.heaviest_stage));
  const head = el('tr', {}, el('th', {}, 'per GPU'), ...mem.stages.map((st) => el('th', { class: `num${heavy(st) ? ' heaviest' : ''}`, 'data-stage': st.stage },
    `${st.stage} stage${heavy(st) ? ' — heaviest' : ''}`,
    el('small', { class: 'stage-detail' }, `${st.rank !== undefined ? `rank ${st.rank}, ` : ''}${fmtInt(st.blocks)} blocks${st.microbatches_in_flight > 0 ? `, ${fmtNum(st.microbatches_in_flight)} microbatches in flight` : ''}`))));
  const val = (st, k) => (k === 'reserve' ? reserveOf(st) : st[k] || 0);
  const rows = MEM_ROWS.filter(([k]) => k === 'total' || mem.stages.some((st) => val(st, k) > 0)).map(([k, label]) => el('tr', { class: k === 'total' ? 'total' : '', 'data-row': k }, el('td', {}, label),
    ...mem.stages.map((st) => el('td', { class: `num${heavy(st) ? ' heaviest' : ''}`, title: `${fmtInt(val(st, k))} bytes` }, fmtBytes(val(st, k))))));
  // With experts: the weights, gradients and optimizer state split into the routed experts' and the rest.
  const part = (x) => (x ? (x.weights || 0) + (x.gradients || 0) + (x.optimizer || 0) : 0);
  if (mem.stages.some((st) => part(st.expert) > 0)) {
    for (const [k, label] of [['expert', 'weights, gradients, optimizer: routed experts'], ['non_expert', 'weights, gradients, optimizer: the rest']]) {
      rows.splice(rows.length - 1, 0, el('tr', { class: `sub-row ${k}`, 'data-part': k }, el('td', {}, label),
        ...mem.stages.map((st) => el('td', { class: `num${heavy(st) ? ' heaviest' : ''}`,
          title: `weights ${fmtBytes(st[k].weights)}, gradients ${fmtBytes(st[k].gradients)}, optimizer state ${fmtBytes(st[k].optimizer)} (${fmtInt(part(st[k]))} bytes)` }, fmtBytes(part(st[k]))))));
    }
  }
  if (capacity > 0) {
    rows.push(el('tr', { class: 'verdict-row', 'data-row': 'verdict' }, el('td', {}, `against ${fmtBytes(capacity)} of tier 1${offload ? ', before offloading' : ''}`),
      ...mem.stages.map((st) => {
        const over = st.total > capacity;
        return el('td', { class: `num verdict ${over ? 'bad' : 'ok'}${heavy(st) ? ' heaviest' : ''}`, title: over ? 'does not fit' : 'fits' },
          over ? `✗ ${fmtBytes(st.total - capacity)} over` : `✓ fits, ${fmtPct(st.total / capacity)}`);
      })));
  }
  const b = mem.bytes_per_parameter || {};
  return el('div', { class: 'stage-mem' }, el('h3', {}, 'Memory by pipeline stage'),
    el('div', { class: 'table-wrap' }, el('table', { class: 'grid stage-mem-table' }, el('thead', {}, head), el('tbody', {}, rows))),
    el('p', { class: 'muted bpp' }, `Bytes per parameter on a GPU: weights ${fmtNum(b.weights)}, gradients ${fmtNum(b.gradients)}, optimizer state ${fmtNum(b.optimizer)} (after sharding and FP8 copies).`));
}

// How the data-parallel traffic runs: reductions and gathers bucket by bucket, what is exposed.
function dataParallel(dp, e) {
  if (!dp || !(e.data_par > 1 || (e.context_par ?? 1) > 1)) return el('span');
  const row = (label, v, what) => el('tr', {}, el('td', {}, label), el('td', { class: 'num' }, fmtSeconds(v)), el('td', { class: 'meaning' }, what));
  return el('details', { class: 'dp-detail' }, el('summary', {}, `Data-parallel communication: ${fmtSeconds(dp.exposed_s)} exposed per step`),
    el('div', { class: 'table-wrap' }, el('table', { class: 'grid' }, el('tbody', {},
      row('gradient reductions', dp.grad_reduce_s, 'all gradient reduce(-scatter)s of a step'),
      row('parameter gathers', dp.param_gather_s, 'all-gathers of updated or sharded weights'),
      row('exposed', dp.exposed_s, 'not hidden behind compute'),
      row('last bucket', dp.last_bucket_s, 'the last gradient bucket, after the backward pass'),
      row('first gather', dp.first_gather_s, 'the first weight gather, before the forward pass')))));
}

function runBlock(run) {
  return el('div', { class: 'run' }, el('h3', {}, 'Whole training run'),
    el('div', { class: 'kpis small' },
      kpi('Days', fmtNum(run.days), `${fmtInt(run.steps)} steps`),
      kpi('GPU-hours', fmtNum(run.gpu_hours)),
      kpi('Cost', `$${fmtNum(run.dollars)}`),
      kpi('Energy', `${fmtNum(run.kwh)} kWh`),
      kpi('CO₂', `${fmtNum(run.co2_kg / 1000)} t`)));
}

function statsTable(stats) {
  const rows = Object.entries(stats).map(([k, v]) => el('tr', {}, el('td', {}, k), el('td', { class: 'num', title: String(v) }, fmtStat(k, v)), el('td', { class: 'meaning' }, statMeaning(k))));
  return el('details', { class: 'stats' }, el('summary', {}, `All ${rows.length} statistics (Calculon’s names, each with its meaning)`),
    el('div', { class: 'table-wrap' }, el('table', { class: 'grid' }, el('thead', {}, el('tr', {}, el('th', {}, 'statistic'), el('th', {}, 'value'), el('th', {}, 'meaning'))), el('tbody', {}, rows))));
}
