// charts.js — the page's few charts, drawn with Chart.js (bundled into static/vendor/ by
// scripts/build_web.sh; loaded by index.html as the global `Chart`). Each helper replaces any
// chart already on its canvas, so re-running a form redraws in place.
import { el, fmtSeconds } from './util.js';

export const COLORS = ['#2563eb', '#16a34a', '#f59e0b', '#9333ea', '#dc2626', '#0891b2',
  '#db2777', '#65a30d', '#ea580c', '#4f46e5', '#64748b', '#0d9488'];

function draw(canvas, config) {
  const old = window.Chart.getChart(canvas);
  if (old) old.destroy();
  config.options = { responsive: true, maintainAspectRatio: false, animation: false, ...config.options };
  return new window.Chart(canvas, config);
}

// A canvas in a sized box (Chart.js needs a parent with a height to be responsive).
export function chartBox(cls = 'chart') {
  const canvas = el('canvas');
  return { box: el('div', { class: cls }, canvas), canvas };
}

// One horizontal bar split into parts: [{label, value}] in seconds.
export function stackedTime(canvas, parts, total) {
  return draw(canvas, {
    type: 'bar',
    data: {
      labels: ['step'],
      datasets: parts.map((p, i) => ({ label: p.label, data: [p.value], backgroundColor: COLORS[i % COLORS.length], barThickness: 46 })),
    },
    options: {
      indexAxis: 'y',
      scales: {
        x: { stacked: true, title: { display: true, text: 'seconds per step' } },
        y: { stacked: true, display: false },
      },
      plugins: {
        legend: { position: 'bottom', labels: { boxWidth: 12 } },
        tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${fmtSeconds(c.raw)} (${(100 * c.raw / total).toFixed(1)} %)` } },
      },
    },
  });
}

// A log axis labels its powers of ten only ("1e21"), a linear one the usual ticks.
function axis(a) {
  const out = { type: a.log ? 'logarithmic' : 'linear', title: { display: true, text: a.title } };
  if (a.log) {
    out.ticks = {
      autoSkip: false, maxRotation: 0,
      callback: (v) => {
        const e = Math.log10(v);
        return Math.abs(e - Math.round(e)) < 1e-9 ? (Math.abs(e) >= 4 ? `1e${Math.round(e)}` : String(v)) : '';
      },
    };
  }
  return out;
}

// Points [{x, y, ...}] with an optional highlighted subset; axes {x: {title, log}, y: {...}}.
export function scatter(canvas, series, axes, tooltip) {
  return draw(canvas, {
    type: 'scatter',
    data: {
      datasets: series.map((s, i) => ({
        // Sorted by x: with parsing off Chart.js takes the data as sorted and reads the x range
        // from the first and last points only, so unsorted points fell off the axes.
        label: s.label, data: [...s.points].sort((a, b) => a.x - b.x), showLine: !!s.line, pointRadius: s.radius ?? 3,
        pointHoverRadius: (s.radius ?? 3) + 2, borderWidth: s.line ? 2 : 1,
        backgroundColor: s.color || COLORS[i], borderColor: s.color || COLORS[i], pointStyle: s.style || 'circle',
        order: s.order ?? i,
      })),
    },
    options: {
      parsing: false,
      scales: {
        x: axis(axes.x),
        y: axis(axes.y),
      },
      plugins: {
        legend: { position: 'bottom', labels: { boxWidth: 12 } },
        tooltip: tooltip ? { callbacks: { label: tooltip } } : {},
      },
    },
  });
}
