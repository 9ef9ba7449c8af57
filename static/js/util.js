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
