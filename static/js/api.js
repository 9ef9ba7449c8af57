// api.js — talking to fathomd: one fetch wrapper that turns 4xx/5xx bodies
// ({"error":{"code","message","field"}}) into an ApiError, and the code that shows such an error
// beside the input it names (inputs carry data-field="execution.tensor_par" and the like).
import { $$, el } from './util.js';

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field || null;
  }
}

// → {data, hash, status}. hash is the result's config hash (the ETag), used in share links.
export async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'network', `cannot reach the Fathom server (${e.message})`);
  }
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { /* not JSON: handled below */ }
  if (!resp.ok) {
    const e = data && data.error;
    if (e) throw new ApiError(resp.status, e.code, e.message, e.field);
    throw new ApiError(resp.status, 'http', `the server answered ${resp.status} ${resp.statusText}`);
  }
  const etag = resp.headers.get('ETag');
  const hash = etag && /^"[0-9a-f]{64}"$/.test(etag) ? etag.slice(1, -1) : null;
  return { data, hash, status: resp.status };
}

export function clearErrors(form) {
  for (const n of $$('.field-error', form)) n.remove();
  for (const n of $$('.invalid', form)) n.classList.remove('invalid');
  const box = form.querySelector('.form-error');
  if (box) { box.hidden = true; box.textContent = ''; }
}

// The input for `field`, or for its nearest named ancestor ("system.networks[0].ops.p2p" may land
// on "system.networks[0]"... or on the "system" select), or null.
function inputFor(form, field) {
  let f = field;
  while (f) {
    const hit = form.querySelector(`[data-field="${CSS.escape(f)}"]`);
    if (hit) return hit;
    const cut = Math.max(f.lastIndexOf('.'), f.lastIndexOf('['));
    f = cut > 0 ? f.slice(0, cut) : '';
  }
  return null;
}

// Shows err beside its field (opening any collapsed section that holds it), else in the form's
// error box. Never dumps JSON: the message is the server's sentence.
export function showError(form, err) {
  const input = err.field ? inputFor(form, err.field) : null;
  if (input) {
    for (let d = input.closest('details'); d; d = d.parentElement.closest('details')) d.open = true;
    input.classList.add('invalid');
    const where = err.field === input.dataset.field ? '' : `${err.field}: `;
    const note = el('div', { class: 'field-error', role: 'alert' }, where + err.message);
    const host = input.closest('.fld');
    if (host) host.append(note); else input.after(note);
    input.scrollIntoView({ block: 'center', behavior: 'smooth' });
    input.focus({ preventScroll: true });
    return;
  }
  const box = form.querySelector('.form-error');
  const text = err.field ? `${err.field}: ${err.message}` : err.message;
  if (box) { box.textContent = text; box.hidden = false; } else alert(text);
}

export function shareUrl(hash) {
  return `${location.origin}${location.pathname}#r=${hash}`;
}

// Puts an answer's fragment (#r=<hash>, #sweep=<id>, #plan=<id>) in the address bar, unless
// the planner went elsewhere while it was computed (`from` is the fragment when they asked):
// replaceState fires no hashchange, so a late rewrite would leave the address naming an answer
// another tab hides.
export function keepInUrl(fragment, from) {
  if (location.hash === from) history.replaceState(null, '', fragment);
}

export function keepResultInUrl(hash, from) {
  if (hash) keepInUrl(`#r=${hash}`, from);
}

// A "Link to this result" row: the link and a copy button.
export function shareLink(hash) {
  if (!hash) return el('span');
  const url = shareUrl(hash);
  const copy = el('button', { type: 'button', class: 'small ghost' }, 'Copy');
  copy.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(url); copy.textContent = 'Copied'; } catch { copy.textContent = 'Select the link to copy'; }
  });
  return el('div', { class: 'share' }, 'Link to this result: ',
    el('a', { href: `#r=${hash}`, class: 'share-link' }, `#r=${hash.slice(0, 12)}…`), ' ', copy);
}
