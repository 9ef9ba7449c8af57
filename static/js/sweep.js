// sweep.js — the "Fastest layout" tab: start an optimal-execution search or a grid sweep
// (POST /v1/sweep → 202 {id}), fill a progress bar by polling GET /v1/sweep/<id>, cancel with
// DELETE, then show the best executions in a table, every evaluated point on a scatter plot
// (sample rate against tier-1 memory) and a CSV download.
import { api, ApiError } from './api.js';
import { choicesOf, presetChoices, presetList } from './catalog.js';
import { chartBox, scatter } from './charts.js';
import { field, read } from './forms.js';
import { estimateRequest, openInEstimate } from './nav.js';
import { sweepPoller } from './poller.js';
import { $, el, fmtBytes, fmtInt, fmtNum, fmtPct, fmtSeconds, parsePath, prioritize, setAt, warnMark } from './util.js';

const form = () => $('#sweep-form');
const POINT_CAP = 20000; // the scatter reads at most this many points of a grid sweep
// The search's enumerated options as a select's options, in a planner's words.
const optionChoices = (path, labels) => choicesOf('sweep_optimal_execution_request', path, labels);

// The Estimate tab's model or system, as edited there (a planner's own shape), offered in the
// search's selectors next to the presets.
const FROM_ESTIMATE = '=estimate';
const AUTO = 'auto';

function buildForm() {
  const presets = presetList();
  const opt = (list, kind) => [...presetChoices(list), [FROM_ESTIMATE, `the Estimate tab’s ${kind} (as edited there)`]];
  const sc = 'sw';
  $('#sw-search').append(
    field({ scope: sc, label: 'Model', field: 'model', type: 'select', options: opt(presets.models, 'model'), value: 'gpt3-175B' }),
    field({ scope: sc, label: 'System', field: 'system', type: 'select', options: opt(presets.systems, 'system'), value: 'a100_80g' }),
    field({ scope: sc, label: 'GPUs (num_procs)', field: 'num_procs', value: 1024, min: 1, step: 1, required: true }),
    field({ scope: sc, label: 'Largest global batch', field: 'max_batch_size', value: 1024, min: 1, step: 1, required: true, hint: 'the batch used is its largest multiple of DP' }),
    // "auto" leaves the field out: the API's modern defaults (the model's natural datatype, fused
    // attention, FP8 free where the system has it; Calculon's for Calculon's models).
    field({ scope: sc, label: 'Datatype', field: 'datatype', type: 'select', value: AUTO, options: [[AUTO, 'the model’s own (bfloat16 for modern models)'], ...optionChoices('datatype')] }),
    field({ scope: sc, label: 'Layouts to list', field: 'options.top_n', value: 10, min: 1, step: 1, required: true, hint: 'up to 100 executions are ranked; grouped, this many distinct layouts' }),
    field({ scope: sc, label: 'Fused activation', field: 'options.fused_activation', type: 'select', value: 'true', options: optionChoices('options.fused_activation', { true: 'on', false: 'off', all: 'try both' }) }),
    field({ scope: sc, label: 'Attention kernel', field: 'options.attention_kernel', type: 'select', value: AUTO,
      options: [[AUTO, 'the model’s (fused for modern models)'], ...optionChoices('options.attention_kernel', { unfused: 'unfused (Calculon’s)', fused: 'fused (flash attention)', all: 'try both' })], hint: 'fused needs a modern model (Llama 3, Mistral, Qwen 2.5 or the modern block)' }),
    field({ scope: sc, label: 'FP8 matrix multiplies', field: 'options.fp8', type: 'select', value: AUTO,
      options: [[AUTO, 'try both where the system has FP8 (modern models)'], ['false', 'off'], ['true', 'on'], ['all', 'try both']], hint: 'needs a float8 rate on the system and float16 or bfloat16' }),
    field({ scope: sc, label: 'Context parallel (CP)', field: 'options.context_par', type: 'select', value: '1',
      options: [['1', '1 (none)'], ['2', '2'], ['4', '4'], ['8', '8'], ['16', '16'], ['all', 'try every degree']],
      hint: 'ring attention for long sequences: needs a modern model and fused attention' }),
    field({ scope: sc, label: 'ZeRO stage', field: 'options.zero_stage', type: 'select', value: 'calculon',
      options: [['calculon', 'optimizer sharded or not (Calculon’s)'], ['0', '0: nothing sharded'], ['1', '1: optimizer state'],
        ['2', '2: also gradients'], ['3', '3: also parameters (FSDP)'], ['all', 'try every stage']],
      hint: 'stages 2 and 3 need a modern model' }),
    field({ scope: sc, label: 'Full recompute reruns', field: 'options.recompute_blocks', type: 'select', value: 'all',
      options: optionChoices('options.recompute_blocks', { all: 'every block (Calculon’s)', fewest: 'the fewest blocks per chunk that fit' }),
      hint: 'Megatron’s recompute_num_layers: the others keep their activations (modern models)' }),
    field({ scope: sc, label: 'Layouts that do not fit', field: 'options.recompute_modules', type: 'select', value: 'none',
      options: optionChoices('options.recompute_modules', { none: 'are dropped', fewest: 'try selective recompute of modules' }),
      hint: 'layernorm, then the dense MLP (dense models) or moe_act, then mla_up_proj, then the whole MoE MLP: the fewest that fit (modern block)' }),
    field({ scope: sc, label: 'Gradients in the datatype, not float32', field: 'options.low_precision_gradients', type: 'checkbox', hint: 'Megatron’s grad_reduce_in_fp32 = False: less memory per GPU' }),
    field({ scope: sc, label: 'Skip TP overlap', field: 'options.no_tp_overlap', type: 'checkbox' }),
    field({ scope: sc, label: 'Skip DP overlap', field: 'options.no_dp_overlap', type: 'checkbox' }),
    field({ scope: sc, label: 'Stop growing the microbatch once it stops fitting', field: 'options.mbs_break', type: 'checkbox' }),
    field({ scope: sc, label: 'Largest TP (tensor parallel)', field: 'options.max_tensor_par', min: 1, step: 1, placeholder: 'no cap' }),
    field({ scope: sc, label: 'Largest PP (pipeline parallel)', field: 'options.max_pipeline_par', min: 1, step: 1, placeholder: 'no cap' }),
    field({ scope: sc, label: 'No offload to tier-2 memory', field: 'options.no_offload', type: 'checkbox' }),
    field({ scope: sc, label: 'Use exactly the largest global batch (skip DP that does not divide it)', field: 'options.exact_batch', type: 'checkbox' }),
    field({ scope: sc, label: 'Group layouts that differ only in offload, overlap, fusion or networks', field: 'group', type: 'checkbox', value: true, hint: 'one row per TP × PP × DP, microbatch, interleaving, recompute and sharding' }),
  );
  const axes = el('textarea', { id: 'sw-axes', 'data-field': 'axes', rows: 4, spellcheck: 'false' },
    'execution.tensor_par = 1, 2, 4, 8\nexecution.pipeline_par = 1, 2, 4, 8\nexecution.microbatch_size = 1, 2');
  $('#sw-grid').append(el('div', { class: 'fld wide' }, el('label', { for: 'sw-axes' }, 'Axes: one field per line, “path = value, value, …”'), axes,
    el('small', { class: 'hint' }, 'Every combination is estimated from the Estimate tab’s current request (its model, system and execution). When TP or PP vary, the matching data_par values are added for you.')));
  form().addEventListener('change', () => {
    const grid = read(form(), 'kind') === 'grid';
    $('#sw-search').hidden = grid;
    $('#sw-grid').hidden = !grid;
  });
}

function parseAxes(text) {
  const axes = {};
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line) continue;
    const m = line.match(/^([\w.[\]]+)\s*[=:]\s*(.+)$/);
    if (!m) throw new ApiError(0, 'local', `line ${i + 1}: write “path = value, value”`, 'axes');
    axes[m[1]] = m[2].split(',').map((v) => v.trim()).filter(Boolean).map((v) => {
      try { return JSON.parse(v); } catch { return v; }
    });
  }
  if (!Object.keys(axes).length) throw new ApiError(0, 'local', 'give at least one axis', 'axes');
  return axes;
}

function requestOf() {
  const f = form();
  if (read(f, 'kind') === 'grid') {
    const base = estimateRequest();
    delete base.training;
    const axes = parseAxes(read(f, 'axes'));
    // A grid is a plain product and the base's data_par stays fixed; when TP or PP vary on a
    // fixed number of GPUs, DP must vary with them: add every DP the product can need (the
    // combinations that do not multiply to num_procs come back as infeasible points).
    const e = base.execution, tpA = axes['execution.tensor_par'], ppA = axes['execution.pipeline_par'];
    if ((tpA || ppA) && !axes['execution.data_par'] && !axes['execution.num_procs']) {
      const dps = new Set();
      for (const tp of tpA || [e.tensor_par]) for (const pp of ppA || [e.pipeline_par]) {
        if (e.num_procs % (tp * pp) === 0) dps.add(e.num_procs / (tp * pp));
      }
      if (dps.size) axes['execution.data_par'] = [...dps].sort((a, b) => a - b);
    }
    return { kind: 'grid', base, axes };
  }
  const req = { kind: 'optimal_execution', options: {} };
  for (const input of f.querySelectorAll('#sw-search [data-field]')) {
    if (input.dataset.field === 'group') continue; // how the page shows rows, not the search
    const v = read(f, input.dataset.field);
    if (v !== undefined) setAt(req, parsePath(input.dataset.field), v);
  }
  // "auto": the API's default for this model and system.
  if (req.datatype === AUTO) delete req.datatype;
  for (const k of ['attention_kernel', 'fp8']) if (req.options[k] === AUTO) delete req.options[k];
  // fp8 is a JSON boolean or "all" (fused_activation also takes strings; fp8 does not).
  if (req.options.fp8 === 'true' || req.options.fp8 === 'false') req.options.fp8 = req.options.fp8 === 'true';
  // context_par and zero_stage are integers or "all"; Calculon's sharding loop is the default.
  if (req.options.context_par !== undefined && req.options.context_par !== 'all') req.options.context_par = Number(req.options.context_par);
  if (req.options.zero_stage === 'calculon') delete req.options.zero_stage;
  else if (req.options.zero_stage !== undefined && req.options.zero_stage !== 'all') req.options.zero_stage = Number(req.options.zero_stage);
  // Grouped, the rows are layouts: ask for more executions (up to the API's 100) so that the
  // near-duplicates folded away still leave as many layouts as were asked for.
  if (read(f, 'group') && req.options.top_n) req.options.top_n = Math.min(100, req.options.top_n * 5);
  // A planner's own model or system: the Estimate tab's request carries it by value.
  if (req.model === FROM_ESTIMATE || req.system === FROM_ESTIMATE) {
    const est = estimateRequest();
    if (req.model === FROM_ESTIMATE) req.model = est.model;
    if (req.system === FROM_ESTIMATE) req.system = est.system;
  }
  return req;
}

const describe = (s, p) => {
  const pct = p.total ? `: ${((100 * (p.done || 0)) / p.total).toFixed(0)} %` : '';
  return `${s.kind === 'grid' ? 'Grid sweep' : 'Search'} ${s.status}${pct} — ${fmtInt(p.done || 0)} of ${fmtInt(p.total || 0)} work items`;
};

const execOf = (p, st) => {
  if (p.execution) return p.execution;
  const base = st.spec?.base?.execution || st.request?.base?.execution || {};
  const e = { ...base };
  for (const [k, v] of Object.entries(p.values || {})) if (k.startsWith('execution.')) e[k.slice(10)] = v;
  return e;
};

async function loadPoints(st) {
  if (st.kind !== 'grid') return (st.best || []).map((b, i) => ({ rank: i + 1, ...b }));
  const points = [];
  for (let offset = 0; offset < POINT_CAP; offset += 1000) {
    const page = (await api('GET', `/v1/sweep/${st.id}/results?format=json&offset=${offset}&limit=1000`)).data;
    const got = page.points || [];
    points.push(...got);
    if (got.length < 1000) break;
  }
  return points;
}

async function showResults(st) {
  const out = $('#sw-results');
  const points = await loadPoints(st);
  if (st.kind !== 'grid') st.points = (await api('GET', `/v1/sweep/${st.id}/points`)).data.points || [];
  const ok = points.filter((p) => p.summary);
  // The fastest layout is the fastest one that fits in memory; others are listed only when
  // nothing fits.
  const fits = ok.filter((p) => p.fits_memory !== false);
  const byRate = (list) => [...list].sort((a, b) => b.summary.sample_rate - a.summary.sample_rate);
  const ranked = st.kind === 'grid' ? byRate(fits.length ? fits : ok) : ok;
  let wanted = ranked.length;
  try { wanted = read(form(), 'options.top_n') || wanted; } catch { /* keep them all */ }
  const best = (read(form(), 'group') ? groupRows(ranked, st) : ranked.map((p) => ({ ...p, variants: [] }))).slice(0, st.kind === 'grid' ? 10 : wanted);
  const counts = st.counts || {};
  const csv = el('a', { class: 'button ghost', href: `/v1/sweep/${st.id}/results?format=csv&offset=0&limit=${st.kind === 'grid' ? POINT_CAP : 100}`, download: `fathom-sweep-${st.id}.csv` }, 'Download CSV');
  const chart = chartBox('chart chart-scatter');
  out.replaceChildren(
    el('div', { class: 'row-between' },
      el('h3', {}, st.status === 'cancelled' ? 'Cancelled — best executions so far' : 'Fastest executions'),
      el('div', {}, csv)),
    el('p', { class: 'muted' }, st.kind === 'grid'
      ? `${fmtInt(points.length)} combinations evaluated, ${fmtInt(ok.length)} feasible (the others do not divide or do not map on the networks), ${fmtInt(ok.filter((p) => p.fits_memory).length)} fit in memory. Ranked by sample rate.`
      : `${fmtInt(counts.total ?? 0)} executions considered, ${fmtInt(counts.good ?? 0)} fit in memory${counts.pruned ? `, ${fmtInt(counts.pruned)} ruled out without estimating (provably slower than the best)` : ''}. Ranked by sample rate: the first row is the fastest layout.`),
    fits.length ? el('span') : el('p', { class: 'warn' }, 'No execution fits in memory: try more GPUs, recompute, optimizer sharding or another system.'),
    whyNot(points),
    best.length ? topTable(best, st) : el('span'),
    el('h3', {}, st.kind === 'grid' ? 'Every evaluated point' : 'The space: executions that fit, sampled'),
    chart.box,
    st.kind === 'grid' ? el('span') : el('p', { class: 'muted' }, `${fmtInt((st.points || []).length)} of the executions that fit, sampled evenly over the whole search, with the listed best ones on top. A grid sweep plots every point of a region.`),
    el('p', { class: 'share' }, 'Link to this sweep: ', el('a', { href: `#sweep=${st.id}` }, `#sweep=${st.id}`)),
  );
  const gib = (p) => p.summary.mem_tier1_bytes / 2 ** 30;
  const pt = (p) => ({ x: gib(p), y: p.summary.sample_rate, p });
  // A search sends a sample of its good executions as [sample rate, tier-1 bytes, tier-2 bytes].
  const sampled = (st.kind === 'grid' ? [] : st.points || []).map((r) => ({ x: r[1] / 2 ** 30, y: r[0], p: null }));
  scatter(chart.canvas, [
    { label: 'fastest that fits', points: best.slice(0, 1).filter((p) => p.fits_memory !== false).map(pt), color: '#f59e0b', radius: 8, style: 'rectRot', order: -1 },
    ...(sampled.length ? [{ label: 'sampled executions that fit', points: sampled, color: '#94a3b8', radius: 2 }] : []),
    { label: 'fits in memory', points: ok.filter((p) => p.fits_memory !== false).map(pt), color: '#2563eb', radius: 4 },
    { label: 'does not fit', points: ok.filter((p) => p.fits_memory === false).map(pt), color: '#dc2626', radius: 4 },
  ], { x: { title: 'tier-1 memory per GPU (GiB)' }, y: { title: 'sample rate (samples/s)' } },
  (c) => { if (!c.raw.p) return `${fmtNum(c.raw.y)} samples/s, ${fmtNum(c.raw.x)} GiB (sampled)`; const e = execOf(c.raw.p, st); return `TP ${e.tensor_par} PP ${e.pipeline_par} DP ${e.data_par ?? '?'}${(e.expert_par ?? 1) > 1 ? ` EP ${e.expert_par}` : ''}${(e.expert_tensor_par ?? 1) > 1 ? ` ETP ${e.expert_tensor_par}` : ''} mb ${e.microbatch_size}: ${fmtNum(c.raw.y)} samples/s, ${fmtNum(c.raw.x)} GiB`; });
}

// What makes a layout: the split, the batch and its microbatching, recompute and sharding. Rows
// that differ only in the rest (offload, overlaps, fusion, communication style, networks) are
// near-duplicates for a planner: the fastest stands for its group, the others are its variants.
const ESSENTIALS = ['tensor_par', 'context_par', 'pipeline_par', 'data_par', 'expert_par', 'expert_tensor_par', 'zero_stage', 'batch_size', 'microbatch_size', 'pipeline_interleaving', 'activation_recompute', 'recompute_blocks', 'recompute_modules', 'optimizer_sharding'];
function groupRows(rows, st) {
  const groups = new Map();
  for (const p of rows) {
    const e = execOf(p, st);
    const key = ESSENTIALS.map((k) => e[k]).join('/');
    if (groups.has(key)) groups.get(key).variants.push(p);
    else groups.set(key, { ...p, variants: [] });
  }
  return [...groups.values()];
}

// The commonest refusals among a grid's infeasible points, so an empty grid explains itself.
function whyNot(points) {
  const n = new Map();
  for (const p of points) {
    if (!p.error) continue;
    const key = `${p.error.field || ''}: ${p.error.message.replace(/\d+/g, '#')}`;
    if (!n.has(key)) n.set(key, { count: 0, error: p.error });
    n.get(key).count++;
  }
  const top = [...n.values()].sort((a, b) => b.count - a.count).slice(0, 3);
  if (!top.length) return el('span');
  return el('div', { class: 'muted why' }, 'Why combinations were infeasible:',
    el('ul', {}, top.map(({ count, error }) => el('li', {}, `${fmtInt(count)} × `, el('em', {}, `${error.field ? `${error.field}: ` : ''}${error.message}`)))));
}

// What else sets one execution apart: communication style, overlaps, offloads, networks.
function otherOptions(e) {
  const out = [`TP comm ${e.tensor_par_comm_type}`];
  if (e.tensor_par_overlap && e.tensor_par_overlap !== 'none') out.push(`TP overlap ${e.tensor_par_overlap}`);
  if (e.seq_par_ag_redo) out.push('AG redo');
  if (e.data_par_overlap) out.push('DP overlap');
  if (e.fused_activation === false) out.push('unfused');
  if (e.attention_kernel === 'fused') out.push('fused attention');
  if (e.context_par > 1) out.push(`CP ${e.context_par}`);
  if (e.zero_stage > 1) out.push(`ZeRO-${e.zero_stage}`);
  if (e.fp8) out.push('FP8');
  if (e.moe_a2a_overlap) out.push('all-to-all overlap');
  if (e.moe_dispatcher === 'flex') out.push('flex dispatcher');
  if (e.moe_load_imbalance > 1) out.push(`load imbalance ${e.moe_load_imbalance}`);
  if (e.moe_capacity_factor > 0) out.push(`capacity ${e.moe_capacity_factor}`);
  const off = ['weight', 'activations', 'optimizer'].filter((k) => e[`${k}_offload`]);
  if (off.length) out.push(`offload ${off.join('+')}`);
  if (e.tensor_par_net !== undefined) out.push(`nets ${e.tensor_par_net}/${e.pipeline_par_net}/${e.data_par_net}`);
  return out.join(' · ');
}

// Expert parallelism under the layout, where there is any (EP, and ETP when the experts' own
// matrices are split).
// The recompute column: full recompute of some blocks, or the modules selective recompute reruns.
function recomputeText(e) {
  if (e.recompute_blocks) return `${e.activation_recompute}, ${e.recompute_blocks} per chunk`;
  if (e.recompute_modules?.length) return `${e.activation_recompute} + ${e.recompute_modules.join(', ')}`;
  return e.activation_recompute;
}

function experts(e) {
  const ep = e.expert_par ?? 1, etp = e.expert_tensor_par ?? 1;
  if (ep <= 1 && etp <= 1) return null;
  return el('div', { class: 'experts', title: 'expert parallel × expert tensor parallel' }, `EP ${ep}${etp > 1 ? ` × ETP ${etp}` : ''}`);
}

// Compact on purpose: the Open button comes first and the layout reads as one cell, so the
// table fits beside the form at 1440 px and scrolls only inside its own box on a phone.
function topTable(rows, st) {
  const head = ['#', '', 'TP × PP × DP', 'step time', 'sample rate', 'MFU', 'TFLOP/s per GPU', 'tier-1 memory', 'batch / micro / interleave', 'recompute', 'sharding', 'other options'];
  const body = rows.map((p, i) => {
    const e = execOf(p, st), s = p.summary;
    const open = el('button', { type: 'button', class: 'small ghost open-row' }, 'Open');
    open.addEventListener('click', () => openRow(p, st));
    const variants = p.variants || [];
    // The variants' options in a tooltip: listed inline they made each row a paragraph.
    const other = variants.length
      ? [otherOptions(e), el('div', { class: 'variants', title: variants.map((v) => otherOptions(execOf(v, st))).join('\n') },
        `+${variants.length} variant${variants.length > 1 ? 's' : ''} (other offload, overlap or networks) within ${fmtPct(1 - variants[variants.length - 1].summary.sample_rate / s.sample_rate)}`)]
      : [otherOptions(e)];
    return el('tr', { 'data-variants': variants.length },
      el('td', {}, p.rank ?? i + 1), el('td', {}, open),
      el('td', { class: 'layout' }, `${e.tensor_par} × ${e.pipeline_par} × ${e.data_par ?? '—'}`, experts(e)),
      el('td', { class: 'num' }, fmtSeconds(s.step_time_s)),
      el('td', { class: 'num rate' }, `${fmtNum(s.sample_rate)}/s`, s.tokens_per_s_per_proc !== undefined
        ? el('div', { class: 'tokens', title: 'tokens per second on each GPU' }, `${fmtInt(Math.round(s.tokens_per_s_per_proc))} tok/s/GPU`) : null),
      // the row's warnings beside the figure they most often question
      el('td', { class: 'num mfu' }, fmtPct(s.mfu ?? s.total_efficiency), ' ', warnMark(p.warnings)),
      el('td', { class: 'num tflops' }, fmtNum(s.tflops_per_proc ?? s.useful_flops_per_s_per_proc / 1e12)),
      // the verdict: a layout that does not fit in tier-1 memory is marked beside its bytes
      el('td', { class: `num memory${p.fits_memory === false ? ' bad' : ''}`, title: p.fits_memory === false ? 'does not fit in tier-1 memory' : 'fits in tier-1 memory' },
        fmtBytes(s.mem_tier1_bytes), p.fits_memory === false ? el('span', { class: 'verdict' }, ' ✗') : null),
      el('td', {}, `${fmtInt(e.batch_size)} / ${e.microbatch_size} / ${e.pipeline_interleaving}`),
      el('td', {}, recomputeText(e)), el('td', {}, e.zero_stage ? `ZeRO ${e.zero_stage}` : e.optimizer_sharding ? 'yes' : 'no'), el('td', { class: 'other' }, other));
  });
  // Always shown: the layout, the rate, MFU with the warnings and the memory verdict; when the
  // table is wider than its box the others go a tap away (util.js prioritize), the other
  // options first and the Open button last.
  return el('div', { class: 'table-wrap' }, prioritize(el('table', { class: 'grid top' },
    el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))), el('tbody', {}, body)), [2, 4, 5, 7], [11, 10, 9, 8, 6, 3, 0, 1]));
}

// Re-runs one row as a single estimate, with its full breakdown, on the Step time tab.
function openRow(p, st) {
  const spec = st.spec || st.request || {};
  const req = st.kind === 'grid'
    ? { ...(spec.base || estimateRequest()), execution: execOf(p, st) }
    : { model: spec.model || estimateRequest().model, system: spec.system || estimateRequest().system, execution: p.execution };
  return openInEstimate(req);
}

let poller = null;

export const sweepTab = {
  name: 'sweep',
  footer: 'Fastest layout: Calculon’s optimal-execution search over its analytical model.',
  link: 'sweep', // #sweep=<id> follows a sweep here
  init() {
    buildForm();
    poller = sweepPoller({ tab: 'sw', form, link: 'sweep', noun: 'sweep', requestOf, describe, show: showResults });
  },
  follow: (id) => poller.follow(id),
};
