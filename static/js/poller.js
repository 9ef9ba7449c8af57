// poller.js — the sweep tabs' one submit/poll/cancel loop (Fastest layout, Plan a cluster, and
// any later tab whose answer is a sweep): the form becomes POST /v1/sweep (→ 202 {id}), the
// sweep is followed with GET /v1/sweep/<id> on a progress bar until it ends, and the cancel
// button sends DELETE /v1/sweep/<id>. A tab gives its ids and what differs (its request, its
// progress sentence, how to show the answer); everything else is here, once.
import { api, clearErrors, keepInUrl, showError } from './api.js';
import { $, sleep } from './util.js';

const ENDED = ['done', 'failed', 'cancelled'];

// opts: {tab: the id prefix of its status block (`${tab}-progress`, `-progress-text`, `-status`,
//         `-submit`, `-cancel`, `-results`), form: () => the form, link: the fragment's name
//         (#sweep=<id>, #plan=<id>), noun: 'sweep' | 'plan' (for messages), requestOf: () => the
//         request (may throw a field's error), describe(status, progress) → the progress
//         sentence, show(status) → draws a finished (done or cancelled) sweep}.
// Wires the form's submit and the cancel button; → {follow(id)} to follow a sweep from a link.
export function sweepPoller(opts) {
  const { tab, form } = opts;
  const results = () => $(`#${tab}-results`);
  let current = null; // {id} of the sweep this tab follows; a newer follow replaces it

  // One GET loop: moves the progress bar until the sweep ends → its final status, or null
  // when another follow took over or the poll failed (the error then shown on the form).
  async function poll(me) {
    const bar = $(`#${tab}-progress`), text = $(`#${tab}-progress-text`), status = $(`#${tab}-status`);
    status.hidden = false;
    $(`#${tab}-submit`).disabled = true;
    $(`#${tab}-cancel`).disabled = false;
    try {
      for (;;) {
        const st = (await api('GET', `/v1/sweep/${me.id}`)).data;
        if (current !== me) return null;
        const p = st.progress || {};
        bar.max = Math.max(1, p.total || 1);
        bar.value = p.done || 0;
        text.textContent = opts.describe(st, p);
        status.dataset.state = st.status;
        if (ENDED.includes(st.status)) return st;
        await sleep(400);
      }
    } catch (e) {
      showError(form(), e);
      return null;
    } finally {
      if (current === me) { $(`#${tab}-submit`).disabled = false; $(`#${tab}-cancel`).disabled = true; }
    }
  }

  async function follow(id) {
    const me = { id };
    current = me;
    results().replaceChildren();
    const st = await poll(me);
    if (!st) return;
    if (st.status === 'failed') {
      // The sweep's error is the API's error object ({code, message, field}).
      const err = typeof st.error === 'object' && st.error ? st.error : { message: st.error };
      showError(form(), { message: `the ${opts.noun} failed: ${err.message || 'no reason given'}`, field: err.field });
      return;
    }
    await opts.show(st);
  }

  async function start() {
    const f = form();
    clearErrors(f);
    $(`#${tab}-status`).dataset.state = 'starting';
    results().replaceChildren();
    const from = location.hash;
    let id;
    try {
      id = (await api('POST', '/v1/sweep', opts.requestOf())).data.id;
    } catch (e) {
      showError(f, e);
      return;
    }
    keepInUrl(`#${opts.link}=${id}`, from);
    await follow(id);
  }

  async function cancel() {
    if (!current) return;
    $(`#${tab}-cancel`).disabled = true;
    try { await api('DELETE', `/v1/sweep/${current.id}`); } catch (e) { showError(form(), e); }
  }

  form().addEventListener('submit', (e) => { e.preventDefault(); start(); });
  $(`#${tab}-cancel`).addEventListener('click', cancel);
  return { follow };
}
