// nav.js — how one tab hands work to another without importing it. A tab offers its actions
// when it starts (offer('estimate.open', fn)); another tab calls them through the named
// wrappers below. Tabs import the shared modules (api, forms, catalog, poller, util) and this
// one, never each other, so a new tab is one more module listed in main.js.
const actions = new Map();

export function offer(name, fn) {
  actions.set(name, fn);
}

function act(name, ...args) {
  const fn = actions.get(name);
  if (!fn) throw new Error(`no tab offers “${name}”`);
  return fn(...args);
}

// Puts a request ({model, system, execution, training?}) on the Step time form, shows that tab
// and estimates it (a sweep's row, a plan's candidate, a measured run).
export const openInEstimate = (req) => act('estimate.open', req);
// The Step time form's request as it stands (a grid sweep's base, a planner's own model).
export const estimateRequest = () => act('estimate.request');
// Plans a number of training tokens (Scaling budget → Plan a cluster), noting the model size.
export const planTokens = (found) => act('plan.tokens', found);
