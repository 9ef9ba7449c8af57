// util.js — small helpers shared by every tab: building DOM nodes, formatting numbers with their
// units, and reading/writing values at JSON paths ("execution.tensor_par", "networks[0].size").

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];

// el('div', {class: 'x', onclick: f}, child, 'text', ...) → element.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined && c !== false) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

const SI = [[1e18, 'E'], [1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];

// 3 significant digits, with an SI prefix for large values ("1.23 T").
export function fmtNum(x, digits = 3) {
  if (x === null || x === undefined || Number.isNaN(x)) return '—';
  if (!Number.isFinite(x)) return x > 0 ? '∞' : '−∞';
  const a = Math.abs(x);
  if (a >= 1e21 || (a > 0 && a < 1e-3)) return x.toExponential(digits - 1).replace('e+', 'e');
  if (a >= 1e3 && a < 1e6) return (+x.toPrecision(Math.max(digits, 4))).toLocaleString('en-US');
  for (const [v, p] of SI) if (a >= v) return `${+(x / v).toPrecision(digits)} ${p}`;
  return String(+x.toPrecision(digits));
}

export function fmtInt(x) {
  return Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '—';
}

export function fmtSeconds(s) {
  if (!Number.isFinite(s)) return '—';
  const a = Math.abs(s);
  if (a === 0) return '0 s';
  if (a < 1e-3) return `${+(s * 1e6).toPrecision(3)} µs`;
  if (a < 1) return `${+(s * 1e3).toPrecision(3)} ms`;
  if (a < 120) return `${+s.toPrecision(3)} s`;
  if (a < 7200) return `${+(s / 60).toPrecision(3)} min`;
  if (a < 172800) return `${+(s / 3600).toPrecision(3)} h`;
  return `${+(s / 86400).toPrecision(3)} days`;
}

export function fmtBytes(b) {
  if (!Number.isFinite(b)) return '—';
  if (b >= 2 ** 60) return `${(b / 2 ** 60).toExponential(2)} EiB`;
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  let i = 0;
  while (Math.abs(b) >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return i === 0 ? `${b} bytes` : `${+b.toPrecision(3)} ${units[i]}`;
}

export const fmtPct = (f) => (Number.isFinite(f) ? `${+(f * 100).toPrecision(3)} %` : '—');

// Unit of one of the 96 Calculon statistics, from its name (core/llm/llm_stats.h lists them).
export function statUnit(name) {
  if (name.endsWith('_flops')) return 'FLOP';
  if (/_req(_chunk|_tail)?$/.test(name) && name.includes('bw')) return 'bytes/s';
  if (name.endsWith('efficiency')) return 'fraction';
  if (name === 'sample_rate') return 'samples/s';
  if (/_time(_exposed)?$/.test(name)) return 's';
  return 'bytes';
}

export function fmtStat(name, v) {
  if (v === null || v === undefined) return '—';
  switch (statUnit(name)) {
    case 's': return fmtSeconds(v);
    case 'bytes': return fmtBytes(v);
    case 'bytes/s': return `${fmtBytes(v)}/s`;
    case 'fraction': return fmtPct(v);
    case 'samples/s': return `${fmtNum(v)} samples/s`;
    default: return `${fmtNum(v)} FLOP`;
  }
}

// "system.networks[0].size" → ['system', 'networks', 0, 'size'].
export function parsePath(path) {
  const out = [];
  for (const part of path.split('.')) {
    const m = part.match(/^([^[]*)((\[\d+\])*)$/);
    if (!m) { out.push(part); continue; }
    if (m[1]) out.push(m[1]);
    for (const idx of m[2].matchAll(/\[(\d+)\]/g)) out.push(Number(idx[1]));
  }
  return out;
}

export function joinPath(parts) {
  return parts.reduce((s, p) => (typeof p === 'number' ? `${s}[${p}]` : s ? `${s}.${p}` : p), '');
}

export function setAt(obj, parts, value) {
  let o = obj;
  parts.slice(0, -1).forEach((p, i) => {
    if (o[p] === undefined) o[p] = typeof parts[i + 1] === 'number' ? [] : {};
    o = o[p];
  });
  o[parts[parts.length - 1]] = value;
}

export function divisors(n) {
  const out = [];
  for (let d = 1; d * d <= n; d++) {
    if (n % d === 0) { out.push(d); if (d * d !== n) out.push(n / d); }
  }
  return out.sort((a, b) => a - b);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Structural equality that ignores key order ("$comment" members too): is a normalized object
// one of the presets?
export function sameValue(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a).filter((k) => k !== '$comment');
  const kb = Object.keys(b).filter((k) => k !== '$comment');
  return ka.length === kb.length && ka.every((k) => sameValue(a[k], b[k]));
}

// One line of meaning for each of Calculon's 96 statistic names, so the table reads without the
// source. Per-block names are composed from their parts (where, phase, quantity); the rest are
// listed.
const STAT_WHERE = {
  block: 'one transformer block, one microbatch',
  baseblock: 'a block inside a pipeline chunk, per microbatch',
  edgeblock: 'the last block of a pipeline chunk (it also sends to the next stage), per microbatch',
};
const STAT_PHASE = {
  fw: 'forward pass', re: 'recomputed forward pass', agrad: 'backward: activation gradients',
  wgrad: 'backward: weight gradients', optim: 'optimizer step', bw: 'backward pass',
  recomm: 'communication redone during recompute',
};
const STAT_WHAT = {
  flops: 'floating-point operations', flops_time: 'time its FLOPs take at the engine’s rate',
  mem_accessed: 'bytes read and written in GPU memory', mem_time: 'time its memory traffic takes',
  time: 'time taken (compute and memory traffic combined)', tp_time: 'tensor-parallel communication time',
  tp_time_exposed: 'tensor-parallel communication time not hidden behind compute',
  tp_size: 'bytes sent for tensor parallelism', pp_size: 'bytes sent to the next pipeline stage',
  dp_size: 'bytes all-reduced for data parallelism', size: 'bytes sent', time_exposed: 'time not hidden behind compute',
};
const STAT_OTHER = {
  tp_bw_overlap_req: 'network bandwidth TP overlap needs to stay hidden',
  dp_bw_overlap_req_chunk: 'network bandwidth DP overlap needs per gradient chunk',
  dp_bw_overlap_req_tail: 'network bandwidth DP overlap needs for the last chunk',
  block_weight_space: 'weights of one block', block_act_working_space: 'activations one block needs while it runs',
  block_act_storage_space: 'activations one block keeps for backward', block_act_checkpoint_size: 'activation checkpoint one block keeps (recompute)',
  block_weight_grad_space: 'weight gradients of one block', block_weight_grad_space_no_sharding: 'weight gradients of one block without optimizer sharding',
  block_act_grad_space: 'activation gradients of one block',
  block_dp_size: 'bytes of one block’s gradients all-reduced for data parallelism',
  block_bw_pp_size: 'backward pass, one block and microbatch: bytes sent back to the previous pipeline stage', block_optimizer_space: 'optimizer state of one block',
  weight_space_with_offload: 'weights in GPU memory when weights are offloaded', act_space_with_offload: 'activations in GPU memory when activations are offloaded',
  act_checkpoint_size_with_offload: 'activation checkpoints in GPU memory when offloaded', act_grad_space_with_offload: 'activation gradients in GPU memory with offload',
  weight_grad_space_with_offload: 'weight gradients in GPU memory with offload', optimizer_space_with_offload: 'optimizer state in GPU memory with offload',
  weight_space: 'weights per GPU', act_space: 'activations per GPU', act_checkpoint_size: 'activation checkpoints per GPU',
  act_grad_space: 'activation gradients per GPU', weight_grad_space: 'weight gradients per GPU', optimizer_space: 'optimizer state per GPU',
  fw_time: 'forward time per step', bw_time: 'backward time per step', optim_step_time: 'optimizer time per step',
  recompute_time: 'recompute time per step', recomm_link_time: 'time recompute’s communication occupies the links',
  recomm_exposed_time: 'recompute communication not hidden behind compute', bubble_time: 'pipeline bubble: stages waiting for each other',
  tp_comm_link_time: 'time tensor-parallel traffic occupies the links', pp_comm_link_time: 'time pipeline traffic occupies the links',
  dp_comm_link_time: 'time data-parallel traffic occupies the links', tp_comm_exposed_time: 'tensor-parallel communication not hidden behind compute',
  pp_comm_exposed_time: 'pipeline communication not hidden behind compute', dp_comm_exposed_time: 'data-parallel communication not hidden behind compute',
  fw_offload_exposed_time: 'forward time waiting on offload transfers', bw_offload_exposed_time: 'backward time waiting on offload transfers',
  total_time: 'step time: all the times above that are not hidden', act_offload_bw_req: 'bandwidth offloading activations needs',
  weight_offload_bw_req: 'bandwidth offloading weights needs', optim_offload_bw_req: 'bandwidth offloading optimizer state needs',
  offload_mem_bw_req: 'offload memory bandwidth needed in all', proc_mem_tier1_cap_req: 'GPU (tier-1) memory needed per GPU',
  proc_mem_tier2_cap_req: 'offload (tier-2) memory needed per GPU', useful_flops: 'FLOPs a perfect machine would do for one block and microbatch',
  compute_efficiency: 'how busy the math engines are while computing', system_efficiency: 'share of the step spent computing rather than waiting',
  total_efficiency: 'MFU: model FLOPs utilization (useful FLOPs ÷ peak over the step)', sample_rate: 'samples (sequences) per second',
};

export function statMeaning(name) {
  if (STAT_OTHER[name]) return STAT_OTHER[name];
  const m = name.match(/^(block|baseblock|edgeblock)_(fw|re|agrad|wgrad|optim|bw|recomm)_(.+)$/);
  if (m && STAT_WHAT[m[3]]) return `${STAT_PHASE[m[2]]}, ${STAT_WHERE[m[1]]}: ${STAT_WHAT[m[3]]}`;
  const r = name.match(/^(baseblock|edgeblock)_recomm_(time|time_exposed|size)$/);
  if (r) return `${STAT_PHASE.recomm}, ${STAT_WHERE[r[1]]}: ${STAT_WHAT[r[2]]}`;
  return name.replace(/_/g, ' ');
}

// What a preset is, for a planner: its own note where the file's comment only says where it
// came from, else the comment's first sentence.
const PRESET_NOTES = {
  a100_80e: 'A100 80 GB with effectively unlimited memory (80 billion GiB): for Calculon’s experiments that ignore memory limits, not a real machine.',
  a100_80g: 'NVIDIA A100 80 GB, 8 per NVLink node, nodes joined by InfiniBand (Calculon’s system).',
  h100_80g_nvl8: 'NVIDIA H100 80 GB, 8 per NVLink node, nodes joined by InfiniBand (Calculon’s system).',
};
export function presetNote(name, comment) {
  if (PRESET_NOTES[name]) return PRESET_NOTES[name];
  if (!comment) return '';
  if (/^Calculon's (models|systems)\//.test(comment)) return `As in Calculon (${comment.split(' ')[1].replace(/\.json$/, '')}).`;
  return `${comment.split(/(?<=\))[:.]\s|(?<=\w)[:.]\s/)[0]}.`;
}

// A table row's warnings (the API's {code, message} list) where the numbers are: a "⚠ n" mark
// whose title says them on hover and which opens on a tap (a <details>, so it works without a
// pointer), or nothing when the row has none. Every table that lists estimates uses it: the
// search's, the grid's, the plan's and the measured runs'.
export function warnMark(warnings) {
  const list = (warnings || []).filter((w) => w && w.message);
  if (!list.length) return el('span', { class: 'warn-none' });
  const text = list.map((w) => `${w.code}: ${w.message}`).join('\n');
  const reasons = el('ul', {}, list.map((w) => el('li', {}, el('b', {}, w.code), ` ${w.message}`)));
  const mark = el('details', { class: 'warn-mark', title: text, 'data-codes': list.map((w) => w.code).join(' ') },
    el('summary', { 'aria-label': `${list.length} warning${list.length > 1 ? 's' : ''}` }, `⚠ ${list.length}`), reasons);
  // The reasons open over the page below the mark (fixed, inside the screen): a table's
  // scrolling box would clip them, and in its flow they would widen their column.
  mark.addEventListener('toggle', () => {
    if (!mark.open) return;
    const at = mark.querySelector('summary').getBoundingClientRect();
    const width = Math.min(256, window.innerWidth * 0.7);
    reasons.style.width = `${width}px`;
    reasons.style.left = `${Math.max(8, Math.min(at.right - width, window.innerWidth - width - 8))}px`;
    reasons.style.top = `${at.bottom + 4}px`;
  });
  return mark;
}

// An open warning's reasons follow their mark when the page or a table scrolls or resizes.
for (const ev of ['scroll', 'resize']) {
  window.addEventListener(ev, () => { for (const d of document.querySelectorAll('details.warn-mark[open]')) d.dispatchEvent(new Event('toggle')); }, { passive: true, capture: true });
}

// Tables that stay readable at any width: the header columns whose indices are in `keep` always
// show; when the table is wider than its box (a phone, or a table beside a form), the others
// hide one by one — in `order`, the first listed first (default: from the right) — until it
// fits, and each row gets a toggle in its first kept cell that opens a row below listing the
// hidden ones, header and value: the rest a tap away. A cell spanning columns hides only when
// every column it spans does; a button in a listed cell acts as the original (the copy's click
// is the original's). The table is fitted again whenever its width changes; `data-fitted` holds
// the box width it was last fitted to. Returns the table.
export function prioritize(table, keep, order) {
  const heads = [...table.querySelectorAll('thead th')];
  const hideable = order || heads.map((_, i) => heads.length - 1 - i).filter((i) => !keep.includes(i));
  const rows = [...table.querySelectorAll('tbody > tr')].map((tr) => {
    let col = 0;
    const cells = [...tr.children].map((td) => {
      const span = Number(td.getAttribute('colspan') || 1), cols = heads.map((_, i) => i).slice(col, col + span);
      col += span;
      return { td, cols };
    });
    const first = cells.find((c) => c.cols.some((i) => keep.includes(i)));
    if (first) first.td.prepend(toggleFor(tr, heads, cells));
    return cells;
  });
  table.classList.add('prioritized');
  const fit = () => {
    const box = table.parentElement;
    // only a new width refits (a row opened below changes the height alone)
    if (!box || !box.clientWidth || table.dataset.fitted === String(box.clientWidth)) return;
    for (const tr of table.querySelectorAll('tr.row-more')) tr.remove();
    for (const b of table.querySelectorAll('.more-toggle')) b.setAttribute('aria-expanded', 'false');
    const hidden = new Set();
    const apply = () => {
      heads.forEach((th, i) => th.classList.toggle('more-col', hidden.has(i)));
      for (const cells of rows) for (const { td, cols } of cells) td.classList.toggle('more-col', cols.every((i) => hidden.has(i)));
    };
    apply();
    for (const i of hideable) {
      if (table.offsetWidth <= box.clientWidth + 0.5) break;
      hidden.add(i);
      apply();
    }
    table.classList.toggle('compact', hidden.size > 0);
    table.dataset.fitted = String(box.clientWidth);
  };
  // after layout, outside the observer's delivery (fitting changes the table's own size)
  new ResizeObserver(() => requestAnimationFrame(fit)).observe(table);
  return table;
}

// The toggle of one row: opens below it the columns hidden now.
function toggleFor(tr, heads, cells) {
  // its arrow is drawn by app.css, so the cell's text stays the figure's
  const toggle = el('button', { type: 'button', class: 'more-toggle', 'aria-expanded': 'false', 'aria-label': 'the other columns', title: 'the other columns' });
  toggle.addEventListener('click', () => {
    const open = toggle.getAttribute('aria-expanded') !== 'true';
    toggle.setAttribute('aria-expanded', String(open));
    if (tr.nextElementSibling?.classList.contains('row-more')) tr.nextElementSibling.remove();
    if (!open) return;
    const items = cells.filter(({ td }) => td.classList.contains('more-col')).map(({ td, cols }) => {
      const copy = el('dd', {}, ...[...td.childNodes].map((n) => n.cloneNode(true)));
      const originals = td.querySelectorAll('button'), copies = copy.querySelectorAll('button');
      copies.forEach((b, j) => b.addEventListener('click', (e) => { e.preventDefault(); originals[j].click(); }));
      return [el('dt', {}, cols.map((c) => heads[c].textContent).filter(Boolean).join(', ')), copy];
    });
    tr.after(el('tr', { class: 'row-more' }, el('td', { colspan: heads.length }, el('dl', {}, items.flat()))));
  });
  return toggle;
}
