// forms.js — building form fields. field() makes one labelled input that knows its JSON path
// (data-field, so API errors land beside it); objectEditor() turns any JSON object (a model or
// system preset) into nested inputs and reads them back in the same shape.
import { ApiError } from './api.js';
import { $$, el, joinPath, parsePath, setAt } from './util.js';

// One labelled control. opts: {label, field, type: 'number'|'text'|'select'|'checkbox',
// value, options: [[value, text]...], hint, min, max, step, required, int, scope}. scope prefixes the
// element id, so the same field on two tabs ("model") gets two ids and each label its own input.
// Numbers are text inputs read by readNumber: the browser's number input empties itself on
// "abc", and an empty value must never turn into a default the planner did not choose.
export function field(opts) {
  let input;
  const id = `f-${opts.scope ? `${opts.scope}-` : ''}${(opts.id || opts.field).replace(/[^\w-]/g, '_')}`;
  if (opts.type === 'select') {
    input = el('select', { id, 'data-field': opts.field });
    setOptions(input, opts.options || [], opts.value);
  } else if (opts.type === 'checkbox') {
    input = el('input', { id, type: 'checkbox', 'data-field': opts.field });
    input.checked = !!opts.value;
    return el('div', { class: 'fld check' }, input,
      el('label', { for: id, title: opts.hint || '' }, opts.label));
  } else {
    const number = (opts.type || 'number') === 'number';
    input = el('input', {
      id, type: 'text', 'data-field': opts.field, placeholder: opts.placeholder,
      inputmode: number ? 'decimal' : undefined, 'data-kind': number ? 'number' : undefined,
      'data-min': opts.min, 'data-max': opts.max, 'data-int': opts.int || (number && opts.step === 1) ? 'true' : undefined,
      'data-required': opts.required ? 'true' : undefined, autocomplete: 'off',
    });
    if (opts.value !== undefined && opts.value !== null) input.value = opts.value;
  }
  return el('div', { class: 'fld' }, el('label', { for: id }, opts.label),
    input, opts.hint ? el('small', { class: 'hint' }, opts.hint) : null);
}

// The number in a numeric input: undefined when empty and optional; throws an ApiError naming
// the field when empty and required, not a number, fractional where a count is wanted, or outside
// its minimum and maximum (so the error shows beside it, as a server's would).
export function readNumber(input) {
  const text = input.value.trim();
  const bad = (why) => new ApiError(0, 'local', why, input.dataset.field);
  if (text === '') {
    if (input.dataset.required) throw bad('is required: give a number');
    return undefined;
  }
  const v = Number(text);
  if (!Number.isFinite(v)) throw bad(`must be a number, not “${text}”`);
  if (input.dataset.int && !Number.isInteger(v)) throw bad(`must be a whole number, not ${text}`);
  if (input.dataset.min !== undefined && v < Number(input.dataset.min)) throw bad(`must be at least ${input.dataset.min}, not ${text}`);
  if (input.dataset.max !== undefined && v > Number(input.dataset.max)) throw bad(`must be at most ${input.dataset.max}, not ${text}`);
  return v;
}

export function setOptions(select, options, value) {
  select.replaceChildren(...options.map(([v, t]) => el('option', { value: v }, t ?? String(v))));
  if (value !== undefined && options.some(([v]) => String(v) === String(value))) select.value = String(value);
}

// Value of a control by its data-field, as the right JS type (throws for a bad number: readNumber).
export function read(form, path) {
  const input = form.querySelector(`[data-field="${CSS.escape(path)}"]`);
  if (!input) return undefined;
  if (input.type === 'checkbox') return input.checked;
  if (input.dataset.kind === 'number') return readNumber(input);
  return input.value;
}

// read() for code that only adapts the form as the planner types (choices, hints): NaN where
// read() would throw, so such code can leave the form alone instead of resetting it.
export function peek(form, path) {
  try { return read(form, path); } catch { return NaN; }
}

export function write(form, path, value) {
  const input = form.querySelector(`[data-field="${CSS.escape(path)}"]`);
  if (!input) return;
  if (input.type === 'checkbox') input.checked = !!value;
  else input.value = value ?? '';
}

// Inputs for every member of obj under `root` (the JSON path prefix, e.g. "system"). Arrays are
// edited as JSON text (efficiency curves such as [[128, 0.99], [0, 0.1]]). labels: a planner's
// words for a member, by name (the API's name stays beside it and in data-field). enums: the
// values a string member takes, by name (catalog.js memberEnums), offered as a select.
export function objectEditor(container, obj, root, labels = {}, enums = {}) {
  container.replaceChildren();
  const walk = (o, parts, into) => {
    for (const [k, v] of Object.entries(o)) {
      if (k === '$comment') continue;
      const p = [...parts, k];
      const path = joinPath(p);
      const label = labels[k] ? `${labels[k]} (${k})` : k;
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
        const fs = el('fieldset', { class: 'sub', 'data-group': path }, el('legend', {}, labels[k] ? `${labels[k]} (${k})` : k));
        walk(v, p, fs);
        into.append(fs);
      } else if (Array.isArray(v) && v.length && v.every((x) => x && typeof x === 'object' && !Array.isArray(x))) {
        v.forEach((item, i) => {
          const fs = el('fieldset', { class: 'sub' }, el('legend', {}, `${k}[${i}]`));
          walk(item, [...p, i], fs);
          into.append(fs);
        });
      } else if (typeof v === 'boolean') {
        into.append(field({ label, field: path, type: 'checkbox', value: v }));
      } else if (typeof v === 'number') {
        into.append(field({ label, field: path, value: v }));
      } else if (typeof v === 'string') {
        into.append(enums[k]
          ? field({ label, field: path, type: 'select', value: v, options: enums[k].map((x) => [x, x]) })
          : field({ label, field: path, type: 'text', value: v }));
      } else {
        const f = field({ label: k, field: path, type: 'text', value: JSON.stringify(v) });
        f.querySelector('input').dataset.kind = 'json';
        f.classList.add('wide');
        into.append(f);
      }
    }
  };
  walk(obj, [root], container);
}

// Reads an objectEditor back. A JSON text that does not parse throws {field, message}.
export function readObject(container, root) {
  const out = {};
  for (const input of $$('[data-field]', container)) {
    const parts = parsePath(input.dataset.field);
    if (parts[0] !== root) continue;
    let v;
    if (input.type === 'checkbox') v = input.checked;
    else if (input.dataset.kind === 'number') v = readNumber(input);
    else if (input.dataset.kind === 'json') {
      try { v = JSON.parse(input.value); } catch {
        throw Object.assign(new Error('is not valid JSON (write a list such as [[128, 0.99], [0, 0.1]])'),
          { field: input.dataset.field });
      }
    } else v = input.value;
    if (v !== undefined) setAt(out, parts, v);
  }
  return out[root] || {};
}
