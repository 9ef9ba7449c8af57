// forms.js — building form fields. field() makes one labelled input that knows its JSON path
// (data-field, so API errors land beside it); objectEditor() turns any JSON object (a model or
// system preset) into nested inputs and reads them back in the same shape.
import { $$, el, joinPath, parsePath, setAt } from './util.js';

// One labelled control. opts: {label, field, type: 'number'|'text'|'select'|'checkbox',
// value, options: [[value, text]...], hint, min, step}
export function field(opts) {
  let input;
  const id = `f-${(opts.id || opts.field).replace(/[^\w-]/g, '_')}`;
  if (opts.type === 'select') {
    input = el('select', { id, 'data-field': opts.field });
    setOptions(input, opts.options || [], opts.value);
  } else if (opts.type === 'checkbox') {
    input = el('input', { id, type: 'checkbox', 'data-field': opts.field });
    input.checked = !!opts.value;
    return el('div', { class: 'fld check' }, input,
      el('label', { for: id, title: opts.hint || '' }, opts.label));
  } else {
    input = el('input', {
      id, type: opts.type || 'number', 'data-field': opts.field, step: opts.step || 'any',
      min: opts.min, placeholder: opts.placeholder, inputmode: opts.type === 'text' ? undefined : 'decimal',
    });
    if (opts.value !== undefined && opts.value !== null) input.value = opts.value;
  }
  return el('div', { class: 'fld' }, el('label', { for: id }, opts.label),
    input, opts.hint ? el('small', { class: 'hint' }, opts.hint) : null);
}

export function setOptions(select, options, value) {
  select.replaceChildren(...options.map(([v, t]) => el('option', { value: v }, t ?? String(v))));
  if (value !== undefined && options.some(([v]) => String(v) === String(value))) select.value = String(value);
}

// Value of a control by its data-field, as the right JS type.
export function read(form, path) {
  const input = form.querySelector(`[data-field="${CSS.escape(path)}"]`);
  if (!input) return undefined;
  if (input.type === 'checkbox') return input.checked;
  if (input.type === 'number' || input.dataset.kind === 'int') return input.value === '' ? undefined : Number(input.value);
  return input.value;
}

export function write(form, path, value) {
  const input = form.querySelector(`[data-field="${CSS.escape(path)}"]`);
  if (!input) return;
  if (input.type === 'checkbox') input.checked = !!value;
  else input.value = value ?? '';
}

const ENUMS = { processing_mode: ['roofline', 'no_overlap'] };

// Inputs for every member of obj under `root` (the JSON path prefix, e.g. "system"). Arrays are
// edited as JSON text (efficiency curves such as [[128, 0.99], [0, 0.1]]).
export function objectEditor(container, obj, root) {
  container.replaceChildren();
  const walk = (o, parts, into) => {
    for (const [k, v] of Object.entries(o)) {
      if (k === '$comment') continue;
      const p = [...parts, k];
      const path = joinPath(p);
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
        const fs = el('fieldset', { class: 'sub' }, el('legend', {}, k));
        walk(v, p, fs);
        into.append(fs);
      } else if (Array.isArray(v) && v.length && v.every((x) => x && typeof x === 'object' && !Array.isArray(x))) {
        v.forEach((item, i) => {
          const fs = el('fieldset', { class: 'sub' }, el('legend', {}, `${k}[${i}]`));
          walk(item, [...p, i], fs);
          into.append(fs);
        });
      } else if (typeof v === 'boolean') {
        into.append(field({ label: k, field: path, type: 'checkbox', value: v }));
      } else if (typeof v === 'number') {
        into.append(field({ label: k, field: path, value: v }));
      } else if (typeof v === 'string') {
        into.append(ENUMS[k]
          ? field({ label: k, field: path, type: 'select', value: v, options: ENUMS[k].map((x) => [x, x]) })
          : field({ label: k, field: path, type: 'text', value: v }));
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
    else if (input.type === 'number') v = input.value === '' ? undefined : Number(input.value);
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
