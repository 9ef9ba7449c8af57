// test_page.mjs — the web page in a real browser: Debian's chromium driven by playwright-core
// against a fathomd this test starts on a free port with a temporary database. It fills the
// estimate form from presets and checks the step time and charts, puts a bad value in and looks
// for the error beside its field, runs a small search to completion through the progress bar,
// reopens a shared link, draws the scaling and goodput charts, plans a cluster (the front,
// the deadline, a point opened in Step time) and a serving fleet (the Serve tab). Screenshots go to
// tests/out/browser/. Run by scripts/test.d/50-browser.sh (FATHOMD=path/to/fathomd node ...).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(join(root, 'web', 'package.json'));
const { chromium } = require('playwright-core');
const fathomd = process.env.FATHOMD || join(root, 'build', 'fathomd');
const outDir = join(root, 'tests', 'out', 'browser');
mkdirSync(outDir, { recursive: true });
for (const f of readdirSync(outDir)) if (f.startsWith('failed-')) rmSync(join(outDir, f)); // last run's

const results = [];
async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push([name, true]);
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push([name, false]);
    console.log(`FAIL ${name}: ${e.stack || e}`);
    const shot = join(outDir, `failed-${results.length}.png`);
    if (shownPage) await shownPage.screenshot({ path: shot, fullPage: true }).then(() => console.log(`     screenshot: ${shot}`), () => {});
  }
}
let shownPage = null; // the page a failing step photographs
function check(cond, what, got) {
  if (!cond) throw new Error(`${what}${got === undefined ? '' : ` (got ${JSON.stringify(got)})`}`);
}

// Sets the form fields named by data-field under `scope` ('' for the whole page), in order: a
// select takes its option, a checkbox is checked when the value is true, any other input is
// filled with the value.
async function setFields(page, scope, fields) {
  for (const [name, value] of Object.entries(fields)) {
    const field = page.locator(`${scope} [data-field="${name}"]`.trim()).first();
    const kind = await field.evaluate((e) => (e.tagName === 'SELECT' ? 'select' : e.type));
    if (kind === 'select') await field.selectOption(String(value));
    else if (kind === 'checkbox') await (value ? field.check() : field.uncheck());
    else await field.fill(String(value));
  }
}

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
  });
}

async function waitReady(base, proc) {
  for (let i = 0; i < 100; i++) {
    if (proc.exitCode !== null || proc.pid === undefined) throw new Error(`fathomd (${fathomd}) is not running`);
    try { if ((await fetch(`${base}/readyz`)).ok) return; } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('fathomd did not become ready in 10 s');
}

// Is a Chart.js chart drawn on the canvas inside `scope`, with non-blank pixels?
async function chartDrawn(page, scope) {
  return page.evaluate((sel) => {
    const canvas = document.querySelector(`${sel} canvas`);
    if (!canvas || !window.Chart || !window.Chart.getChart(canvas)) return false;
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    let inked = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i] > 0) inked++;
    return inked > 500;
  }, scope);
}

const tmp = mkdtempSync(join(tmpdir(), 'fathom-browser-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const server = spawn(fathomd, ['--listen', `127.0.0.1:${port}`, '--db', join(tmp, 'fathom.db'), '--static', join(root, 'static')],
  { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
let serverLog = '';
server.on('error', (e) => { serverLog += `cannot start ${fathomd}: ${e.message}\n`; });
server.stderr.on('data', (d) => { serverLog += d; });
let context;
const pageErrors = [];
const foreign = [];

try {
  await waitReady(base, server);
  context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
    viewport: { width: 1440, height: 1000 },
  });
  const watch = (page) => {
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    // 4xx answers are part of the test (a bad value); the browser logs each as a console error.
    page.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of 4/.test(m.text())) pageErrors.push(m.text()); });
    // The page must work offline: nothing may be fetched from anywhere but fathomd.
    page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) foreign.push(r.url()); });
  };
  const page = context.pages()[0] || await context.newPage();
  shownPage = page;
  watch(page);
  page.setDefaultTimeout(20000);
  let stepTime, shareHref;

  // A table's verdict cells as a planner sees them at this width: each with a box of its own,
  // inside the screen and inside the table's scroll box as it stands (no swipe); the ones that
  // are not, by their text.
  const outOfView = (cells) => page.evaluate((q) => [...document.querySelectorAll(q)].filter((e) => {
    const b = e.getBoundingClientRect(), w = (e.closest('.table-wrap') || document.body).getBoundingClientRect();
    return !(b.width > 0 && b.height > 0 && b.left >= Math.max(0, w.left) - 0.5 && b.right <= Math.min(window.innerWidth, w.right) + 0.5);
  }).map((e) => e.textContent), cells);
  // A prioritized table (util.js prioritize) refits on the next frame after its width changes:
  // wait until it has been fitted to the width of its box now.
  const fitted = (table) => page.waitForFunction((t) => [...document.querySelectorAll(t)].every((x) => x.dataset.fitted === String(x.parentElement.clientWidth)), table);
  // Every shown button of a table whole: inside its cell, its table's box and the screen, its
  // label not clipped; the ones that are not.
  const buttonsWhole = (table) => page.evaluate((t) => [...document.querySelectorAll(`${t} button`)].filter((b) => b.getClientRects().length).filter((b) => {
    const r = b.getBoundingClientRect(), w = (b.closest('.table-wrap') || document.body).getBoundingClientRect(), td = b.closest('td').getBoundingClientRect();
    return !(r.width > 0 && r.left >= Math.max(0, w.left, td.left) - 0.5 && r.right <= Math.min(window.innerWidth, w.right, td.right) + 0.5 && b.scrollWidth <= b.clientWidth + 1);
  }).map((b) => b.textContent || b.className), table);


  await step('page loads from fathomd with its presets', async () => {
    const resp = await page.goto(`${base}/`);
    check(resp.status() === 200, 'GET / is 200', resp.status());
    check((resp.headers()['content-type'] || '').startsWith('text/html'), 'GET / is text/html', resp.headers()['content-type']);
    await page.waitForSelector('body[data-ready="true"]');
    const models = await page.$$eval('[data-field="model"] option', (o) => o.map((x) => x.value));
    check(models.includes('gpt3-175B'), 'model presets listed', models);
  });

  await step('estimate gpt3-175B on 1024 A100s with TP 8, PP 8: step time and charts', async () => {
    await setFields(page, '', { 'model': 'gpt3-175B', 'system': 'a100_80g', 'execution.num_procs': '1024', 'execution.batch_size': '1024' });
    await page.dispatchEvent('[data-field="execution.batch_size"]', 'change');
    await page.selectOption('[data-field="execution.tensor_par"]', '8');
    await page.selectOption('[data-field="execution.pipeline_par"]', '8');
    const dp = await page.inputValue('[data-field="execution.data_par"]');
    check(dp === '16', 'DP follows as 1024 / (8 × 8)', dp);
    const tps = await page.$$eval('[data-field="execution.tensor_par"] option', (o) => o.map((x) => Number(x.value)));
    check(tps.every((t) => 1024 % t === 0 && 96 % t === 0), 'only TP degrees that divide are offered', tps);
    await page.fill('[data-field="training.tokens"]', '300e9');
    await page.click('#est-submit');
    await page.waitForSelector('#est-results .kpi-value');
    stepTime = await page.textContent('#est-results .kpi:first-child .kpi-value');
    check(/^\d+(\.\d+)? (s|ms|min)$/.test(stepTime), 'step time shown with its unit', stepTime);
    const rate = await page.textContent('#est-results .kpi:nth-child(2) .kpi-value');
    check(/samples\/s/.test(rate), 'sample rate shown', rate);
    check(await chartDrawn(page, '#est-results .chart-bar'), 'step-time breakdown chart drawn');
    const legend = await page.evaluate(() => window.Chart.getChart(document.querySelector('#est-results canvas')).data.datasets.map((d) => d.label));
    check(legend.includes('Forward') && legend.includes('Pipeline bubble'), 'breakdown has forward and bubble parts', legend);
    check(await page.locator('#est-results .mem[data-tier="1"] .mem-fill').count() === 1, 'tier-1 memory bar drawn');
    const rows = await page.locator('#est-results details.stats tbody tr').count();
    check(rows === 96, 'full statistics table', rows);
    const days = await page.textContent('#est-results .run .kpi:first-child .kpi-value');
    check(/\d/.test(days), 'run days shown for a training budget', days);
    shareHref = await page.getAttribute('#est-results .share-link', 'href');
    check(/^#r=[0-9a-f]{64}$/.test(shareHref || ''), 'share link', shareHref);
    await page.screenshot({ path: join(outDir, 'estimate.png'), fullPage: true });
  });

  await step('a bad value shows its error beside the field', async () => {
    await page.fill('[data-field="execution.batch_size"]', '1000');
    await page.click('#est-submit');
    const err = page.locator('.fld:has([data-field="execution.batch_size"]) .field-error');
    await err.waitFor();
    const text = await err.textContent();
    check(/divisible by data_par/.test(text), 'the server’s message for execution.batch_size', text);
    check(!/[{}]/.test(text), 'no raw JSON in the error', text);
    check(await page.locator('[data-field="execution.batch_size"].invalid').count() === 1, 'field marked invalid');
    await page.screenshot({ path: join(outDir, 'field-error.png') });
    await page.fill('[data-field="execution.batch_size"]', '1024');
  });

  await step('a shared link reopens the result', async () => {
    const other = await context.newPage();
    watch(other);
    await other.goto(`${base}/${shareHref}`);
    await other.waitForSelector('#est-results .kpi-value');
    const again = await other.textContent('#est-results .kpi:first-child .kpi-value');
    check(again === stepTime, 'same step time from the link', [again, stepTime]);
    check(await other.inputValue('[data-field="model"]') === 'gpt3-175B', 'model preset restored');
    check(await other.inputValue('[data-field="execution.tensor_par"]') === '8', 'TP restored');
    check(await chartDrawn(other, '#est-results .chart-bar'), 'chart drawn from the link');
    await other.screenshot({ path: join(outDir, 'shared-link.png') });
    // A link whose id is not one is refused on the page, never sent as a path ('../../x' asked
    // for /x).
    const asked = [];
    other.on('request', (q) => asked.push(new URL(q.url()).pathname));
    await other.goto(`${base}/#sweep=../../x`);
    await other.waitForSelector('#banner:not([hidden])');
    const said = await other.textContent('#banner');
    check(/is not a sweep id/.test(said), 'a bad sweep link is named in the banner', said);
    check(!asked.includes('/x'), 'the bad id is not requested', asked);
    await other.close();
  });

  await step('a small search runs to completion through the progress bar', async () => {
    await page.click('#nav-sweep');
    await setFields(page, '#sw-search', {
      'model': 'megatron-126M',
      'system': 'a100_80g',
      'num_procs': '8',
      'max_batch_size': '32',
      'options.top_n': '5',
    });
    await page.click('#sw-submit');
    await page.waitForSelector('#sw-status:not([hidden])');
    await page.waitForFunction(() => /done|failed|cancelled/.test(document.querySelector('#sw-status').dataset.state || ''), null, { timeout: 180000 });
    const state = await page.getAttribute('#sw-status', 'data-state');
    check(state === 'done', 'search finished', [state, await page.textContent('#sw-progress-text')]);
    const [value, max] = await page.$eval('#sw-progress', (p) => [p.value, p.max]);
    check(value === max && max > 1, 'progress bar full', [value, max]);
    await page.waitForSelector('#sw-results table.top tbody tr');
    const rows = await page.locator('#sw-results table.top tbody tr').count();
    check(rows >= 1 && rows <= 5, 'top executions listed', rows);
    check(await chartDrawn(page, '#sw-results .chart-scatter'), 'scatter plot drawn');
    const csv = await page.getAttribute('#sw-results a[download]', 'href');
    const body = await (await fetch(`${base}${csv}`)).text();
    check(body.split('\n')[0].includes('tensor_par'), 'CSV download has a header', body.slice(0, 80));
    await page.screenshot({ path: join(outDir, 'sweep.png'), fullPage: true });
    // The best row opens as a single estimate with its preset recognised.
    await page.click('#sw-results table.top tbody tr:first-child button.open-row');
    await page.waitForFunction(() => !document.querySelector('#tab-estimate').hidden && /megatron-126M/.test(document.querySelector('#est-results .describe')?.textContent || ''));
    check(await page.inputValue('[data-field="model"]') === 'megatron-126M', 'model preset recognised');
    await page.click('#nav-sweep');
  });

  await step('a grid sweep over TP × PP plots every point', async () => {
    // The grid's base is the Estimate tab's request: gpt3-175B on 1024 GPUs again.
    await page.click('#nav-estimate');
    await setFields(page, '', { 'model': 'gpt3-175B', 'execution.num_procs': '1024', 'execution.batch_size': '1024' });
    await page.dispatchEvent('[data-field="execution.batch_size"]', 'change');
    await page.click('#nav-sweep');
    await page.selectOption('#f-kind', 'grid');
    await page.fill('#sw-axes', 'execution.tensor_par = 1, 2, 4, 8\nexecution.pipeline_par = 4, 8');
    await page.click('#sw-submit');
    await page.waitForFunction(() => /done|failed|cancelled/.test(document.querySelector('#sw-status').dataset.state || '') && document.querySelector('#sw-results table.top'), null, { timeout: 120000 });
    check(await page.getAttribute('#sw-status', 'data-state') === 'done', 'grid finished');
    const why = await page.locator('#sw-results .why').textContent().catch(() => '');
    const points = await page.evaluate(() => window.Chart.getChart(document.querySelector('#sw-results canvas')).data.datasets.reduce((n, d) => n + d.data.length, 0));
    check(points >= 4, 'feasible points plotted', [points, why]);
    const best = await page.textContent('#sw-results table.top tbody tr:first-child');
    check(/\d/.test(best), 'a best row', best);
    await page.screenshot({ path: join(outDir, 'grid.png'), fullPage: true });
    // at phone width the grid's rows keep their rate, MFU and memory verdict in view
    await page.setViewportSize({ width: 390, height: 844 });
    await fitted('#sw-results table.top');
    for (const c of ['td.rate', 'td.mfu', 'td.memory']) {
      const out = await outOfView(`#sw-results table.top tbody tr:not(.row-more) ${c}`);
      check(out.length === 0, `grid at 390 px: every ${c} in view`, out);
    }
    await page.locator('#sw-results table.top').screenshot({ path: join(outDir, 'table-grid-390.png') });
    await page.setViewportSize({ width: 1440, height: 1000 });
  });

  await step('a long search can be cancelled', async () => {
    await page.selectOption('#f-kind', 'optimal_execution');
    await page.selectOption('#sw-search [data-field="model"]', 'gpt3-175B');
    // About 15 s of work on two cores: long enough to cancel on the way.
    await setFields(page, '#sw-search', { 'num_procs': '65536', 'max_batch_size': '65536', 'options.fused_activation': 'all' });
    await page.click('#sw-submit');
    await page.waitForFunction(() => ['queued', 'running'].includes(document.querySelector('#sw-status').dataset.state));
    await page.click('#sw-cancel');
    await page.waitForFunction(() => ['done', 'failed', 'cancelled'].includes(document.querySelector('#sw-status').dataset.state), null, { timeout: 60000 });
    const state = await page.getAttribute('#sw-status', 'data-state');
    check(state === 'cancelled', 'search cancelled', state);
  });

  await step('scaling budget and goodput charts', async () => {
    await page.click('#nav-scaling');
    await page.click('#scaling-form button[type="submit"]');
    await page.waitForSelector('#sc-results .kpi-value');
    await page.waitForFunction(() => { const c = document.querySelector('#sc-results canvas'); return c && window.Chart.getChart(c)?.data.datasets[0].data.length > 10; });
    check(await chartDrawn(page, '#sc-results .chart'), 'loss-versus-compute chart drawn');
    await page.screenshot({ path: join(outDir, 'scaling.png'), fullPage: true });
    await page.click('#nav-goodput');
    await page.click('#goodput-form button[type="submit"]');
    await page.waitForSelector('#gp-results .kpi-value');
    check(await chartDrawn(page, '#gp-results .chart'), 'goodput chart drawn');
    await page.screenshot({ path: join(outDir, 'goodput.png'), fullPage: true });
  });

  // ---- What planners hit (issue 6): each step below failed on the page before its fix. ----

  // Every element id once; every label names an input on its own tab (a label's click must
  // never focus a field on another tab).
  await step('ids are unique and every label is bound to an input on its own tab', async () => {
    const bad = await page.evaluate(() => {
      const out = [];
      const seen = new Map();
      for (const n of document.querySelectorAll('[id]')) seen.set(n.id, (seen.get(n.id) || 0) + 1);
      for (const [id, n] of seen) if (n > 1) out.push(`id ${id} ×${n}`);
      for (const l of document.querySelectorAll('label[for]')) {
        const t = document.getElementById(l.htmlFor);
        if (!t) out.push(`label "${l.textContent}" → nothing`);
        else if (t.closest('[role="tabpanel"]') !== l.closest('[role="tabpanel"]')) out.push(`label "${l.textContent}" → another tab`);
      }
      return out;
    });
    check(bad.length === 0, 'unique ids and bound labels', bad);
  });

  await step('letters or nothing in a required number are an error beside it, never a default', async () => {
    await page.click('#nav-estimate');
    await setFields(page, '', { 'model': 'gpt3-175B', 'system': 'a100_80g', 'execution.num_procs': '1024' });
    await page.dispatchEvent('[data-field="execution.num_procs"]', 'change');
    await page.selectOption('[data-field="execution.tensor_par"]', '8');
    await page.selectOption('[data-field="execution.pipeline_par"]', '8');
    const before = await page.$$eval('[data-field^="execution."][data-field$="_par"]', (s) => s.map((x) => x.value));
    let sent = 0;
    const count = (r) => { if (r.url().endsWith('/v1/estimate')) sent++; };
    page.on('request', count);
    for (const [text, why] of [['abc', /must be a number/], ['', /required/]]) {
      await page.fill('[data-field="execution.num_procs"]', text);
      await page.dispatchEvent('[data-field="execution.num_procs"]', 'change');
      check(await page.inputValue('[data-field="execution.num_procs"]') === text, 'the field keeps what was typed', text);
      const after = await page.$$eval('[data-field^="execution."][data-field$="_par"]', (s) => s.map((x) => x.value));
      check(JSON.stringify(after) === JSON.stringify(before), 'TP, PP and DP are not reset', [before, after]);
      await page.click('#est-submit');
      const err = page.locator('.fld:has([data-field="execution.num_procs"]) .field-error');
      await err.waitFor();
      const msg = await err.textContent();
      check(why.test(msg), `error beside GPUs for “${text}”`, msg);
    }
    page.off('request', count);
    check(sent === 0, 'no estimate is requested without a GPU count', sent);
    await page.fill('[data-field="execution.num_procs"]', '1024');
    await page.dispatchEvent('[data-field="execution.num_procs"]', 'change');
    await page.click('#nav-scaling');
    await page.selectOption('#f-law', 'hf2020');
    await page.fill('#f-sc-budget', 'ten');
    await page.click('#scaling-form button[type="submit"]');
    const serr = page.locator('#scaling-form .fld:has(#f-sc-budget) .field-error');
    await serr.waitFor();
    const smsg = await serr.textContent();
    check(/must be a number/.test(smsg) && !/got 0/.test(smsg), 'budget “ten” is an error beside it', smsg);
    await page.fill('#f-sc-budget', '1000');
    await page.click('#nav-estimate');
  });

  await step('edited presets say custom, power follows the system, an empty tier 1 is refused', async () => {
    await page.selectOption('[data-field="model"]', 'gpt3-175B');
    await page.evaluate(() => { for (const d of document.querySelectorAll('#estimate-form details')) d.open = true; });
    await page.waitForFunction(() => document.querySelector('[data-field="model.num_blocks"]')?.value === '96');
    await page.fill('[data-field="model.num_blocks"]', '48');
    const label = await page.$eval('[data-field="model"]', (s) => s.selectedOptions[0].textContent);
    check(/custom model/.test(label), 'the selector says custom model once a field is edited', label);
    await page.fill('[data-field="model.num_blocks"]', '96');
    check(await page.inputValue('[data-field="model"]') === 'gpt3-175B', 'and names the preset again when the edit is undone');
    await page.selectOption('[data-field="system"]', 'h100_sxm');
    await page.waitForFunction(() => document.querySelector('[data-field="training.gpu_power_kw"]').value === '0.7');
    // every preset's own board power, GB300's 1.4 kW included
    const gb300 = await (await fetch(`${base}/v1/presets/systems/gb300_nvl72`)).json();
    check(gb300.power_per_gpu_kw === 1.4, 'gb300_nvl72 states 1.4 kW per GPU', gb300.power_per_gpu_kw);
    await page.selectOption('[data-field="system"]', 'gb300_nvl72');
    await page.waitForFunction((kw) => document.querySelector('[data-field="training.gpu_power_kw"]').value === String(kw), gb300.power_per_gpu_kw);
    await page.selectOption('[data-field="system"]', 'a100_80e');
    const note = await page.textContent('#est-system-note');
    check(/unlimited memory/.test(note), 'a100_80e is explained', note);
    await page.selectOption('[data-field="system"]', 'a100_80g');
    await page.waitForFunction(() => document.querySelector('[data-field="system.mem1.GiB"]')?.value === '80');
    await page.fill('[data-field="system.mem1.GiB"]', '0');
    await page.click('#est-submit');
    const err = page.locator('.fld:has([data-field="system.mem1.GiB"]) .field-error');
    await err.waitFor();
    check(/greater than 0/.test(await err.textContent()), 'tier-1 memory 0 refused beside it');
    await page.fill('[data-field="system.mem1.GiB"]', '80');
    await page.dispatchEvent('[data-field="system.mem1.GiB"]', 'input');
  });

  await step('words a planner understands: MFU, the statistics, the model behind each tab', async () => {
    await page.selectOption('[data-field="system"]', 'a100_80g');
    await page.fill('[data-field="execution.batch_size"]', '1024');
    await page.dispatchEvent('[data-field="execution.batch_size"]', 'change');
    await page.click('#est-submit');
    await page.waitForFunction(() => /MFU/.test(document.querySelector('#est-results .kpis')?.textContent || ''));
    const meanings = await page.$$eval('#est-results details.stats tbody tr', (rows) => rows.map((r) => [r.cells[0].textContent, r.cells[2]?.textContent || '']));
    const unexplained = meanings.filter(([k, m]) => !m || m === k.replace(/_/g, ' '));
    check(meanings.length === 96 && unexplained.length === 0, 'each of the 96 statistics has a one-line meaning', unexplained);
    const footers = {};
    // the tab is shown on the hash change the click makes, not at once: wait for it
    for (const t of ['estimate', 'sweep', 'scaling', 'goodput']) {
      await page.click(`#nav-${t}`);
      await page.waitForFunction((id) => !document.querySelector(`#tab-${id}`).hidden, t);
      footers[t] = await page.textContent('#footer');
    }
    check(!/Calculon/.test(footers.goodput) && /Pollux/.test(footers.goodput), 'the Goodput footer names Pollux', footers.goodput);
    check(/scaling-law calculator|Chinchilla/.test(footers.scaling), 'the Scaling footer names its laws', footers.scaling);
    await page.click('#nav-scaling');
    const sc = await page.textContent('#tab-scaling');
    check(/Transformer-XL/.test(sc) && /WikiText-103/.test(sc), 'Scaling says which loss it is');
    await page.waitForFunction(() => Number(document.querySelector('#f-sc-gpu_price').value) > 0);
    await page.click('#nav-goodput');
    const gp = await page.textContent('#tab-goodput');
    check(/Accumulation steps|accumulation steps/.test(gp) && /single point/.test(gp), 'Goodput explains accumulation and single points');
    check(await page.locator('#tab-goodput a.fit-link').count() === 1, 'Goodput links to the fit');
  });

  // The Chinchilla frontier is drawn once all its requests have answered (or failed).
  const frontierDrawn = () => { const c = document.querySelector('#sc-results canvas'); return c && window.Chart.getChart(c)?.data.datasets[0]?.label === 'compute-optimal loss'; };

  await step('the Chinchilla frontier has all its points (integers past 2^53)', async () => {
    await page.click('#nav-scaling');
    await page.selectOption('#f-law', 'chinchilla');
    await page.click('#scaling-form button[type="submit"]');
    await page.waitForFunction(frontierDrawn);
    const xs = await page.evaluate(() => window.Chart.getChart(document.querySelector('#sc-results canvas')).data.datasets[0].data.map((p) => p.x));
    check(xs.length === 17 && Math.min(...xs) === 1e18, 'the frontier starts at 1e18 with all 17 budgets', [xs.length, Math.min(...xs)]);
    await page.selectOption('#f-law', 'hf2020');
  });

  await step('a search of your own model', async () => {
    await page.click('#nav-estimate');
    await page.selectOption('[data-field="model"]', 'megatron-126M');
    await page.evaluate(() => { for (const d of document.querySelectorAll('#estimate-form details')) d.open = true; });
    await page.waitForFunction(() => document.querySelector('[data-field="model.num_blocks"]')?.value === '12');
    await page.fill('[data-field="model.num_blocks"]', '6');
    await page.click('#nav-sweep');
    await page.selectOption('#f-kind', 'optimal_execution');
    await setFields(page, '#sw-search', {
      'model': '=estimate',
      'system': 'a100_80g',
      'num_procs': '8',
      'max_batch_size': '32',
      'options.top_n': '5',
    });
    // The planner's constraints: no offload, TP at most 1, PP at most 2, exactly batch 32.
    await setFields(page, '#sw-search', {
      'options.no_offload': true,
      'options.exact_batch': true,
      'options.max_tensor_par': '1',
      'options.max_pipeline_par': '2',
      'options.recompute_modules': 'fewest',
    });
    const sent = page.waitForRequest((r) => r.url().endsWith('/v1/sweep') && r.method() === 'POST');
    await page.click('#sw-submit');
    const body = JSON.parse((await sent).postData());
    check(typeof body.model === 'object' && body.model.num_blocks === 6, 'the edited model is searched', body.model);
    check(body.options.recompute_modules === 'fewest', 'the selective-recompute choice is sent', body.options);
    await page.waitForFunction(() => document.querySelector('#sw-status').dataset.state === 'done' && document.querySelector('#sw-results table.top'), null, { timeout: 120000 });
    const layouts = await page.$$eval('#sw-results table.top tbody tr', (trs) => trs.map((r) => [r.cells[2].textContent, r.cells[8].textContent, r.cells[11].textContent]));
    // (the options cell names the row's own options, then its grouped variants after a "+")
    check(layouts.length > 0 && layouts.every(([l, b, o]) => /^1 × [12] × /.test(l) && /^32 /.test(b) && !/offload/.test(o.split('+')[0])), 'every row keeps the constraints', layouts);

  });

  let searched = false;
  await step('GPT-3 175B search: grouped rows, MFU and TFLOP/s columns, every point inside the axes, table in view at 1440 px', async () => {
    await page.setViewportSize({ width: 1440, height: 1000 });
    await page.click('#nav-sweep');
    await setFields(page, '#sw-search', {
      'model': 'gpt3-175B',
      'system': 'a100_80g',
      'num_procs': '1024',
      'max_batch_size': '1024',
      'options.top_n': '10',
      'options.fused_activation': 'true',
      'options.no_offload': false,
      'options.exact_batch': false,
      'options.max_tensor_par': '',
      'options.max_pipeline_par': '',
      'options.recompute_modules': 'none',
    });
    await page.click('#sw-submit');
    await page.waitForFunction(() => ['done', 'failed', 'cancelled'].includes(document.querySelector('#sw-status').dataset.state) && document.querySelector('#sw-results h3'), null, { timeout: 300000 });
    check(await page.locator('#sw-results table.top').count() === 1, 'the search lists layouts', await page.textContent('#sw-results'));
    searched = true;
    const rows = await page.$$eval('#sw-results table.top tbody tr', (trs) => trs.map((r) => [...r.cells].map((c) => c.textContent)));
    const heads = await page.$$eval('#sw-results table.top thead th', (t) => t.map((x) => x.textContent));
    check(heads.includes('MFU') && heads.includes('TFLOP/s per GPU'), 'MFU and TFLOP/s per GPU columns', heads);
    const keys = rows.map((c) => [c[2], c[8], c[9], c[10]].join('|'));
    check(new Set(keys).size === keys.length, 'no two rows share a layout (near-duplicates are grouped)', keys);
    check(await page.locator('#sw-results tr[data-variants]:not([data-variants="0"])').count() >= 1, 'variants are named on their group’s row');
    const [outside, total, listed] = await page.evaluate(() => {
      const c = window.Chart.getChart(document.querySelector('#sw-results canvas'));
      const { x, y } = c.scales;
      let out = 0, n = 0;
      for (const d of c.data.datasets) for (const p of d.data) { n++; if (p.x < x.min || p.x > x.max || p.y < y.min || p.y > y.max) out++; }
      return [out, n, c.data.datasets.find((d) => d.label === 'fits in memory').data.length];
    });
    check(total > 100 && listed >= 1 && outside === 0, 'every plotted point lies inside the axes', { outside, total, listed });
    await fitted('#sw-results table.top');
    const fit = await page.evaluate(() => {
      const w = document.querySelector('#sw-results .table-wrap');
      const btn = document.querySelector('#sw-results table.top tbody tr button.open-row').getBoundingClientRect();
      const last = document.querySelector('#sw-results table.top thead th:last-child').getBoundingClientRect();
      return { scroll: w.scrollWidth - w.clientWidth, btnRight: btn.right, lastRight: last.right, vw: window.innerWidth };
    });
    check(fit.scroll <= 1 && fit.btnRight <= fit.vw && fit.lastRight <= fit.vw, 'the whole table and its Open buttons are in view', fit);
  });

  await step('no horizontal page scroll at 390 px on any tab, before and after a search; screenshots at 390 and 1440 px', async () => {
    // How far the page is wider than the screen, and the outermost elements that stick out.
    const wide = async () => page.evaluate(() => {
      const over = document.documentElement.scrollWidth - window.innerWidth;
      if (over <= 0) return over;
      const out = [...document.querySelectorAll('body *')].filter((n) => n.getBoundingClientRect().right > window.innerWidth + 1 && !n.parentElement.closest('.table-wrap'))
        .filter((n, _, all) => !all.includes(n.parentElement)).slice(0, 5).map((n) => `${n.tagName}.${n.className}#${n.id} → ${Math.round(n.getBoundingClientRect().right)}`);
      return `${over} px: ${out.join(', ')}`;
    });
    for (const [w, h] of [[1440, 1000], [390, 844]]) {
      await page.setViewportSize({ width: w, height: h });
      for (const t of ['estimate', 'sweep', 'plan', 'serve', 'scaling', 'goodput']) {
        await page.click(`#nav-${t}`);
        await page.waitForFunction((id) => !document.querySelector(`#tab-${id}`).hidden, t);
        // Charts drawn at 1440 px resize on the next frames after the viewport shrinks (a
        // ResizeObserver): wait for the layout to settle, then measure.
        if (w === 390) await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth, null, { timeout: 15000 }).catch(() => {});
        const over = await wide();
        if (w === 390) check(typeof over === 'number' && over <= 0, `${t} at 390 px is not wider than the screen`, over);
        const navOk = await page.evaluate(() => [...document.querySelectorAll('header .api-link, nav button')].every((b) => b.getBoundingClientRect().right <= window.innerWidth));
        check(navOk, `${t} at ${w} px: every tab and the API link are on screen`);
        await page.screenshot({ path: join(outDir, `tab-${t}-${w}.png`), fullPage: true });
      }
    }
    // A fresh page at 390 px, before any search or result: every tab's empty state.
    const fresh = await context.newPage();
    watch(fresh);
    await fresh.setViewportSize({ width: 390, height: 844 });
    await fresh.goto(`${base}/`);
    await fresh.waitForSelector('body[data-ready="true"]');
    for (const t of ['estimate', 'sweep', 'plan', 'serve', 'scaling', 'goodput']) {
      await fresh.click(`#nav-${t}`);
      await fresh.waitForFunction((id) => !document.querySelector(`#tab-${id}`).hidden, t);
      const over = await fresh.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      check(over <= 0, `the ${t} tab at 390 px before any result`, over);
    }
    await fresh.close();
    check(searched, 'the search above ran, so “after a search” was measured');
    await page.setViewportSize({ width: 1440, height: 1000 });
  });

  // The modern step model on the page. Expectations come from the API's answers and from the
  // presets' published figures, never from what the page prints.
  await step('llama3-70B on 64 H100s, TP 4 × PP 8: modern defaults, parameters, MFU, memory by stage, the CP line', async () => {
    await page.setViewportSize({ width: 1440, height: 1000 });
    await page.click('#nav-estimate');
    const sys = await (await fetch(`${base}/v1/presets/systems/h100_sxm`)).json();
    const listed = (await (await fetch(`${base}/v1/presets`)).json()).models.find((m) => m.name === 'llama3-70B');
    // The preset's comment quotes the published parameter count ("70,553,706,496 parameters").
    const published = Number((String(listed?.comment).match(/([\d,]+) parameters/) || [])[1]?.replace(/,/g, ''));
    check(published > 0, 'the preset quotes its parameter count', listed);
    await page.selectOption('[data-field="model"]', 'llama3-70B');
    await page.selectOption('[data-field="system"]', 'h100_sxm');
    await page.waitForFunction(() => document.querySelector('[data-field="model.kv_heads"]') && document.querySelector('[data-field="system.attention_efficiency"]'));
    await page.fill('[data-field="execution.num_procs"]', '64');
    await page.fill('[data-field="execution.batch_size"]', '64');
    await page.dispatchEvent('[data-field="execution.batch_size"]', 'change');
    await page.selectOption('[data-field="execution.tensor_par"]', '4');
    await page.selectOption('[data-field="execution.pipeline_par"]', '8');
    const val = (k) => page.$eval(`[data-field="execution.${k}"]`, (x) => (x.type === 'checkbox' ? x.checked : x.value));
    check(await val('data_par') === '2', 'DP follows as 64 / (4 × 1 × 8)', await val('data_par'));
    const wantFp8 = 'float8' in (sys.matrix || {});
    const got = {};
    for (const k of ['attention_kernel', 'fp8', 'tensor_par_comm_type', 'seq_par_ag_redo', 'activation_recompute', 'datatype', 'zero_stage', 'data_par_overlap']) got[k] = await val(k);
    const want = { attention_kernel: 'fused', fp8: wantFp8, tensor_par_comm_type: 'rs_ag', seq_par_ag_redo: true, activation_recompute: 'attn_only', datatype: 'bfloat16', zero_stage: '1', data_par_overlap: true };
    check(JSON.stringify(got) === JSON.stringify(want), 'the modern defaults for a modern preset', { got, want });
    check(wantFp8, 'h100_sxm has a float8 rate, so FP8 is on');
    // Every split offered multiplies to the GPU count: TP × CP × PP × DP = num_procs.
    const opts = async (k) => page.$$eval(`[data-field="execution.${k}"] option`, (o) => o.map((x) => Number(x.value)));
    const [tps, cps, pps] = [await opts('tensor_par'), await opts('context_par'), await opts('pipeline_par')];
    check(tps.every((t) => 64 % t === 0 && (8 % t === 0 || t % 8 === 0)) && cps.every((c) => (64 / 4) % c === 0 && 8192 % (2 * c) === 0) && pps.every((p) => 64 % (4 * p) === 0 && 80 % p === 0), 'only dividing splits are offered', { tps, cps, pps });

    const answer = () => page.waitForResponse((r) => r.url().endsWith('/v1/estimate') && r.request().method() === 'POST');
    let pending = answer();
    await page.click('#est-submit');
    let res = await pending;
    const sent = JSON.parse(res.request().postData());
    check(res.status() === 200, 'the estimate is answered', [res.status(), await res.text()]);
    const body = await res.json();
    const s = body.summary;
    const e = sent.execution;
    check(e.attention_kernel === 'fused' && e.fp8 === true && e.tensor_par_comm_type === 'rs_ag' && e.zero_stage === 1 && e.context_par === 1, 'the request carries the modern options', e);
    check(e.tensor_par * e.context_par * e.pipeline_par * e.data_par === e.num_procs, 'TP × CP × PP × DP = num_procs', e);
    await page.waitForSelector('#est-results [data-kpi="parameters"]');
    const params = await page.textContent('#est-results [data-kpi="parameters"] .kpi-value');
    check(Number(params.replace(/\D/g, '')) === s.parameters_total && s.parameters_total === published, 'the parameter count shown is the API’s and the published one', { params, api: s.parameters_total, published });
    const fpt = await page.textContent('#est-results [data-kpi="flops_per_token"] .kpi-value');
    check(Math.abs(parseFloat(fpt.replace(/,/g, '')) - s.model_flops_per_token / 1e9) / (s.model_flops_per_token / 1e9) < 0.01, 'model FLOPs per token shown', [fpt, s.model_flops_per_token]);
    const mfu = await page.textContent('#est-results .kpi:nth-child(3) .kpi-value');
    check(s.mfu > 0 && Math.abs(parseFloat(mfu) - 100 * s.mfu) < 0.1, 'MFU shown is the API’s mfu', [mfu, s.mfu]);
    const tf = await page.textContent('#est-results [data-kpi="tflops_per_proc"] .kpi-value');
    check(Math.abs(parseFloat(tf.replace(/,/g, '')) - s.tflops_per_proc) / s.tflops_per_proc < 0.01, 'TFLOP/s per GPU shown', [tf, s.tflops_per_proc]);
    const tok = await page.textContent('#est-results [data-kpi="tokens_per_proc"] .kpi-value');
    check(Math.abs(parseFloat(tok.replace(/,/g, '')) - s.tokens_per_s_per_proc) / s.tokens_per_s_per_proc < 0.01, 'tokens/s per GPU shown', [tok, s.tokens_per_s_per_proc]);
    const table = await page.$$eval('#est-results table.stage-mem-table tbody tr', (rows) => rows.map((r) => r.cells[0].textContent));
    check(table.length === 8 && table.at(-2) === 'total' && table.at(-3).startsWith('reserve') && table.at(-1).startsWith('against'), 'the stage memory table: weights … the reserve, total, the verdict against capacity', table);
    const heavy = await page.$$eval('#est-results table.stage-mem-table thead th.heaviest', (t) => t.map((x) => x.dataset.stage));
    check(heavy.length === 1 && heavy[0] === s.memory.heaviest_stage, 'the heaviest stage is marked as the API says', [heavy, s.memory.heaviest_stage]);
    const bpp = await page.textContent('#est-results .bpp');
    check(bpp.includes(`optimizer state ${s.memory.bytes_per_parameter.optimizer}`), 'bytes per parameter shown', bpp);
    let legend = await page.evaluate(() => window.Chart.getChart(document.querySelector('#est-results canvas')).data.datasets.map((d) => d.label));
    check(!legend.some((l) => /^CP/.test(l)), 'no context-parallel line without context parallelism', legend);
    await page.screenshot({ path: join(outDir, 'estimate-modern.png'), fullPage: true });

    // Context parallelism 2: DP becomes 1 and the context-parallel line appears.
    await page.selectOption('[data-field="execution.context_par"]', '2');
    check(await val('data_par') === '1', 'DP follows as 64 / (4 × 2 × 8)', await val('data_par'));
    pending = answer();
    await page.click('#est-submit');
    res = await pending;
    check(res.status() === 200, 'the CP 2 estimate is answered', [res.status(), await res.text()]);
    const cp = (await res.json()).summary.time_breakdown_s.context_parallel_comm;
    check(cp > 0, 'the API prices the context-parallel ring', cp);
    await page.waitForFunction(() => /CP 2/.test(document.querySelector('#est-results .describe')?.textContent || ''));
    legend = await page.evaluate(() => window.Chart.getChart(document.querySelector('#est-results canvas')).data.datasets.map((d) => d.label));
    check(legend.some((l) => /^CP comm/.test(l)), 'the breakdown gains the context-parallel line', legend);
    // Its link reopens it with the modern options as they were sent.
    const href = await page.getAttribute('#est-results .share-link', 'href');
    const stepShown = await page.textContent('#est-results .kpi:first-child .kpi-value');
    const other = await context.newPage();
    watch(other);
    await other.goto(`${base}/${href}`);
    await other.waitForSelector('#est-results [data-kpi="parameters"]');
    const back = {};
    for (const k of ['context_par', 'data_par', 'attention_kernel', 'fp8', 'tensor_par_comm_type', 'zero_stage']) back[k] = await other.$eval(`[data-field="execution.${k}"]`, (x) => (x.type === 'checkbox' ? x.checked : x.value));
    check(JSON.stringify(back) === JSON.stringify({ context_par: '2', data_par: '1', attention_kernel: 'fused', fp8: true, tensor_par_comm_type: 'rs_ag', zero_stage: '0' }), 'the link restores the modern options', back);
    check(await other.textContent('#est-results .kpi:first-child .kpi-value') === stepShown, 'same step time from the link');
    await other.close();
  });

  await step('the measured runs: every row of GET /v1/validation, errors and reasons, mean and worst', async () => {
    const m = (await (await fetch(`${base}/v1/validation`)).json()).measured;
    await page.click('#measured summary');
    await page.waitForSelector('#measured tbody tr');
    const rows = await page.$$eval('#measured tbody tr', (trs) => trs.map((r) => ({ id: r.dataset.id, cells: [...r.cells].map((c) => c.textContent),
      warn: r.querySelector('td.err details.warn-mark')?.getAttribute('title') ?? null })));
    check(rows.length === m.rows.length && m.rows.length > 0, 'one row per measured run', [rows.length, m.rows.length]);
    const withError = m.rows.filter((r) => r.expressible && typeof r.error_pct === 'number');
    check(withError.length > 0, 'some runs are modelled');
    for (const r of m.rows) {
      const row = rows.find((x) => x.id === r.id);
      check(row, `row ${r.id} shown`);
      if (r.expressible && typeof r.error_pct === 'number') {
        check(Math.abs(parseFloat(row.cells[3].replace(/\s/g, '')) - r.error_pct) < 0.06, `${r.id}: the error shown is the API’s`, [row.cells[3], r.error_pct]);
        // the estimate's warnings marked in the row, the reasons on hover (title)
        const title = row.warn;
        check((r.warnings || []).length === 0 ? title === null : r.warnings.every((w) => title && title.includes(w.code)),
          `${r.id}: its ${(r.warnings || []).length} warnings marked in the row`, [title, r.warnings]);
      } else {
        check(row.cells.join(' ').includes(r.reason), `${r.id}: the reason it is not modelled`, [row.cells, r.reason]);
      }
    }
    const summary = await page.textContent('#measured .measured-summary');
    const nums = (summary.match(/[\d.]+(?= %)/g) || []).map(Number);
    check(nums.length >= 2 && Math.abs(nums[0] - m.mean_abs_error_pct) < 0.06 * Math.max(1, m.mean_abs_error_pct / 10) && Math.abs(nums[1] - m.max_abs_error_pct) < 0.06 * Math.max(1, m.max_abs_error_pct / 10), 'mean and worst error as the API says', [summary, m.mean_abs_error_pct, m.max_abs_error_pct]);
    await page.screenshot({ path: join(outDir, 'measured.png'), fullPage: true });
    check(m.rows.some((r) => (r.warnings || []).length > 0), 'some measured run carries a warning (NVIDIA’s tuned rows run near the published MFU)', m.rows.map((r) => r.warnings));
    // a run with selective recompute names it, and Open estimates it as the rule built it
    const sel = m.rows.find((r) => r.recompute_modules);
    check(sel, 'some run assumes selective recompute of modules', m.rows.map((r) => r.recompute));
    const selCells = rows.find((x) => x.id === sel.id).cells;
    check(sel.recompute_modules.every((mod) => selCells[9].includes(mod)), `${sel.id}: its recompute modules are shown`, selCells);
    // a run whose row states its recompute says so; the rule's choices do not
    const stated = m.rows.filter((r) => r.recompute_from === 'row').map((r) => r.id);
    check(stated.length > 0, 'some run states its recompute', m.rows.map((r) => r.recompute_from));
    for (const r of m.rows.filter((x) => x.expressible)) {
      const shown = rows.find((x) => x.id === r.id).cells[9].includes('as the run states');
      check(shown === stated.includes(r.id), `${r.id}: whether the recompute is the run's own is shown`, rows.find((x) => x.id === r.id).cells[9]);
    }
    const pending = page.waitForResponse((r) => r.url().endsWith('/v1/estimate') && r.request().method() === 'POST');
    await page.click(`#measured tr[data-id="${sel.id}"] button.open-run`);
    const res = await pending;
    const sent = JSON.parse(res.request().postData());
    check(res.status() === 200, `${sel.id}: the opened run is estimated`, [res.status(), await res.text()]);
    check(JSON.stringify(sent.execution.recompute_modules) === JSON.stringify(sel.recompute_modules) &&
      sent.execution.expert_par === sel.estimate_request.execution.expert_par,
      `${sel.id}: the form sends the rule's execution`, [sent.execution, sel.estimate_request.execution]);
    const opened = (await res.json()).summary;
    check(opened.step_time_s === sel.step_time_s, `${sel.id}: the same step time as the table`, sel.step_time_s);
    // and the same memory: the form carries FP8 primary weights and bfloat16 gradients too
    const rule = await (await fetch(`${base}/v1/estimate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(sel.estimate_request) })).json();
    check(opened.mem_tier1_bytes === rule.summary.mem_tier1_bytes, `${sel.id}: the same memory as the rule's request`, [opened.mem_tier1_bytes, rule.summary.mem_tier1_bytes]);
  });

  await step('after a modern estimate: no horizontal scroll at 390 px on any tab; a Calculon preset brings Calculon’s defaults back', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const t of ['estimate', 'sweep', 'plan', 'serve', 'scaling', 'goodput']) {
      await page.click(`#nav-${t}`);
      await page.waitForFunction((id) => !document.querySelector(`#tab-${id}`).hidden, t);
      await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth, null, { timeout: 15000 }).catch(() => {});
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      check(over <= 0, `${t} at 390 px after a modern estimate`, over);
      if (t === 'estimate') await page.screenshot({ path: join(outDir, 'estimate-modern-390.png'), fullPage: true });
    }
    await page.setViewportSize({ width: 1440, height: 1000 });
    await page.click('#nav-estimate');
    await page.selectOption('[data-field="model"]', 'gpt3-175B');
    await page.waitForFunction(() => !document.querySelector('[data-field="model.kv_heads"]') && document.querySelector('[data-field="model.num_blocks"]')?.value === '96');
    const val = (k) => page.$eval(`[data-field="execution.${k}"]`, (x) => (x.type === 'checkbox' ? x.checked : x.value));
    const got = {};
    for (const k of ['attention_kernel', 'fp8', 'tensor_par_comm_type', 'context_par', 'zero_stage']) got[k] = await val(k);
    check(JSON.stringify(got) === JSON.stringify({ attention_kernel: 'unfused', fp8: false, tensor_par_comm_type: 'ar', context_par: '1', zero_stage: '0' }), 'Calculon’s defaults for a Calculon preset', got);
    // A Calculon model turned into the modern block: its own fields, kv_heads = attn_heads.
    await page.selectOption('[data-field="model"]', 'megatron-126M');
    await page.waitForFunction(() => document.querySelector('[data-field="model.num_blocks"]')?.value === '12');
    await page.click('#est-modern');
    await page.waitForSelector('[data-field="model.kv_heads"]');
    const [kv, heads] = [await page.inputValue('[data-field="model.kv_heads"]'), await page.inputValue('[data-field="model.attn_heads"]')];
    check(kv === heads, 'the modern block starts as multi-head attention', [kv, heads]);
    const label = await page.$eval('[data-field="model"]', (x) => x.selectedOptions[0].textContent);
    check(/custom model/.test(label), 'and is a custom model', label);
    check(await val('attention_kernel') === 'fused', 'with the modern defaults', await val('attention_kernel'));
    await page.fill('[data-field="execution.num_procs"]', '8');
    await page.fill('[data-field="execution.batch_size"]', '32');
    await page.dispatchEvent('[data-field="execution.batch_size"]', 'change');
    const pending = page.waitForResponse((r) => r.url().endsWith('/v1/estimate') && r.request().method() === 'POST');
    await page.click('#est-submit');
    const res = await pending;
    const sent = JSON.parse(res.request().postData());
    check(typeof sent.model === 'object' && sent.model.kv_heads === Number(heads), 'the modern fields are sent', sent.model);
    check(res.status() === 200, 'the modern block is estimated', [res.status(), await res.text()]);
    const p = (await res.json()).summary.parameters_total;
    await page.waitForFunction((n) => document.querySelector('#est-results [data-kpi="parameters"] .kpi-value')?.textContent.replace(/\D/g, '') === String(n), p);
  });

  await step('a search with the attention kernel and FP8 as constraints', async () => {
    await page.click('#nav-sweep');
    await page.selectOption('#f-kind', 'optimal_execution');
    await setFields(page, '#sw-search', {
      'model': 'llama3-8B',
      'system': 'h100_sxm',
      'datatype': 'bfloat16',
      'num_procs': '8',
      'max_batch_size': '16',
      'options.top_n': '5',
      'options.attention_kernel': 'fused',
      'options.fp8': 'all',
      'options.context_par': '2',
      'options.zero_stage': 'all',
    });
    const sent = page.waitForRequest((r) => r.url().endsWith('/v1/sweep') && r.method() === 'POST');
    await page.click('#sw-submit');
    const body = JSON.parse((await sent).postData());
    check(body.options.attention_kernel === 'fused' && body.options.fp8 === 'all', 'the constraints are sent as the API names them', body.options);
    check(body.options.context_par === 2 && body.options.zero_stage === 'all', 'context_par as a number, zero_stage as "all"', body.options);
    await page.waitForFunction(() => ['done', 'failed', 'cancelled'].includes(document.querySelector('#sw-status').dataset.state) && document.querySelector('#sw-results h3'), null, { timeout: 180000 });
    check(await page.getAttribute('#sw-status', 'data-state') === 'done', 'search finished', await page.textContent('#sw-results'));
    const other = await page.$$eval('#sw-results table.top tbody tr', (trs) => trs.map((r) => r.cells[11].textContent.split('+')[0]));
    check(other.length > 0 && other.every((o) => /fused attention/.test(o)), 'every listed layout uses fused attention', other);
    check(other.every((o) => /CP 2/.test(o)), 'every listed layout splits the sequence in two', other);
    await setFields(page, '#sw-search', {
      'options.attention_kernel': 'unfused',
      'options.fp8': 'false',
      'options.context_par': '1',
      'options.zero_stage': 'calculon',
    });
  });

  // Mixture of experts on the page. Expectations come from the API's answers, the preset file
  // and its published figures, never from what the page prints.
  await step('mixtral-8x7B on 32 H100s: the expert fields from the preset, sent, active parameters, the all-to-all line, expert memory; 390 px', async () => {
    await page.setViewportSize({ width: 1440, height: 1000 });
    await page.click('#nav-estimate');
    const sys = await (await fetch(`${base}/v1/presets/systems/h100_sxm`)).json();
    const mx = await (await fetch(`${base}/v1/presets/models/mixtral-8x7B`)).json();
    const listed = (await (await fetch(`${base}/v1/presets`)).json()).models.find((m) => m.name === 'mixtral-8x7B');
    // The comment quotes the published counts ("46,702,792,704 parameters, 12,879,925,248 active").
    const published = Number((String(listed?.comment).match(/([\d,]+) active/) || [])[1]?.replace(/,/g, ''));
    check(published > 0, 'the preset quotes its active parameter count', listed);
    await page.selectOption('[data-field="model"]', 'mixtral-8x7B');
    await page.selectOption('[data-field="system"]', 'h100_sxm');
    await page.waitForFunction(() => document.querySelector('[data-field="model.moe.num_experts"]') && !document.querySelector('#est-moe-exec').hidden);
    for (const [k, v] of Object.entries(mx.moe)) {
      const shown = await page.$eval(`[data-field="model.moe.${k}"]`, (x) => (x.type === 'checkbox' ? x.checked : x.value));
      check(String(shown) === String(v), `model.moe.${k} is the preset's`, [shown, v]);
    }
    await page.fill('[data-field="execution.num_procs"]', '32');
    await page.fill('[data-field="execution.batch_size"]', '64');
    await page.dispatchEvent('[data-field="execution.batch_size"]', 'change');
    await page.selectOption('[data-field="execution.tensor_par"]', '2');
    await page.selectOption('[data-field="execution.pipeline_par"]', '4');
    const val = (k) => page.$eval(`[data-field="execution.${k}"]`, (x) => (x.type === 'checkbox' ? x.checked : x.value));
    check(await val('data_par') === '4', 'DP follows as 32 / (2 × 4)', await val('data_par'));
    // EP divides the experts and, times ETP, TP × DP; by default the largest that fits tier 0.
    const n = mx.moe.num_experts, fold = 2 * 4;
    const eps = await page.$$eval('[data-field="execution.expert_par"] option', (o) => o.map((x) => Number(x.value)));
    const etp = Number(await val('expert_tensor_par'));
    check(eps.length > 1 && eps.every((d) => n % d === 0 && fold % (d * etp) === 0), 'only expert_par values that divide are offered', { eps, etp });
    const want = Math.max(...[...Array(n).keys()].map((i) => i + 1).filter((d) => n % d === 0 && fold % d === 0 && d <= sys.networks[0].size));
    check(Number(await val('expert_par')) === want && etp === 1, 'the default: ETP 1, EP the largest that fits the NVLink domain', [await val('expert_par'), want]);
    // The API folds CP in too (llm_moe.c fold_size): TP 2 × CP 2 × PP 8 leaves DP 1, where
    // TP × DP alone (2) would hide EP 4.
    await page.selectOption('[data-field="execution.context_par"]', '2');
    await page.selectOption('[data-field="execution.pipeline_par"]', '8');
    const cpEps = await page.$$eval('[data-field="execution.expert_par"] option', (o) => o.map((x) => Number(x.value)));
    check(await val('data_par') === '1' && cpEps.includes(4) && cpEps.every((d) => n % d === 0 && 4 % d === 0),
      'with CP, EP × ETP divides TP × CP × DP', cpEps);
    await page.selectOption('[data-field="execution.context_par"]', '1');
    await page.selectOption('[data-field="execution.pipeline_par"]', '4');
    check(await val('data_par') === '4' && Number(await val('expert_par')) === want, 'and back at CP 1', await val('expert_par'));

    const answer = () => page.waitForResponse((r) => r.url().endsWith('/v1/estimate') && r.request().method() === 'POST');
    let pending = answer();
    await page.click('#est-submit');
    let res = await pending;
    let sent = JSON.parse(res.request().postData());
    check(res.status() === 200, 'the MoE estimate is answered', [res.status(), await res.text()]);
    const s = (await res.json()).summary;
    check(sent.model === 'mixtral-8x7B', 'the unedited preset goes by name (with its experts)', sent.model);
    const e = sent.execution;
    check(e.expert_par === want && e.expert_tensor_par === 1 && e.expert_par_net === 0 && e.moe_a2a_overlap === false &&
      !('moe_capacity_factor' in e) && !('moe_load_imbalance' in e), 'the expert execution fields are sent (empty ones left to the API)', e);
    await page.waitForSelector('#est-results [data-kpi="parameters_active"]');
    const active = await page.textContent('#est-results [data-kpi="parameters_active"] .kpi-value');
    check(Number(active.replace(/\D/g, '')) === s.parameters_active && s.parameters_active === published, 'active parameters shown are the API’s and the published figure', { active, api: s.parameters_active, published });
    const total = await page.textContent('#est-results [data-kpi="parameters"] .kpi-value');
    check(Number(total.replace(/\D/g, '')) === s.parameters_total && s.parameters_total > s.parameters_active, 'total parameters beside them', [total, s.parameters_total]);
    check(s.time_breakdown_s.expert_parallel_comm > 0, 'the API prices the all-to-all', s.time_breakdown_s);
    const legend = await page.evaluate(() => window.Chart.getChart(document.querySelector('#est-results canvas')).data.datasets.map((d) => d.label));
    check(legend.some((l) => /^Expert-parallel all-to-all/.test(l)), 'the breakdown has the expert-parallel line', legend);
    const tier = await page.getAttribute('#est-results .a2a-tier', 'data-tier');
    check(tier === String(s.expert_parallel_tier), 'the all-to-all’s tier is the API’s', [tier, s.expert_parallel_tier]);
    const routed = await page.textContent('#est-results .experts-line .routed');
    check(s.routed_expert_compute_s > 0 && (routed.includes(`${+(s.routed_expert_compute_s * 1e3).toPrecision(3)} ms`) || routed.includes(`${+s.routed_expert_compute_s.toPrecision(3)} s`)), 'routed-expert compute shown', [routed, s.routed_expert_compute_s]);
    const parts = await page.$$eval('#est-results table.stage-mem-table tr[data-part]', (r) => r.map((x) => x.dataset.part));
    check(s.memory.stages[0].expert.weights > 0 && parts.join() === 'expert,non_expert', 'expert and non-expert memory rows', parts);
    check(/EP 8/.test(await page.textContent('#est-results .describe')), 'the summary line names EP');
    await page.screenshot({ path: join(outDir, 'estimate-moe.png'), fullPage: true });
    // Its link reopens it: the preset named again, the expert fields as they were sent.
    const href = await page.getAttribute('#est-results .share-link', 'href');
    const stepShown = await page.textContent('#est-results .kpi:first-child .kpi-value');
    const other = await context.newPage();
    watch(other);
    await other.goto(`${base}/${href}`);
    await other.waitForSelector('#est-results [data-kpi="parameters_active"]');
    check(await other.inputValue('[data-field="model"]') === 'mixtral-8x7B', 'the link names the preset', await other.inputValue('[data-field="model"]'));
    const back = {};
    for (const k of ['expert_par', 'expert_tensor_par', 'expert_par_net']) back[k] = await other.inputValue(`[data-field="execution.${k}"]`);
    check(JSON.stringify(back) === JSON.stringify({ expert_par: String(want), expert_tensor_par: '1', expert_par_net: '0' }), 'the link restores the expert fields', back);
    check(await other.isVisible('#est-moe-exec'), 'and shows the expert group');
    check(await other.textContent('#est-results .kpi:first-child .kpi-value') === stepShown, 'same step time from the link');
    await other.close();

    // An edited expert field makes a custom model that carries its moe member.
    await page.fill('[data-field="model.moe.top_k"]', '1');
    await page.dispatchEvent('[data-field="model.moe.top_k"]', 'input');
    pending = answer();
    await page.click('#est-submit');
    res = await pending;
    sent = JSON.parse(res.request().postData());
    check(res.status() === 200 && typeof sent.model === 'object' && JSON.stringify(sent.model.moe) === JSON.stringify({ ...mx.moe, top_k: 1 }), 'the edited model is sent with its experts', [res.status(), sent.model]);
    const s1 = (await res.json()).summary;
    await page.waitForFunction((x) => document.querySelector('#est-results [data-kpi="parameters_active"] .kpi-value')?.textContent.replace(/\D/g, '') === String(x), s1.parameters_active);
    check(s1.parameters_active < s.parameters_active, 'one expert per token is fewer active parameters', [s1.parameters_active, s.parameters_active]);

    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth, null, { timeout: 15000 }).catch(() => {});
    const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(over <= 0, 'no horizontal scroll at 390 px after the MoE estimate', over);
    await page.screenshot({ path: join(outDir, 'estimate-moe-390.png'), fullPage: true });
    await page.setViewportSize({ width: 1440, height: 1000 });
  });

  await step('deepseek-v3 on 2048 H100s: 61 blocks over 16 stages, MLA and MTP from the preset, EP 64 on the network that connects it', async () => {
    const ds = await (await fetch(`${base}/v1/presets/models/deepseek-v3`)).json();
    const sys = await (await fetch(`${base}/v1/presets/systems/h100_sxm`)).json();
    await page.selectOption('[data-field="model"]', 'deepseek-v3');
    await page.waitForFunction(() => document.querySelector('[data-field="model.mla.kv_lora_rank"]') && !document.querySelector('#est-moe-exec').hidden);
    for (const [k, v] of [...Object.entries(ds.mla).map(([k, v]) => [`mla.${k}`, v]), ['mtp_blocks', ds.mtp_blocks], ['moe.shared_experts', ds.moe.shared_experts], ['moe.first_dense_blocks', ds.moe.first_dense_blocks]]) {
      check(await page.inputValue(`[data-field="model.${k}"]`) === String(v), `model.${k} is the preset's`, [await page.inputValue(`[data-field="model.${k}"]`), v]);
    }
    await page.fill('[data-field="execution.num_procs"]', '2048');
    await page.fill('[data-field="execution.batch_size"]', '4096');
    await page.dispatchEvent('[data-field="execution.batch_size"]', 'change');
    await page.selectOption('[data-field="execution.tensor_par"]', '1');
    const pps = await page.$$eval('[data-field="execution.pipeline_par"] option', (o) => o.map((x) => Number(x.value)));
    check(pps.includes(16) && pps.every((p) => 2048 % p === 0 && p <= ds.num_blocks), 'PP 16 is offered for 61 blocks (the API splits them unevenly)', pps);
    // PP 2 holds 31 blocks per stage: every interleaving up to 31 is offered, 8 among them,
    // which the API takes as uneven chunks of 4 and 3 blocks
    await page.selectOption('[data-field="execution.pipeline_par"]', '2');
    const vps = await page.$$eval('[data-field="execution.pipeline_interleaving"] option', (o) => o.map((x) => Number(x.value)));
    check(vps.length === 31 && vps.includes(8) && vps.at(-1) === 31, 'interleaving 1 … 31 is offered for 31 blocks per stage, uneven ones too', vps);
    await page.selectOption('[data-field="execution.pipeline_par"]', '16');
    const dp = Number(await page.inputValue('[data-field="execution.data_par"]'));
    check(dp === 128, 'DP follows as 2048 / 16', dp);
    await page.selectOption('[data-field="execution.expert_par"]', '64');
    const nets = await page.$$eval('[data-field="execution.expert_par_net"] option', (o) => o.map((x) => Number(x.value)));
    check(nets.length > 0 && nets.every((i) => sys.networks[i].size >= 64), 'only networks that connect 64 GPUs are offered for the all-to-all', nets);
    await page.fill('[data-field="execution.recompute_modules"]', 'moe_act, mla_up_proj');
    const pending = page.waitForResponse((r) => r.url().endsWith('/v1/estimate') && r.request().method() === 'POST');
    await page.click('#est-submit');
    const res = await pending;
    const sent = JSON.parse(res.request().postData());
    check(res.status() === 200, 'the DeepSeek-V3 estimate is answered', [res.status(), await res.text()]);
    const s = (await res.json()).summary;
    check(sent.model === 'deepseek-v3' && sent.execution.expert_par === 64 && sent.execution.pipeline_par === 16 && sent.execution.expert_par_net === nets[0], 'EP 64 over PP 16 is sent', sent.execution);
    check(JSON.stringify(sent.execution.recompute_modules) === '["moe_act","mla_up_proj"]' && s.time_breakdown_s.recompute > 0,
      'the selective-recompute modules typed are sent as a list, and the API reruns them', [sent.execution.recompute_modules, s.time_breakdown_s.recompute]);
    check(s.expert_parallel_tier === nets[0], 'the API runs the all-to-all on that tier', s.expert_parallel_tier);
    await page.waitForFunction((x) => document.querySelector('#est-results [data-kpi="parameters_active"] .kpi-value')?.textContent.replace(/\D/g, '') === String(x), s.parameters_active);
    check(await page.getAttribute('#est-results .a2a-tier', 'data-tier') === String(s.expert_parallel_tier), 'the tier shown is the API’s');
    await page.screenshot({ path: join(outDir, 'estimate-deepseek-v3.png'), fullPage: true });
  });

  await step('a dense preset after the MoE one sends no moe member and no expert fields; the experts can be taken away', async () => {
    await page.selectOption('[data-field="model"]', 'llama3-8B');
    await page.waitForFunction(() => !document.querySelector('[data-field^="model.moe"]') && document.querySelector('#est-moe-exec').hidden);
    const answer = () => page.waitForResponse((r) => r.url().endsWith('/v1/estimate') && r.request().method() === 'POST');
    let pending = answer();
    await page.click('#est-submit');
    let res = await pending;
    let sent = JSON.parse(res.request().postData());
    check(res.status() === 200, 'the dense estimate is answered', [res.status(), await res.text()]);
    check(sent.model === 'llama3-8B' || (typeof sent.model === 'object' && !('moe' in sent.model)), 'no moe member', sent.model);
    check(!Object.keys(sent.execution).some((k) => /expert|moe/.test(k)), 'no expert execution fields', sent.execution);
    check(await page.locator('#est-results [data-kpi="parameters_active"]').count() === 0, 'no active-parameter figure for a dense model');
    // A dense modern model can be given experts: 8, 2 per token, each as wide as its MLP.
    const ff = Number(await page.inputValue('[data-field="model.feedforward"]'));
    await page.click('#est-moe-toggle');
    await page.waitForFunction(() => document.querySelector('[data-field="model.moe.num_experts"]') && !document.querySelector('#est-moe-exec').hidden);
    pending = answer();
    await page.click('#est-submit');
    res = await pending;
    sent = JSON.parse(res.request().postData());
    check(res.status() === 200 && JSON.stringify(sent.model.moe) === JSON.stringify({ num_experts: 8, top_k: 2, expert_feedforward: ff }) && sent.execution.expert_par >= 1,
      'the model with experts added is sent with its moe member and expert fields', [res.status(), sent.model.moe, sent.execution.expert_par]);
    const added = (await res.json()).summary;
    check(added.parameters_active < added.parameters_total, 'and has fewer active than total parameters', [added.parameters_active, added.parameters_total]);
    // Mixtral with its experts taken away: a custom dense model.
    await page.selectOption('[data-field="model"]', 'mixtral-8x7B');
    await page.waitForSelector('[data-field="model.moe.num_experts"]');
    await page.click('#est-moe-toggle');
    await page.waitForFunction(() => !document.querySelector('[data-field^="model.moe"]'));
    pending = answer();
    await page.click('#est-submit');
    res = await pending;
    sent = JSON.parse(res.request().postData());
    check(res.status() === 200 && typeof sent.model === 'object' && !('moe' in sent.model), 'the model without experts has no moe member', [res.status(), sent.model]);
    check(!Object.keys(sent.execution).some((k) => /expert|moe/.test(k)), 'and no expert execution fields', sent.execution);
  });

  await step('a mixtral-8x7B search lists expert parallelism in its rows', async () => {
    await page.click('#nav-sweep');
    await page.selectOption('#f-kind', 'optimal_execution');
    await setFields(page, '#sw-search', {
      'model': 'mixtral-8x7B',
      'system': 'h100_sxm',
      'datatype': 'bfloat16',
      'num_procs': '8',
      'max_batch_size': '16',
      'options.top_n': '3',
      'options.attention_kernel': 'fused',
    });
    await page.click('#sw-submit');
    await page.waitForFunction(() => ['done', 'failed', 'cancelled'].includes(document.querySelector('#sw-status').dataset.state) && document.querySelector('#sw-results h3'), null, { timeout: 180000 });
    check(await page.getAttribute('#sw-status', 'data-state') === 'done', 'search finished', await page.textContent('#sw-results'));
    const id = (await page.getAttribute('#sw-results .share a', 'href')).split('=')[1];
    const best = (await (await fetch(`${base}/v1/sweep/${id}`)).json()).best;
    check(best.some((b) => b.execution.expert_par > 1), 'the API’s search uses expert parallelism', best.map((b) => b.execution.expert_par));
    const cells = await page.$$eval('#sw-results table.top tbody tr td.layout', (t) => t.map((x) => x.textContent));
    check(cells.length > 0 && cells.some((c) => /EP \d+/.test(c)), 'rows show EP', cells);
    for (const c of cells) {
      const m = c.match(/EP (\d+)(?: × ETP (\d+))?/);
      if (m) check(best.some((b) => b.execution.expert_par === Number(m[1]) && (b.execution.expert_tensor_par ?? 1) === Number(m[2] ?? 1)), 'each EP shown is one the API listed', c);
    }
    await page.screenshot({ path: join(outDir, 'sweep-moe.png'), fullPage: true });
    // The first row opens as a single estimate with its expert parallelism.
    const pending = page.waitForResponse((r) => r.url().endsWith('/v1/estimate') && r.request().method() === 'POST');
    await page.click('#sw-results table.top tbody tr:first-child button.open-row');
    const res = await pending;
    const sent = JSON.parse(res.request().postData());
    check(res.status() === 200, 'the opened row is estimated', [res.status(), await res.text()]);
    check(sent.model === 'mixtral-8x7B' && sent.execution.expert_par === best[0].execution.expert_par && sent.execution.expert_tensor_par === (best[0].execution.expert_tensor_par ?? 1),
      'with the row’s expert parallelism', [sent.model, sent.execution.expert_par, sent.execution.expert_tensor_par]);
    await page.click('#nav-sweep');
    await page.selectOption('#sw-search [data-field="options.attention_kernel"]', 'unfused');
    await page.click('#nav-estimate');
  });

  await step('warnings next to the headline: an execution offloading to tier 2', async () => {
    await page.click('#nav-estimate');
    await setFields(page, '', { 'model': 'gpt3-175B', 'system': 'a100_80g', 'execution.num_procs': '1024' });
    await page.dispatchEvent('[data-field="execution.num_procs"]', 'change');
    await setFields(page, '', { 'execution.tensor_par': '8', 'execution.pipeline_par': '8', 'execution.weight_offload': true });
    const pending = page.waitForResponse((r) => r.url().endsWith('/v1/estimate') && r.request().method() === 'POST');
    await page.click('#est-submit');
    const answer = await (await pending).json();
    await page.waitForSelector('#est-results .kpi-value');
    const want = (answer.warnings || []).map((w) => w.code);
    const shown = await page.$$eval('#est-results ul.warnings li', (li) => li.map((x) => x.dataset.code));
    check(want.includes('offload_tier2'), 'the API warns about offloading', want);
    check(JSON.stringify(shown) === JSON.stringify(want), 'the page shows every warning the API gave', shown);
    const after = await page.evaluate(() => document.querySelector('#est-results ul.warnings').compareDocumentPosition(document.querySelector('#est-results .kpis')));
    check((after & 2) !== 0 /* DOCUMENT_POSITION_PRECEDING */, 'right after the headline figures', after);
    await page.uncheck('[data-field="execution.weight_offload"]');
  });

  await step('plan a cluster: a deadline, the front drawn, cheapest and fastest as the API says, a point opened in Step time', async () => {
    await page.click('#nav-plan');
    await page.selectOption('#plan-form [data-field="model"]', 'llama3-8B');
    await page.fill('#f-pl-tokens', '1e10');
    await setFields(page, '#plan-form', { 'batch_tokens': '1048576', 'gpu_counts': '8, 16, 32', 'deadline_days': '0.8' });
    const posted = page.waitForResponse((r) => r.url().endsWith('/v1/sweep') && r.request().method() === 'POST');
    await page.click('#pl-submit');
    const sent = JSON.parse((await posted).request().postData());
    check(sent.kind === 'plan' && sent.deadline_days === 0.8 && JSON.stringify(sent.gpu_counts) === '[8,16,32]', 'the form becomes a plan', sent);
    check(sent.systems.map((x) => x.name).sort().join() === 'b200,h100_sxm,h200', 'three GPU types by default', sent.systems);
    check(sent.systems.every((x) => x.price_per_gpu_hour > 0), 'each with its preset’s price', sent.systems);
    const id = (await (await posted).json()).id;
    await page.waitForSelector('#pl-results table.plan tbody tr');
    const st = await (await fetch(`${base}/v1/sweep/${id}`)).json();
    check(st.status === 'done' && st.plan.candidates.length === 9, 'the plan finished with 9 candidates', st.status);
    check(await page.locator('#pl-results table.plan tbody tr').count() === 9, 'a row per candidate');
    check(await chartDrawn(page, '#pl-results .chart-scatter'), 'days against dollars drawn');
    const sets = await page.evaluate(() => window.Chart.getChart(document.querySelector('#pl-results canvas')).data.datasets.map((d) => [d.label, d.data.length]));
    const front = sets.find(([l]) => l === 'Pareto front');
    check(front && front[1] === st.plan.pareto.length && front[1] > 0, 'the Pareto front has the API’s points', sets);
    check(sets.some(([l]) => l === 'deadline'), 'the deadline is drawn', sets);
    const cheap = st.plan.cheapest_within_deadline;
    const kpi = await page.textContent('#pl-results .kpi:first-child .kpi-value');
    check(cheap && kpi === `${cheap.system} × ${cheap.num_procs}`, 'the cheapest within the deadline is the API’s', [kpi, cheap && cheap.system]);
    check(cheap.days <= 0.8, 'and meets the deadline', cheap.days);
    await page.screenshot({ path: join(outDir, 'plan.png'), fullPage: true });
    // The address names the plan, and the link reopens it on a fresh page.
    check(await page.evaluate(() => location.hash) === `#plan=${id}`, 'the address names the plan', await page.evaluate(() => location.hash));
    check(await page.getAttribute('#pl-results .share a', 'href') === `#plan=${id}`, 'with a link to it');
    const reopened = await context.newPage();
    watch(reopened);
    await reopened.goto(`${base}/#plan=${id}`);
    await reopened.waitForSelector('#pl-results table.plan tbody tr');
    check(!(await reopened.locator('#tab-plan').isHidden()) && await reopened.locator('#pl-results table.plan tbody tr').count() === 9, 'the link reopens the plan with its 9 candidates');
    await reopened.close();
    // a click on the first point of the front opens its layout in Step time
    const target = st.plan.pareto[0];
    const xy = await page.evaluate((index) => {
      const canvas = document.querySelector('#pl-results canvas');
      const chart = window.Chart.getChart(canvas);
      for (const [i, ds] of chart.data.datasets.entries()) {
        const j = ds.data.findIndex((p) => p.c && p.c.index === index);
        if (j >= 0) {
          const pt = chart.getDatasetMeta(i).data[j], r = canvas.getBoundingClientRect();
          return { x: r.left + pt.x, y: r.top + pt.y };
        }
      }
      return null;
    }, target.index);
    check(xy, 'the front’s first candidate is a point on the chart', target.index);
    const est = page.waitForResponse((r) => r.url().endsWith('/v1/estimate') && r.request().method() === 'POST');
    await page.mouse.click(xy.x, xy.y);
    const res = await est;
    const body = JSON.parse(res.request().postData());
    check(res.status() === 200, 'the point is estimated', res.status());
    for (const k of ['tensor_par', 'pipeline_par', 'data_par', 'batch_size', 'microbatch_size'])
      check(body.execution[k] === target.execution[k], `with the candidate's ${k}`, [body.execution[k], target.execution[k]]);
    await page.waitForFunction(() => !document.querySelector('#tab-estimate').hidden && document.querySelector('#tab-plan').hidden);
    const answer = await res.json();
    check(answer.summary.step_time_s === target.step_time_s, 'at the plan’s step time', [answer.summary.step_time_s, target.step_time_s]);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.click('#nav-plan');
    await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth, null, { timeout: 15000 }).catch(() => {});
    const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(over <= 0, 'the plan tab with its answer at 390 px is not wider than the screen', over);
    await page.screenshot({ path: join(outDir, 'plan-390.png'), fullPage: true });
    await page.setViewportSize({ width: 1440, height: 1000 });
  });

  await step('the plan table: GPU-hours, their range and the warnings of every row in view at 1440 and 390 px, as the API says; the batch "auto" by default; MFU above published marked in its cell', async () => {
    await page.setViewportSize({ width: 1440, height: 1000 });
    await page.click('#nav-plan');
    const fresh = await context.newPage();
    watch(fresh);
    await fresh.goto(`${base}/#plan`);
    await fresh.waitForSelector('body[data-ready="true"]');
    check((await fresh.inputValue('#plan-form [data-field="batch_tokens"]')) === 'auto', 'the form’s batch is "auto" by default');
    await fresh.close();
    const id = (await page.getAttribute('#pl-results .share a', 'href')).replace('#plan=', '');
    const st = await (await fetch(`${base}/v1/sweep/${id}`)).json();
    const hours = (h) => (Math.abs(h) >= 1e6 ? `${+(h / 1e6).toPrecision(3)}M` : Math.abs(h) >= 1e3 ? `${+(h / 1e3).toPrecision(3)}k` : String(+h.toPrecision(3)));
    for (const [w, h] of [[1440, 1000], [390, 844]]) {
      await page.setViewportSize({ width: w, height: h });
      await fitted('#pl-results table.plan');
      for (const c of ['td.gpu-hours .point', 'td.gpu-hours .gpu-hours-range', 'td.warn-cell']) {
        const out = await outOfView(`#pl-results table.plan tbody tr:not(.row-more) ${c}`);
        check(out.length === 0, `every row's ${c} in view without scrolling at ${w} px`, out);
      }
      const rows = await page.$$eval('#pl-results table.plan tbody tr:not(.row-more)', (trs) => trs.map((tr) => {
        const text = (sel) => tr.querySelector(sel).textContent.trim();
        return { index: Number(tr.dataset.index), hours: text('td.gpu-hours .point'), range: text('td.gpu-hours .gpu-hours-range'),
          marks: (tr.querySelector('td.warn-cell details') || { dataset: {} }).dataset.codes || '',
          mfu: tr.querySelector('td.mfu').textContent, mfuWarn: tr.querySelector('td.mfu').classList.contains('warn') };
      }));
      check(rows.length === st.plan.candidates.length, `a row per candidate at ${w} px`, rows.length);
      for (const r of rows) {
        const c = st.plan.candidates.find((x) => x.index === r.index);
        check(r.hours === hours(c.gpu_hours), `row ${r.index}: the API’s GPU-hours`, [r.hours, c.gpu_hours]);
        check(r.range === `${hours(c.gpu_hours_range[0])}–${hours(c.gpu_hours_range[1])}`, `row ${r.index}: the API’s range`, [r.range, c.gpu_hours_range]);
        check(c.gpu_hours_range[0] <= c.gpu_hours && c.gpu_hours <= c.gpu_hours_range[1], `row ${r.index}: the point inside its range`, c.gpu_hours_range);
        check(r.marks === (c.warnings || []).map((x) => x.code).join(' '), `row ${r.index}: every warning of the API in the row`, [r.marks, c.warnings]);
        const high = (c.warnings || []).some((x) => x.code === 'mfu_above_published');
        check(r.mfuWarn === high && r.mfu.includes('⚠') === high, `row ${r.index}: MFU above published marked in the MFU cell exactly when the API warns`, [r.mfu, high]);
      }
      await page.screenshot({ path: join(outDir, `plan-table-${w}.png`), fullPage: true });
    }
    check(st.plan.candidates.some((c) => (c.warnings || []).some((x) => x.code === 'mfu_above_published')), 'some candidate of this plan is above published MFU (so the mark is tested)');
    await page.setViewportSize({ width: 1440, height: 1000 });
  });

  await step('Serve: a serving plan over H100, H200 and B200 as the API says, a fleet’s curve, a bad TP beside its field; 1440 and 390 px', async () => {
    await page.setViewportSize({ width: 1440, height: 1000 });
    await page.click('#nav-serve');
    await page.waitForFunction(() => !document.querySelector('#tab-serve').hidden);
    const aliasLabel = await page.$eval('#sv-fields [data-field="model"] option[value="llama3.1-70B"]', (o) => o.textContent);
    check(aliasLabel === 'llama3.1-70B (= llama3-70B)', 'an alias says whose shape it is', aliasLabel);
    const posted = page.waitForResponse((r) => r.url().endsWith('/v1/sweep') && r.request().method() === 'POST');
    await page.click('#sv-submit');
    const sent = JSON.parse((await posted).request().postData());
    check(sent.kind === 'serving_plan' && sent.model === 'llama3-70B' && sent.traffic.requests_per_s === 20 &&
      sent.traffic.input_tokens === 2000 && sent.traffic.output_tokens === 200, 'the form becomes a serving plan', sent);
    check(sent.slo.ttft_ms_p99 === 2000 && sent.slo.tpot_ms === 50, 'with the targets', sent.slo);
    check(sent.systems.map((x) => x.name).sort().join() === 'b200,h100_sxm,h200' && sent.systems.every((x) => x.price_per_gpu_hour > 0),
      'three GPU types by default, each with its preset’s price', sent.systems);
    check(!('weights_datatypes' in sent), 'no format ticked: the server’s default formats', sent.weights_datatypes);
    const formats = await page.$$eval('#sv-formats input[data-format]', (cs) => cs.map((c) => c.dataset.format));
    check(formats.join() === 'bf16,fp8,fp4,int4,mxfp4', 'the formats the API names, NVFP4 once', formats);
    const id = (await (await posted).json()).id;
    await page.waitForSelector('#sv-results table.serve tbody tr');
    const st = await (await fetch(`${base}/v1/sweep/${id}`)).json();
    check(st.status === 'done' && st.kind === 'serving_plan', 'the plan finished', st.status);
    const rows = await page.$$eval('#sv-results table.serve tbody tr', (trs) => trs.map((tr) => [tr.dataset.system, tr.cells[4]?.textContent]));
    check(rows.length === 3, 'a row per GPU type', rows);
    for (const [i, sys] of st.serving_plan.systems.entries()) {
      check(sys.best && sys.best.meets && sys.best.tpot_s <= 0.05 && sys.best.ttft_p99_s <= 2, `${sys.name} has a fleet meeting the targets`, sys.best);
      check(rows[i][0] === sys.name && Number(rows[i][1].replace(/,/g, '')) === sys.best.gpus, `${sys.name}: the API’s GPUs`, [rows[i], sys.best.gpus]);
    }
    check(await chartDrawn(page, '#sv-results .chart-scatter'), 'dollars against TPOT drawn');
    check(await page.evaluate(() => location.hash) === `#serve=${id}`, 'the address names the plan', await page.evaluate(() => location.hash));
    // the first fleet's curve: POST /v1/inference with the plan's request, drawn
    const best = st.serving_plan.systems[0].best;
    const inferred = page.waitForResponse((r) => r.url().endsWith('/v1/inference') && r.request().method() === 'POST');
    await page.click('#sv-results table.serve tbody tr:first-child button');
    const one = await (await inferred).json();
    check(one.tpot_s === best.tpot_s && one.ttft_p99_s === best.ttft_p99_s, 'the fleet re-estimates to the plan’s TPOT and TTFT', [one.tpot_s, best.tpot_s]);
    await page.waitForSelector('#sv-one-results .chart-scatter canvas');
    check(await chartDrawn(page, '#sv-one-results .chart-scatter'), 'tokens/s per GPU against tokens/s per user drawn');
    const curve = await page.evaluate(() => window.Chart.getChart(document.querySelector('#sv-one-results canvas')).data.datasets[0].data.length);
    check(curve === one.curve.length && curve > 1, 'a point per concurrency of the API’s curve', [curve, one.curve.length]);
    await page.screenshot({ path: join(outDir, 'serve-1440.png'), fullPage: true });
    // a tensor-parallel degree that does not divide 64 heads: the server’s reason beside the field
    await setFields(page, '#serve-one-form', { 'serving.tensor_par': '3' });
    await page.click('#serve-one-form button[type="submit"]');
    const err = page.locator('#serve-one-form .fld:has([data-field="serving.tensor_par"]) .field-error');
    await err.waitFor();
    check(/attention heads/.test(await err.textContent()), 'the error names the heads', await err.textContent());
    // gpt-oss-120B on one H100 with the weights left to the model: the request names no format,
    // so the server serves the checkpoint the preset states (MXFP4 experts), which fits
    await setFields(page, '#serve-one-form', { model: 'gpt-oss-120B', 'serving.tensor_par': '1', 'serving.weights_datatype': '' });
    const ossPosted = page.waitForResponse((r) => r.url().endsWith('/v1/inference') && r.request().method() === 'POST');
    await page.click('#serve-one-form button[type="submit"]');
    const ossReq = JSON.parse((await ossPosted).request().postData());
    check(ossReq.model === 'gpt-oss-120B' && !('weights_datatype' in ossReq.serving), 'weights as the checkpoint ships: no format sent', ossReq.serving);
    const ossOut = await (await ossPosted).json();
    const asShipped = await (await fetch(`${base}/v1/inference`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...ossReq, serving: { ...ossReq.serving, weights_datatype: 'mxfp4' } }) })).json();
    check(ossOut.fits_memory && ossOut.tpot_s === asShipped.tpot_s, 'served from its MXFP4 checkpoint, on one H100', [ossOut.fits_memory, ossOut.tpot_s, asShipped.tpot_s]);
    await setFields(page, '#serve-one-form', { model: 'llama3-70B', 'serving.tensor_par': '4' });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth, null, { timeout: 15000 }).catch(() => {});
    const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(over <= 0, 'the serve tab with its answers at 390 px is not wider than the screen', over);
    await page.screenshot({ path: join(outDir, 'serve-390.png'), fullPage: true });
    await page.setViewportSize({ width: 1440, height: 1000 });
  });

  await step('Scaling budget links its tokens into a plan', async () => {
    await page.click('#nav-scaling');
    await page.selectOption('#scaling-form [data-field="law"]', 'chinchilla');
    await page.evaluate(() => document.querySelector('#sc-plan')?.remove()); // an earlier answer's
    // The frontier's 17 further calls are held until the plan tab shows, as a busy server would:
    // the page must not rewrite the address to the scaling result when they answer.
    let releaseFrontier;
    const frontierHeld = new Promise((resolve) => { releaseFrontier = resolve; });
    let chinchillaAsked = 0; // the budget's own call passes, the frontier's after it wait
    await page.route('**/v1/scaling', async (route) => {
      if (route.request().postDataJSON()?.law === 'chinchilla' && chinchillaAsked++ > 0) await frontierHeld;
      await route.continue();
    });
    const solved = page.waitForResponse((r) => r.url().endsWith('/v1/scaling') && r.request().method() === 'POST');
    await page.click('#scaling-form button[type="submit"]');
    const r = await (await solved).json();
    await page.click('#sc-plan');
    await page.waitForFunction(() => location.hash === '#plan' && !document.querySelector('#tab-plan').hidden);
    check(Number(await page.inputValue('#f-pl-tokens')) === r.tokens, 'with the tokens', [await page.inputValue('#f-pl-tokens'), r.tokens]);
    check(/parameters/.test(await page.textContent('#pl-note')), 'and the model size noted');
    releaseFrontier();
    await page.waitForFunction(frontierDrawn);
    await page.unroute('**/v1/scaling');
    check(await page.evaluate(() => location.hash) === '#plan', 'the address still names the plan once the frontier is drawn', await page.evaluate(() => location.hash));
  });

  // ---- [7/8] the planner's page: each at 1440 and 390 px, with screenshots ----
  const widths = [[1440, 1000], [390, 844]];
  const noOverflow = async (what) => {
    await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth, null, { timeout: 15000 }).catch(() => {});
    const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(over <= 0, `${what}: not wider than the screen`, over);
  };
  // A verdict or figure hidden behind another element or clipped by its box is not seen.
  const visible = (sel) => page.evaluate((q) => {
    const e = document.querySelector(q);
    if (!e) return false;
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden';
  }, sel);

  await step('a pasted config.json (Qwen2.5 7B) becomes the model and is estimated, at 1440 and 390 px', async () => {
    const cfg = readFileSync(join(root, 'tests', 'data', 'hf_config', 'Qwen2.5-7B.json'), 'utf8');
    for (const [w, h] of widths) {
      await page.setViewportSize({ width: w, height: h });
      await page.click('#nav-estimate');
      await page.evaluate(() => { document.querySelector('#est-hf').open = true; });
      await page.fill('#est-hf-config', cfg);
      const read = page.waitForResponse((r) => r.url().endsWith('/v1/models/from-hf-config'));
      await page.click('#est-hf-use');
      check((await read).status() === 200, 'the config is read', (await read).status());
      await page.waitForFunction(() => /Qwen2ForCausalLM/.test(document.querySelector('#est-hf-note').textContent));
      check(/7,615,616,512 parameters/.test(await page.textContent('#est-hf-note')), 'with its published parameter count', await page.textContent('#est-hf-note'));
      await setFields(page, '', { 'system': 'h100_sxm', 'execution.num_procs': '8', 'execution.batch_size': '64' });
      await page.dispatchEvent('[data-field="execution.batch_size"]', 'change');
      const sent = page.waitForRequest((r) => r.url().endsWith('/v1/estimate') && r.method() === 'POST');
      await page.click('#est-submit');
      const req = await sent;
      const body = JSON.parse(req.postData());
      check(typeof body.model === 'object' && body.model.hidden === 3584 && body.model.qkv_bias === true, 'the config’s model is estimated', body.model);
      // this estimate's answer drawn (an earlier result may still be on the page meanwhile)
      const answer = await req.response();
      check(answer.status() === 200, 'estimated', answer.status());
      await page.waitForFunction(() => (document.querySelector('#est-results [data-kpi="parameters"] .kpi-value')?.textContent || '').replace(/\D/g, '') === '7615616512', null, { timeout: 20000 }).catch(() => {});
      check((await page.textContent('#est-results [data-kpi="parameters"] .kpi-value')).replace(/\D/g, '') === '7615616512', 'the parameters shown are the published ones', await page.textContent('#est-results [data-kpi="parameters"] .kpi-value'));
      check(await visible('#est-results [data-kpi="parameters"] .kpi-value'), 'the 10-digit count is in view');
      if (w === 390) await noOverflow('the estimate of a pasted config at 390 px');
      await page.screenshot({ path: join(outDir, `hf-config-${w}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1440, height: 1000 });
  });

  await step('a LoRA estimate shows memory per GPU and the trained parameters, at 1440 and 390 px', async () => {
    for (const [w, h] of widths) {
      await page.setViewportSize({ width: w, height: h });
      await page.click('#nav-estimate');
      await setFields(page, '', { 'model': 'llama3-8B' });
      await page.dispatchEvent('[data-field="model"]', 'change');
      await page.waitForFunction(() => document.querySelector('#estimate-form').dataset.modern === 'true');
      await setFields(page, '', { 'system': 'h100_sxm' });
      await page.dispatchEvent('[data-field="system"]', 'change');
      await setFields(page, '', { 'execution.num_procs': '8', 'execution.batch_size': '64', 'finetune.method': 'lora', 'finetune.rank': '16' });
      await page.dispatchEvent('[data-field="execution.batch_size"]', 'change');
      const sent = page.waitForRequest((r) => r.url().endsWith('/v1/estimate') && r.method() === 'POST');
      await page.click('#est-submit');
      const body = JSON.parse((await sent).postData());
      check(body.execution.finetune && body.execution.finetune.method === 'lora' && body.execution.finetune.rank === 16, 'the LoRA request is sent', body.execution.finetune);
      await page.waitForSelector('#est-results [data-kpi="parameters_trainable"] .kpi-value');
      const trained = (await page.textContent('#est-results [data-kpi="parameters_trainable"] .kpi-value')).replace(/\D/g, '');
      check(trained === '41943040', 'the adapters are the trained parameters (rank 16 on all seven projections)', trained);
      const mem = await page.textContent('#est-results [data-kpi="memory_per_gpu"] .kpi-value');
      check(/GiB|GB/.test(mem), 'memory per GPU shown', mem);
      check(await visible('#est-results [data-kpi="memory_per_gpu"] .kpi-value'), 'and in view');
      if (w === 390) await noOverflow('the LoRA estimate at 390 px');
      await page.screenshot({ path: join(outDir, `lora-${w}.png`), fullPage: true });
      await setFields(page, '', { 'finetune.method': 'none' });
    }
    await page.setViewportSize({ width: 1440, height: 1000 });
  });

  await step('search Llama 3 70B on 64 H100s with the page’s defaults: ≥ 1,500 tokens/s per GPU at the top, at 1440 and 390 px', async () => {
    await page.setViewportSize({ width: 1440, height: 1000 });
    await page.click('#nav-sweep');
    await setFields(page, '#sw-search', {
      'model': 'llama3-70B', 'system': 'h100_sxm', 'num_procs': '64', 'max_batch_size': '128',
      'datatype': 'auto', 'options.attention_kernel': 'auto', 'options.fp8': 'auto', 'options.top_n': '5',
      'options.context_par': '1', 'options.zero_stage': 'calculon', 'options.recompute_modules': 'none', 'options.recompute_blocks': 'all',
      'options.no_offload': false, 'options.exact_batch': false, 'options.max_tensor_par': '', 'options.max_pipeline_par': '',
    });
    const sent = page.waitForRequest((r) => r.url().endsWith('/v1/sweep') && r.method() === 'POST');
    await page.click('#sw-submit');
    const body = JSON.parse((await sent).postData());
    check(body.datatype === undefined && body.options.attention_kernel === undefined && body.options.fp8 === undefined, 'the defaults are the API’s', body);
    await page.waitForFunction(() => ['done', 'failed', 'cancelled'].includes(document.querySelector('#sw-status').dataset.state) && document.querySelector('#sw-results table.top'), null, { timeout: 300000 });
    for (const [w, h] of widths) {
      await page.setViewportSize({ width: w, height: h });
      await fitted('#sw-results table.top');
      const top = await page.textContent('#sw-results table.top tbody tr:first-child td.rate .tokens');
      const tokens = Number(top.replace(/[^\d]/g, ''));
      check(tokens >= 1500, 'the fastest layout gives at least 1,500 tokens/s per GPU', top);
      check(await page.locator('#sw-results table.top tbody tr details.warn-mark').count() >= 1, 'a row carries its warnings');
      await page.screenshot({ path: join(outDir, `search-llama70b-${w}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1440, height: 1000 });
  });

  await step('a plan row shows its warning, opens with the same bill, and keeps days, dollars and verdict in view, at 1440 and 390 px', async () => {
    await page.setViewportSize({ width: 1440, height: 1000 });
    await page.click('#nav-plan');
    await setFields(page, '#plan-form', { 'model': 'llama3-8B', 'tokens': '1e9', 'batch_tokens': '524288', 'gpu_counts': '8', 'datatype': 'bfloat16,float16', 'deadline_days': '', 'budget_dollars': '' });
    for (const c of await page.$$('#pl-systems input[data-system]')) {
      const name = await c.getAttribute('data-system');
      if (['h100_sxm', 'a100_80g'].includes(name)) await c.check(); else await c.uncheck();
    }
    const posted = page.waitForResponse((r) => r.url().endsWith('/v1/sweep') && r.request().method() === 'POST');
    await page.click('#pl-submit');
    const sentPlan = JSON.parse((await posted).request().postData());
    check(JSON.stringify(sentPlan.datatype) === '["bfloat16","float16"]', 'the datatypes are sent, best first', sentPlan.datatype);
    const id = (await (await posted).json()).id;
    await page.waitForFunction(() => document.querySelectorAll('#pl-results table.plan tbody tr').length === 2, null, { timeout: 300000 });
    const st = await (await fetch(`${base}/v1/sweep/${id}`)).json();
    const byName = Object.fromEntries(st.plan.candidates.map((c) => [c.system, c]));
    check(byName.a100_80g.execution.datatype === 'float16' && byName.h100_sxm.execution.datatype === 'bfloat16', 'each GPU at its best datatype', st.plan.candidates.map((c) => c.execution && c.execution.datatype));
    const warned = st.plan.candidates.findIndex((c) => c.system === 'h100_sxm' && c.warnings.length);
    check(warned >= 0, 'a candidate has a warning', st.plan.candidates.map((c) => c.warnings));
    const row = `#pl-results table.plan tbody tr:nth-child(${warned + 1})`;
    const mark = page.locator(`${row} details.warn-mark`);
    check(await mark.count() === 1, 'its row shows the warning mark');
    const title = await mark.getAttribute('title');
    check(title.includes(st.plan.candidates[warned].warnings[0].code), 'the reason on hover', title);
    for (const [w, h] of widths) {
      await page.setViewportSize({ width: w, height: h });
      await fitted('#pl-results table.plan');
      await page.click(`${row} details.warn-mark summary`);
      check(await page.locator(`${row} details.warn-mark[open] li`).count() >= 1, `the reason on a tap at ${w} px`);
      for (const cell of ['td.verdict', 'td.days', 'td.dollars', 'td.sticky']) {
        const inView = await page.evaluate(([r, c]) => {
          const e = document.querySelector(`${r} ${c}`), box = e.getBoundingClientRect();
          return box.width > 0 && box.left >= 0 && box.right <= window.innerWidth + 0.5;
        }, [row, cell]);
        check(inView, `${cell} in view at ${w} px without scrolling the table`);
      }
      // at phone width the Step time button is a tap away: the row's toggle lists it below
      if (w === 390) await page.click(`${row} .more-toggle`);
      check(await page.locator(`${row} details.warn-mark summary`).count() === 1, 'still marked');
      const btn = await page.evaluate((q) => {
        const b = document.querySelector(q)?.getBoundingClientRect();
        return { w: b?.width, ok: !!b && b.width > 20 && b.height > 10 && b.right <= window.innerWidth + 0.5 };
      }, w === 390 ? `${row} + tr.row-more button.open-candidate` : `${row} button.open-candidate`);
      check(btn.ok, `the Step time button is whole at ${w} px`, btn);
      check((await buttonsWhole('#pl-results table.plan')).length === 0, `no button of the plan table clipped at ${w} px`, await buttonsWhole('#pl-results table.plan'));
      if (w === 390) await noOverflow('the plan at 390 px');
      await page.screenshot({ path: join(outDir, `plan-warnings-${w}.png`), fullPage: true });
      if (w === 390) await page.click(`${row} .more-toggle`);
      await page.click(`${row} details.warn-mark summary`);
    }
    await page.setViewportSize({ width: 1440, height: 1000 });
    const c = st.plan.candidates[warned];
    const est = page.waitForResponse((r) => r.url().endsWith('/v1/estimate') && r.request().method() === 'POST');
    await page.click(`${row} button.open-candidate`);
    const res = await est;
    const sent = JSON.parse(res.request().postData());
    check(sent.training && sent.training.tokens === st.spec.tokens && sent.training.gpu_hour_price === c.price_per_gpu_hour && sent.training.gpu_power_kw === c.power_per_gpu_kw,
      'the estimate carries the plan’s tokens, price and power', sent.training);
    const answer = await res.json();
    check(Math.abs(answer.run.dollars - c.dollars_ideal) <= 1e-6 * c.dollars_ideal, 'its bill is the candidate’s ideal bill', [answer.run.dollars, c.dollars_ideal]);
    await page.waitForFunction(() => !document.querySelector('#tab-estimate').hidden);
    check(await page.inputValue('[data-field="system"]') === c.system, 'the system keeps its preset name', await page.inputValue('[data-field="system"]'));
  });

  await step('a scaling answer from H100-hours: model size, tokens and loss with its rule and extrapolation warning, at 1440 and 390 px', async () => {
    for (const [w, h] of widths) {
      await page.setViewportSize({ width: w, height: h });
      await page.click('#nav-scaling');
      await page.selectOption('#scaling-form [data-field="law"]', 'gpuhours');
      await page.dispatchEvent('#scaling-form [data-field="law"]', 'change');
      await setFields(page, '#scaling-form', { 'gh_gpu': 'h100_sxm', 'gh_hours': '1000000', 'gh_mfu': '0.4' });
      await page.waitForFunction(() => /989/.test(document.querySelector('#sc-gh-peak').textContent));
      const asked = page.waitForRequest((r) => r.url().endsWith('/v1/scaling') && r.method() === 'POST');
      await page.click('#scaling-form button[type="submit"]');
      const req = JSON.parse((await asked).postData());
      // 1e6 h · 3600 s · 989.4e12 · 0.4 = 1.4247e24 FLOPs, asked of the API's one Chinchilla
      // rule: N = G·(C/6)^a with Epoch AI's fit (G 0.11963, a 0.51261; doc/scaling.md):
      // C/6 = 2.3745e23, ln 53.824, ·a 27.591, e^ 9.642e11, N ≈ 115 B, D = C/6/N ≈ 2.06 T (18.0 each)
      const C = 1e6 * 3600 * 989.4e12 * 0.4;
      check(Math.abs(req.flops - C) < 1e-9 * C && req.params === undefined && req.tokens === undefined, 'the budget C is asked of the API’s Chinchilla rule', req);
      await page.waitForSelector('#sc-gh-answer');
      const kpis = await page.$$eval('#sc-gh-answer .kpi-value', (v) => v.map((x) => x.textContent));
      check(/^11[45](\.\d+)? B$/.test(kpis[0].trim()) && /\d/.test(kpis[2]), 'model size (≈115 B) and loss shown', kpis);
      check(/18(\.0)? tokens per parameter/.test(await page.textContent('#sc-gh-rule')) && /Besiroglu et al\. 2024/.test(await page.textContent('#sc-gh-rule')), 'the rule is said: its fit and tokens per parameter', await page.textContent('#sc-gh-rule'));
      check(await page.locator('#sc-results .extrapolation').count() === 1, '1.4e24 FLOPs is past Chinchilla’s 5.76e23: an extrapolation warning');
      check(await visible('#sc-gh-answer .kpi:first-child .kpi-value'), 'the model size in view');
      if (w === 390) await noOverflow('the scaling answer at 390 px');
      await page.screenshot({ path: join(outDir, `scaling-h100-hours-${w}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1440, height: 1000 });
    await page.selectOption('#scaling-form [data-field="law"]', 'hf2020');
    await page.dispatchEvent('#scaling-form [data-field="law"]', 'change');
  });

  await step('every table keeps its verdict in view at 390 and 1440 px, the rest a tap away: search, plan, memory by stage, measured runs', async () => {
    // the search (Llama 3 70B), the plan (Llama 3 8B) and the estimate the plan opened are on
    // their tabs; the measured runs are under Step time
    const tables = [
      ['search', '#nav-sweep', '#sw-results table.top', ['td.rate', 'td.mfu', 'td.memory'], 'button.open-row'],
      ['plan', '#nav-plan', '#pl-results table.plan', ['td.sticky', 'td.gpu-hours', 'td.verdict', 'td.days', 'td.dollars', 'td.warn-cell'], 'button.open-candidate'],
      // every cell of memory by stage: each stage's totals and its verdict against capacity
      ['memory', '#nav-estimate', '#est-results table.stage-mem-table', ['td', 'td.verdict'], null],
      ['measured', '#nav-estimate', '#measured table.measured-table', ['td.run-id', 'td.measured', 'td.error'], 'button.open-run'],
    ];
    for (const [w, h] of widths) {
      await page.setViewportSize({ width: w, height: h });
      for (const [name, nav, table, cells, action] of tables) {
        await page.click(nav);
        if (name === 'measured') await page.evaluate(() => { document.querySelector('#measured').open = true; });
        await page.waitForSelector(`${table} tbody tr`);
        if (name !== 'memory') await fitted(table);
        for (const c of cells) {
          const rows = `${table} tbody tr:not(.row-more) ${c}`;
          check(await page.locator(rows).count() > 0, `${name}: ${c} present`);
          const out = await outOfView(rows);
          check(out.length === 0, `${name} at ${w} px: every ${c} in view without scrolling the table`, out);
        }
        check((await buttonsWhole(table)).length === 0, `${name} at ${w} px: no button clipped`, await buttonsWhole(table));
        if (w === 390 && action) {
          // the hidden columns a tap away: the first row's toggle lists them with the row's action
          await page.click(`${table} tbody tr:first-child .more-toggle`);
          const copy = `${table} tbody tr.row-more ${action}`;
          check(await page.locator(copy).count() === 1 && (await outOfView(copy)).length === 0, `${name} at 390 px: the row's other columns and its ${action} a tap away`);
          check((await buttonsWhole(table)).length === 0, `${name} at 390 px, opened: no button clipped`, await buttonsWhole(table));
          await page.locator(table).screenshot({ path: join(outDir, `table-${name}-390-open.png`) });
          await page.click(`${table} tbody tr:first-child .more-toggle`);
        }
        await page.locator(name === 'measured' ? `${table}` : table).screenshot({ path: join(outDir, `table-${name}-${w}.png`) });
        if (w === 390) await noOverflow(`the ${name} table at 390 px`);
      }
    }
    // a copied action is the row's own: the search's first row opens from the listed Open button
    await page.setViewportSize({ width: 390, height: 844 });
    await page.click('#nav-sweep');
    await page.click('#sw-results table.top tbody tr:first-child .more-toggle');
    const opened = page.waitForResponse((r) => r.url().endsWith('/v1/estimate') && r.request().method() === 'POST');
    await page.click('#sw-results table.top tbody tr.row-more button.open-row');
    check((await opened).status() === 200, 'the listed Open button estimates the row');
    await page.waitForFunction(() => !document.querySelector('#tab-estimate').hidden);
    await page.setViewportSize({ width: 1440, height: 1000 });
  });

  // ---- Found driving every tab as a new user (each failed before its fix). ----
  await step('a GH200 puts TP on the tier that connects it; a count of 1e30 leaves the form usable; Serve, MFU and plan tokens refuse bad numbers beside their field', async () => {
    await page.click('#nav-estimate');
    const fe = (f) => `#estimate-form [data-field="${f}"]`;
    await page.selectOption(fe('model'), 'qwen2.5-7B');
    await page.selectOption(fe('system'), 'gh200'); // its first tier joins one GPU
    await page.fill(fe('execution.num_procs'), '64');
    await page.locator(fe('execution.num_procs')).dispatchEvent('change');
    const tp = Number(await page.inputValue(fe('execution.tensor_par')));
    check(tp > 1, 'a TP above 1 offered', tp);
    check(await page.inputValue(fe('execution.tensor_par_net')) === '1', 'TP on tier 1, the first that connects TP GPUs');
    let answer = page.waitForResponse((r) => r.url().endsWith('/v1/estimate'));
    await page.click('#est-submit');
    check((await answer).status() === 200, 'the page’s own layout on a GH200 estimates');
    // divisors(1e30) froze the tab: the choices now wait for a count the API takes
    await page.evaluate(() => { document.querySelector('#est-model-fields').closest('details').open = true; });
    await page.fill(fe('model.num_blocks'), '1e30');
    await page.locator(fe('model.num_blocks')).dispatchEvent('change', {}, { timeout: 3000 });
    answer = page.waitForResponse((r) => r.url().endsWith('/v1/estimate'));
    await page.click('#est-submit', { timeout: 3000 });
    check((await answer).status() === 422, 'the API refuses 1e30 blocks');
    await page.locator('.fld:has([data-field="model.num_blocks"]) .field-error').waitFor({ timeout: 3000 });
    const beside = async (form, f, v, submit) => {
      await page.fill(`${form} [data-field="${f}"]`, v);
      await page.click(submit);
      const err = page.locator(`${form} .fld:has([data-field="${f}"]) .field-error`);
      await err.waitFor({ timeout: 3000 });
      return err.textContent();
    };
    await page.click('#nav-serve');
    check(/must be a number/.test(await beside('#serve-one-form', 'serving.tensor_par', 'abc', '#serve-one-form button[type=submit]')), 'Serve: TP “abc” beside its field');
    await page.fill('#serve-one-form [data-field="serving.tensor_par"]', '4');
    // MXFP4 quantizes routed experts, which Llama 3 70B has none of: the server's reason beside the formats
    await page.check('#f-sv-fmt-mxfp4');
    const refused = page.waitForResponse((r) => r.url().endsWith('/v1/sweep') && r.request().method() === 'POST');
    await page.click('#sv-submit');
    const plan = await refused;
    check(plan.status() === 422 && JSON.parse(plan.request().postData()).weights_datatypes.join() === 'mxfp4',
      'the ticked format is sent, and refused for a dense model', plan.status());
    const fmtErr = page.locator('#serve-form .fld:has([data-field="weights_datatypes"]) .field-error');
    await fmtErr.waitFor({ timeout: 3000 });
    check(/routed experts/.test(await fmtErr.textContent()), 'Serve: MXFP4 on a dense model refused beside the formats', await fmtErr.textContent());
    await page.uncheck('#f-sv-fmt-mxfp4');
    await page.click('#nav-scaling');
    await page.selectOption('#f-law', 'gpuhours');
    check(/at most 1/.test(await beside('#scaling-form', 'gh_mfu', '2', '#scaling-form button[type=submit]')), 'an MFU of 2 (200 %) refused beside it');
    await page.fill('#scaling-form [data-field="gh_mfu"]', '0.4');
    await page.selectOption('#f-law', 'hf2020');
    await page.click('#nav-plan');
    check(/not “Infinity”/.test(await beside('#plan-form', 'tokens', 'Infinity', '#pl-submit')), 'plan tokens “Infinity” refused here, not sent as null');
    await page.fill('#plan-form [data-field="tokens"]', 'chinchilla');
  });

  await step('no page errors and nothing fetched from outside', async () => {
    check(pageErrors.length === 0, 'no errors in the page', pageErrors);
    check(foreign.length === 0, 'only fathomd was contacted', foreign);
  });
} catch (e) {
  results.push(['setup', false]);
  console.log(`FAIL setup: ${e.stack || e}\n${serverLog.slice(-2000)}`);
} finally {
  if (context) await context.close();
  server.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
}

const failed = results.filter(([, ok]) => !ok).length;
console.log(`screenshots: ${outDir}`);
console.log(`browser: ${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
