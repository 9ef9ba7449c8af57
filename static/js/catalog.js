// catalog.js — what the server defines and the page only reads: the preset lists
// (GET /v1/presets), each preset's members (GET /v1/presets/<kind>/<name>, fetched once and
// kept), and the API's enumerations (the "enum" and "const" values of /openapi.json's schemas:
// datatypes, recompute kinds, kernels…), so a value the server adds reaches every form
// without an edit to the page. Loaded once by main.js before any tab is built.
import { api } from './api.js';

let list = null;    // GET /v1/presets: {models: [{name, comment, alias_of?}], systems: [{name, comment, user?}]}
let schemas = null; // /openapi.json's components.schemas, by name (llm_execution, model, …)
const cache = { models: {}, systems: {} };

export async function loadCatalog() {
  const [presets, openapi] = await Promise.all([api('GET', '/v1/presets'), api('GET', '/openapi.json')]);
  list = presets.data;
  schemas = openapi.data.components.schemas;
}

export const presetList = () => list;

// A preset as a menu names it: a user's says so, an alias says whose shape it is.
export const presetLabel = (p) => (p.user ? `${p.name} (your preset)` : p.alias_of ? `${p.name} (= ${p.alias_of})` : p.name);
// A preset list as a select's [value, label] choices.
export const presetChoices = (list) => list.map((p) => [p.name, presetLabel(p)]);

// One preset's members (kind: 'models' or 'systems'), fetched the first time.
export async function preset(kind, name) {
  if (!cache[kind][name]) cache[kind][name] = (await api('GET', `/v1/presets/${kind}/${encodeURIComponent(name)}`)).data;
  return cache[kind][name];
}

// A preset already fetched, or undefined (for code that cannot wait).
export const cachedPreset = (kind, name) => cache[kind][name];

// A local reference ("#/$defs/gpu") inside schema `root`, followed; other nodes as they are.
const deref = (node, root) => (typeof node?.$ref === 'string' && node.$ref.startsWith('#/')
  ? node.$ref.slice(2).split('/').reduce((n, k) => n?.[k], root) : node);
// The alternatives of a schema node: itself, or each branch of its oneOf/anyOf.
const branches = (node, root) => {
  const n = deref(node, root);
  return n ? [n, ...(n.oneOf || []), ...(n.anyOf || [])].map((b) => deref(b, root)) : [];
};

// The values the API accepts at a member path ('datatype', 'options.attention_kernel') of a
// schema ('llm_execution', 'sweep_optimal_execution_request'): every "enum" and "const" there,
// in the schema's order. Throws when the schema names none: the page and the server disagree.
export function enumOf(schema, path) {
  const values = nodesAt(schema, path).flatMap((n) => n.enum || ('const' in n ? [n.const] : []));
  if (!values.length) throw new Error(`/openapi.json gives no values for ${schema}.${path}`);
  return [...new Set(values)];
}

// The schema nodes of a member path, each alternative of every oneOf/anyOf on the way.
function nodesAt(schema, path) {
  const root = schemas[schema], alternatives = (n) => branches(n, root);
  let nodes = [root];
  for (const key of path.split('.')) nodes = nodes.flatMap(alternatives).map((n) => n.properties?.[key]).filter(Boolean);
  return nodes.flatMap(alternatives);
}

// The largest value the API accepts at a member path (its schema's "maximum"): the form's
// choices are not worked out above it (the divisors of 1e30 would freeze the page; submitting
// shows the API's error beside the field). Throws when the schema gives none, as enumOf does.
export function maximumOf(schema, path) {
  const max = nodesAt(schema, path).map((n) => n.maximum).filter((v) => typeof v === 'number');
  if (!max.length) throw new Error(`/openapi.json gives no maximum for ${schema}.${path}`);
  return Math.max(...max);
}

// enumOf as a select's options, [[value, text]…]: labels gives a planner's words for a value.
export const choicesOf = (schema, path, labels = {}) => enumOf(schema, path).map((v) => [v, labels[v] ?? String(v)]);

// Every string enumeration among a schema's members, nested ones included, by member name
// ({norm: ['layernorm', 'rmsnorm'], …}): what objectEditor offers as selects.
export function memberEnums(schema) {
  const out = {}, root = schemas[schema];
  const walk = (node) => {
    for (const n of branches(node, root)) {
      for (const [k, v] of Object.entries(n.properties || {})) {
        const values = branches(v, root).flatMap((b) => b.enum || []);
        if (values.length && values.every((x) => typeof x === 'string')) out[k] = values;
        walk(v);
        if (v.items) walk(v.items);
      }
    }
  };
  walk(root);
  return out;
}
