// test_page.mjs — the web page in a real browser: Debian's chromium driven by playwright-core
// against a fathomd this test starts on a free port with a temporary database. It fills the
// estimate form from presets and checks the step time and charts, puts a bad value in and looks
// for the error beside its field, runs a small search to completion through the progress bar,
// reopens a shared link, and draws the scaling and goodput charts. Screenshots go to
// tests/out/browser/. Run by scripts/test.d/50-browser.sh (FATHOMD=path/to/fathomd node ...).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
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

  await step('page loads from fathomd with its presets', async () => {
    const resp = await page.goto(`${base}/`);
    check(resp.status() === 200, 'GET / is 200', resp.status());
    check((resp.headers()['content-type'] || '').startsWith('text/html'), 'GET / is text/html', resp.headers()['content-type']);
    await page.waitForSelector('body[data-ready="true"]');
    const models = await page.$$eval('[data-field="model"] option', (o) => o.map((x) => x.value));
    check(models.includes('gpt3-175B'), 'model presets listed', models);
  });

  await step('estimate gpt3-175B on 1024 A100s with TP 8, PP 8: step time and charts', async () => {
    await page.selectOption('[data-field="model"]', 'gpt3-175B');
    await page.selectOption('[data-field="system"]', 'a100_80g');
    await page.fill('[data-field="execution.num_procs"]', '1024');
    await page.fill('[data-field="execution.batch_size"]', '1024');
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
    await other.close();
  });

  await step('a small search runs to completion through the progress bar', async () => {
    await page.click('#nav-sweep');
    await page.selectOption('#sw-search [data-field="model"]', 'megatron-126M');
    await page.selectOption('#sw-search [data-field="system"]', 'a100_80g');
    await page.fill('#sw-search [data-field="num_procs"]', '8');
    await page.fill('#sw-search [data-field="max_batch_size"]', '32');
    await page.fill('#sw-search [data-field="options.top_n"]', '5');
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
    await page.click('#sw-results table.top tbody tr:first-child button');
    await page.waitForFunction(() => !document.querySelector('#tab-estimate').hidden && /megatron-126M/.test(document.querySelector('#est-results .describe')?.textContent || ''));
    check(await page.inputValue('[data-field="model"]') === 'megatron-126M', 'model preset recognised');
    await page.click('#nav-sweep');
  });

  await step('a grid sweep over TP × PP plots every point', async () => {
    // The grid's base is the Estimate tab's request: gpt3-175B on 1024 GPUs again.
    await page.click('#nav-estimate');
    await page.selectOption('[data-field="model"]', 'gpt3-175B');
    await page.fill('[data-field="execution.num_procs"]', '1024');
    await page.fill('[data-field="execution.batch_size"]', '1024');
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
  });

  await step('a long search can be cancelled', async () => {
    await page.selectOption('#f-kind', 'optimal_execution');
    await page.selectOption('#sw-search [data-field="model"]', 'gpt3-175B');
    // About 15 s of work on two cores: long enough to cancel on the way.
    await page.fill('#sw-search [data-field="num_procs"]', '65536');
    await page.fill('#sw-search [data-field="max_batch_size"]', '65536');
    await page.selectOption('#sw-search [data-field="options.fused_activation"]', 'all');
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
