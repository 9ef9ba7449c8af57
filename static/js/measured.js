// measured.js — the "Measured runs" section of the Step time tab: GET /v1/validation's
// "measured" member (the step model against published measured training runs) as a table —
// each run's model, GPU, GPU count and layout, measured against estimated tokens/s per GPU and
// the error with the estimate's warnings marked, or the reason a run is not modelled yet — with
// the mean and worst error; beside it
// the leave-one-source-out calibrated prediction's error ("loso": the GPU's preset fitted on the
// other sources' runs) or "—" when no other source measured that GPU; the recompute the rule
// assumed, and a button that opens the run, as the rule built it, on the estimate form.
import { api } from './api.js';
import { openInEstimate } from './nav.js';
import { $, el, fmtInt, fmtNum, prioritize, warnMark } from './util.js';

const layoutOf = (l = {}) => `TP ${l.tp ?? '?'} × CP ${l.cp ?? 1} × PP ${l.pp ?? '?'} × DP ${l.dp ?? '?'}${(l.vp ?? 1) > 1 ? ` (interleaved ${l.vp})` : ''}`;
const pct = (x) => `${x > 0 ? '+' : ''}${x.toFixed(1)} %`;
// The recompute the API took: the rule's least that fits (the sources mostly do not say), or the
// run's own when its row states one; full of some blocks of a pipeline chunk, and the modules
// selective recompute reruns.
const recomputeOf = (r) => `${r.recompute}${r.recompute_blocks ? ` ${r.recompute_blocks} of ${r.blocks_per_chunk} blocks` : ''}${r.recompute_modules ? ` + ${r.recompute_modules.join(', ')}` : ''}${r.recompute_from === 'row' ? ' (as the run states)' : ''}`;

// The run as the rule estimated it, on the form above, estimated again with its full breakdown.
const openRun = (r) => openInEstimate(r.estimate_request);

// The columns a phone shows: the run, what was measured and the verdict — the estimate's error,
// with its warnings (⚠, the reasons on hover or a tap); the estimate and the rest a tap away.
const HEAD = ['run', 'measured tok/s/GPU', 'estimated', 'error', 'model', 'GPU', 'GPUs', 'layout', 'calibrated, other sources', 'recompute', ''];
export function showMeasured(m) {
  const rows = (m.rows || []).map((r) => {
    const measured = el('td', { class: 'num measured' }, r.measured === undefined ? '—' : `${fmtNum(r.measured)}${r.compared === 'tflops_per_gpu' ? ' TFLOP/s' : ''}`);
    const tail = [el('td', {}, r.model), el('td', {}, r.gpu), el('td', { class: 'num' }, fmtInt(r.gpu_count)), el('td', {}, layoutOf(r.layout))];
    const loso = r.loso && typeof r.loso.error_pct === 'number'
      ? el('td', { class: `num err${Math.abs(r.loso.error_pct) > 20 ? ' bad' : ''}`, title: `calibrated on ${fmtInt(r.loso.calibration_rows)} runs of other sources` }, pct(r.loso.error_pct))
      : el('td', { class: 'num muted', title: (r.loso && r.loso.reason) || '' }, '—');
    if (r.expressible && r.error_pct !== undefined) {
      const bad = Math.abs(r.error_pct) > 20;
      const open = el('button', { type: 'button', class: 'open-run', title: 'estimate this run on the form above' }, 'Open');
      open.addEventListener('click', () => openRun(r));
      return el('tr', { 'data-id': r.id, 'data-error': String(r.error_pct) }, el('td', { class: 'run-id' }, r.id), measured,
        el('td', { class: 'num' }, fmtNum(r.estimated)),
        el('td', { class: `num err error${bad ? ' bad' : ''}` }, pct(r.error_pct), ' ', warnMark(r.warnings)),
        ...tail, loso, el('td', { class: 'recompute' }, recomputeOf(r)), el('td', {}, open));
    }
    return el('tr', { 'data-id': r.id, class: 'unmodelled' }, el('td', { class: 'run-id' }, r.id), measured,
      el('td', { class: 'muted' }, '—'), el('td', { class: 'muted reason' }, r.reason || 'not estimated'), ...tail,
      el('td', { class: 'muted' }, '—'), el('td', {}, ''), el('td', {}, ''));
  });
  const n = (m.rows || []).filter((r) => r.expressible && r.error_pct !== undefined).length;
  $('#measured-body').replaceChildren(
    el('p', { class: 'measured-summary' }, `${fmtInt(m.rows_estimated ?? n)} of ${fmtInt(m.rows_total ?? rows.length)} runs modelled: mean error ${fmtNum(m.mean_abs_error_pct)} %, worst ${fmtNum(m.max_abs_error_pct)} % (tokens per second per GPU, estimated against measured; + is faster than measured).${m.loso ? ` Calibrated on the other sources' runs (leave one source out): mean ${fmtNum(m.loso.mean_abs_error_pct)} %, worst ${fmtNum(m.loso.max_abs_error_pct)} % over ${fmtInt(m.loso.rows_estimated)} runs.` : ''}`),
    el('div', { class: 'table-wrap' }, prioritize(el('table', { class: 'grid measured-table' },
      el('thead', {}, el('tr', {}, ...HEAD.map((h) => el('th', {}, h)))),
      el('tbody', {}, rows)), [0, 1, 3], [8, 9, 7, 6, 5, 4, 2, 10])),
    el('p', { class: 'muted' }, `Source: ${m.source || 'the API’s validation set'}; the whole comparison is at `, el('a', { href: '/v1/validation' }, '/v1/validation'), '.'),
  );
}

export function initMeasured() {
  const box = $('#measured');
  let loaded = false;
  box.addEventListener('toggle', async () => {
    if (!box.open || loaded) return;
    loaded = true;
    try {
      showMeasured((await api('GET', '/v1/validation')).data.measured || {});
    } catch (e) {
      loaded = false;
      $('#measured-body').replaceChildren(el('p', { class: 'warn' }, `Cannot load the measured runs: ${e.message}`));
    }
  });
}
