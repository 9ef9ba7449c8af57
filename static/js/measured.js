// measured.js — the "Measured runs" section of the Step time tab: GET /v1/validation's
// "measured" member (the step model against published measured training runs) as a table —
// each run's model, GPU, GPU count and layout, measured against estimated tokens/s per GPU and
// the error, or the reason a run is not modelled yet — with the mean and worst error; beside it
// the leave-one-source-out calibrated prediction's error ("loso": the GPU's preset fitted on the
// other sources' runs) or "—" when no other source measured that GPU; the recompute the rule
// assumed, and a button that opens the run, as the rule built it, on the estimate form.
import { api } from './api.js';
import { openInEstimate } from './nav.js';
import { $, el, fmtInt, fmtNum } from './util.js';

const layoutOf = (l = {}) => `TP ${l.tp ?? '?'} × CP ${l.cp ?? 1} × PP ${l.pp ?? '?'} × DP ${l.dp ?? '?'}${(l.vp ?? 1) > 1 ? ` (interleaved ${l.vp})` : ''}`;
const pct = (x) => `${x > 0 ? '+' : ''}${x.toFixed(1)} %`;
// The recompute the API took: the rule's least that fits (the sources mostly do not say), or the
// run's own when its row states one; full of some blocks of a pipeline chunk, and the modules
// selective recompute reruns.
const recomputeOf = (r) => `${r.recompute}${r.recompute_blocks ? ` ${r.recompute_blocks} of ${r.blocks_per_chunk} blocks` : ''}${r.recompute_modules ? ` + ${r.recompute_modules.join(', ')}` : ''}${r.recompute_from === 'row' ? ' (as the run states)' : ''}`;

// The run as the rule estimated it, on the form above, estimated again with its full breakdown.
const openRun = (r) => openInEstimate(r.estimate_request);

export function showMeasured(m) {
  const rows = (m.rows || []).map((r) => {
    const head = [el('td', {}, r.id), el('td', {}, r.model), el('td', {}, r.gpu), el('td', { class: 'num' }, fmtInt(r.gpu_count)), el('td', {}, layoutOf(r.layout)),
      el('td', { class: 'num' }, r.measured === undefined ? '—' : `${fmtNum(r.measured)}${r.compared === 'tflops_per_gpu' ? ' TFLOP/s' : ''}`)];
    const loso = r.loso && typeof r.loso.error_pct === 'number'
      ? el('td', { class: `num err${Math.abs(r.loso.error_pct) > 20 ? ' bad' : ''}`, title: `calibrated on ${fmtInt(r.loso.calibration_rows)} runs of other sources` }, pct(r.loso.error_pct))
      : el('td', { class: 'num muted', title: (r.loso && r.loso.reason) || '' }, '—');
    if (r.expressible && r.error_pct !== undefined) {
      const bad = Math.abs(r.error_pct) > 20;
      const open = el('button', { type: 'button', class: 'open-run', title: 'estimate this run on the form above' }, 'Open');
      open.addEventListener('click', () => openRun(r));
      return el('tr', { 'data-id': r.id, 'data-error': String(r.error_pct) }, ...head,
        el('td', { class: 'num' }, fmtNum(r.estimated)),
        el('td', { class: `num err${bad ? ' bad' : ''}` }, pct(r.error_pct)), loso,
        el('td', { class: 'recompute' }, recomputeOf(r)), el('td', {}, open));
    }
    return el('tr', { 'data-id': r.id, class: 'unmodelled' }, ...head,
      el('td', { colspan: 3, class: 'muted reason' }, r.reason || 'not estimated'));
  });
  const n = (m.rows || []).filter((r) => r.expressible && r.error_pct !== undefined).length;
  $('#measured-body').replaceChildren(
    el('p', { class: 'measured-summary' }, `${fmtInt(m.rows_estimated ?? n)} of ${fmtInt(m.rows_total ?? rows.length)} runs modelled: mean error ${fmtNum(m.mean_abs_error_pct)} %, worst ${fmtNum(m.max_abs_error_pct)} % (tokens per second per GPU, estimated against measured; + is faster than measured).${m.loso ? ` Calibrated on the other sources' runs (leave one source out): mean ${fmtNum(m.loso.mean_abs_error_pct)} %, worst ${fmtNum(m.loso.max_abs_error_pct)} % over ${fmtInt(m.loso.rows_estimated)} runs.` : ''}`),
    el('div', { class: 'table-wrap' }, el('table', { class: 'grid measured-table' },
      el('thead', {}, el('tr', {}, ...['run', 'model', 'GPU', 'GPUs', 'layout', 'measured tok/s/GPU', 'estimated', 'error', 'calibrated, other sources', 'recompute', ''].map((h) => el('th', {}, h)))),
      el('tbody', {}, rows))),
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
