// estimate.js — the Step time tab: a model, a system and an execution in (each prefilled from a
// preset, every field editable, only valid TP/PP/DP/microbatch choices offered), POST
// /v1/estimate, and the answer drawn by estimate_view.js. Other tabs reach this form through
// nav.js ('estimate.open', 'estimate.request'), never by importing it.
import { api, ApiError, clearErrors, keepResultInUrl, showError } from './api.js';
import { cachedPreset, choicesOf, maximumOf, memberEnums, preset, presetChoices, presetList } from './catalog.js';
import { showEstimate } from './estimate_view.js';
import { field, objectEditor, peek, read, readObject, setOptions, write } from './forms.js';
import { initMeasured } from './measured.js';
import { offer } from './nav.js';
import { $, divisors, el, fmtInt, presetNote, sameValue } from './util.js';

const form = () => $('#estimate-form');
// Model members a preset file may leave out, with the values the API then uses (schemas/model.json).
const DEFAULTS = { bias: false, tied_embeddings: true, position_embedding: 'learned', attention_efficiency: 0.5, mtp_blocks: 0 };
// Giving any of these makes a model Fathom's modern block (embedding and output layers on the
// first and last pipeline stages); a model with none of them is Calculon's (blocks only).
const MODERN_KEYS = ['kv_heads', 'gated_mlp', 'norm', 'qkv_bias', 'causal', 'sliding_window', 'full_attention_every'];
const isModern = (m) => !!m && MODERN_KEYS.some((k) => k in m);
// A planner's words for the model's and the system's members (the API's names stay beside them).
const MODEL_LABELS = {
  hidden: 'Width', feedforward: 'MLP inner width', seq_size: 'Sequence length (tokens)', attn_heads: 'Attention heads',
  attn_size: 'Width of one head', num_blocks: 'Transformer blocks (layers)', vocab_size: 'Vocabulary (tokens)',
  bias: 'Biases in linear layers', kv_heads: 'Key/value heads (grouped-query attention)', gated_mlp: 'Gated MLP (SwiGLU: three matrices)',
  norm: 'Normalization', qkv_bias: 'Bias on Q, K and V only', tied_embeddings: 'Output layer reuses the token embedding',
  position_embedding: 'Positions (learned table, rotary, or none)', causal: 'Causal (decoder) attention',
  // Mixture of experts (model.moe), multi-latent attention (model.mla), multi-token prediction.
  moe: 'Mixture of experts', num_experts: 'Routed experts', top_k: 'Experts each token goes to',
  expert_feedforward: 'MLP inner width of one expert', shared_experts: 'Shared experts (every token)',
  shared_expert_feedforward: 'MLP inner width of a shared expert', first_dense_blocks: 'Dense blocks before the first expert block',
  every: 'An expert block every … blocks', router_bias: 'Router bias (load balancing without an auxiliary loss)',
  router_groups: 'Router groups (group-limited routing)', router_group_top_k: 'Groups each token may use',
  mla: 'Multi-latent attention (MLA)', q_lora_rank: 'Query compression rank', kv_lora_rank: 'Key/value compression rank',
  qk_nope_head_dim: 'Query/key width per head without positions', qk_rope_head_dim: 'Query/key rotary width per head',
  v_head_dim: 'Value width per head', mtp_blocks: 'Multi-token prediction depths (extra blocks)',
  sliding_window: 'Sliding attention window (tokens)', full_attention_every: 'Full attention every … blocks',
};
const hasExperts = (m) => !!m && !!m.moe && Number(m.moe.num_experts) > 0;
const SYSTEM_LABELS = { attention_efficiency: 'Fused-attention efficiency (share of matrix peak)' };
// What the modern block adds to a Calculon model, from its own fields (the "use the modern block" button).
const modernFields = (m) => ({ kv_heads: m.attn_heads, gated_mlp: false, norm: 'layernorm', qkv_bias: !!m.bias,
  causal: true, tied_embeddings: true, position_embedding: 'learned', vocab_size: m.vocab_size ?? 0, ...m });
// Every system shows its fused-attention efficiency: the API's default where a preset gives none.
const systemView = (sys) => ('attention_efficiency' in sys ? sys : { ...sys, attention_efficiency: DEFAULTS.attention_efficiency });
// Board power per GPU (kW, the datasheets' TDP) is the system preset's own power_per_gpu_kw: the
// run's energy follows the system chosen unless the planner typed their own figure.
const powerOf = (sys) => (typeof sys?.power_per_gpu_kw === 'number' ? sys.power_per_gpu_kw : undefined);

// Execution members that are not shown as the main fields, with their defaults: a select's
// choices are the API's enumeration (catalog.js), a boolean is a checkbox.
const MORE = [
  ['attention_type', 'Attention', 'multihead'],
  ['tensor_par_comm_type', 'TP communication', 'ar', 'ar: all-reduce; rs_ag: reduce-scatter + all-gather (sequence parallelism); p2p_rs_ag: the same over point-to-point'],
  ['tensor_par_overlap', 'TP overlap', 'none'],
  ['fused_activation', 'Fused activation', true],
  ['seq_par_ag_redo', 'Redo the sequence-parallel all-gather in backward', false],
  ['data_par_overlap', 'Overlap DP communication with backward', false],
  ['weight_offload', 'Offload weights to tier 2', false],
  ['activations_offload', 'Offload activations to tier 2', false],
  ['optimizer_offload', 'Offload optimizer state to tier 2', false],
  ['training', 'Training step (off: inference forward pass only)', true],
];

// The execution's enumerated members as a select's options, in a planner's words.
const execChoices = (member, labels) => choicesOf('llm_execution', member, labels);

function buildForm(presets) {
  const f = form();
  $('#est-model-pick').append(field({ label: 'Model preset', field: 'model', type: 'select', options: presetChoices(presets.models), value: 'gpt3-175B' }),
    el('small', { class: 'hint preset-note', id: 'est-model-note' }));
  $('#est-system-pick').append(field({ label: 'System preset (one GPU and its networks)', field: 'system', type: 'select', options: presetChoices(presets.systems), value: 'a100_80g' }),
    el('small', { class: 'hint preset-note', id: 'est-system-note' }));
  const ex = $('#est-exec');
  ex.append(
    field({ label: 'GPUs (num_procs)', field: 'execution.num_procs', value: 1024, min: 1, step: 1, required: true }),
    field({ label: 'Tensor parallel (TP)', field: 'execution.tensor_par', type: 'select' }),
    field({ label: 'Context parallel (CP)', field: 'execution.context_par', type: 'select', hint: 'the sequence split over GPUs (ring attention): modern block, fused attention' }),
    field({ label: 'Pipeline parallel (PP)', field: 'execution.pipeline_par', type: 'select' }),
    field({ label: 'Data parallel (DP)', field: 'execution.data_par', type: 'select', hint: 'GPUs ÷ (TP × CP × PP)' }),
    field({ label: 'Global batch (samples)', field: 'execution.batch_size', value: 1024, min: 1, step: 1, required: true }),
    field({ label: 'Microbatch size', field: 'execution.microbatch_size', type: 'select' }),
    field({ label: 'Pipeline interleaving', field: 'execution.pipeline_interleaving', type: 'select' }),
    field({ label: 'Activation recompute', field: 'execution.activation_recompute', type: 'select', value: 'full', options: execChoices('activation_recompute', { attn_only: 'attention only' }) }),
    field({ label: 'Blocks recomputed per pipeline chunk', field: 'execution.recompute_blocks', min: 1, step: 1, placeholder: 'every block', hint: 'with full recompute: the first N blocks of each chunk, the others keep their activations (Megatron’s recompute_num_layers)' }),
    field({ label: 'Selective recompute (modules)', field: 'execution.recompute_modules', type: 'text', placeholder: 'none', hint: 'comma-separated, Megatron’s recompute_modules: layernorm, mlp (a dense MLP), moe_act, mla_up_proj (MLA), moe (the whole MoE MLP); with recompute none or attention only' }),
    field({ label: 'Datatype', field: 'execution.datatype', type: 'select' }),
    field({ label: 'Attention kernel', field: 'execution.attention_kernel', type: 'select', value: 'unfused', options: execChoices('attention_kernel', { unfused: 'unfused (Calculon’s)', fused: 'fused (flash attention)' }) }),
    field({ label: 'Sharding over DP (ZeRO stage)', field: 'execution.zero_stage', type: 'select', value: 0,
      options: [[0, '0: none'], [1, '1: optimizer state (distributed optimizer)'], [2, '2: + gradients'], [3, '3: + weights (FSDP)']] }),
    field({ label: 'Shard group (GPUs per set of shards)', field: 'execution.shard_group', min: 1, step: 1, placeholder: 'all of DP × CP', hint: 'HSDP: shard within groups, replicate across them' }),
    field({ label: 'FP8 matrix multiplies (Transformer Engine)', field: 'execution.fp8', type: 'checkbox', value: false }),
    field({ label: 'FP8 primary weights (no bfloat16 copy)', field: 'execution.fp8_params', type: 'checkbox', value: false, hint: 'Megatron’s fp8_param_gather; needs FP8 matrix multiplies' }),
    field({ label: 'Gradients in the datatype, not float32', field: 'execution.low_precision_gradients', type: 'checkbox', value: false, hint: 'Megatron’s grad_reduce_in_fp32 = False: 2 bytes a parameter in bfloat16 instead of 4' }),
  );
  $('#est-moe').append(
    field({ label: 'Expert parallel (EP: the experts split over GPUs)', field: 'execution.expert_par', type: 'select', hint: 'divides the experts; EP × ETP divides TP × CP × DP' }),
    field({ label: 'Expert tensor parallel (ETP: each expert’s matrices split)', field: 'execution.expert_tensor_par', type: 'select' }),
    field({ label: 'Network for the experts’ all-to-all', field: 'execution.expert_par_net', type: 'select', hint: 'must connect EP × ETP GPUs' }),
    field({ label: 'Load imbalance (busiest GPU’s tokens ÷ mean)', field: 'execution.moe_load_imbalance', placeholder: '1 (balanced routing)', min: 1 }),
    field({ label: 'Capacity factor (tokens dropped above it)', field: 'execution.moe_capacity_factor', placeholder: 'none (no tokens dropped)', min: 0 }),
    field({ label: 'Overlap the all-to-all with the other microbatch (DualPipe)', field: 'execution.moe_a2a_overlap', type: 'checkbox', value: false }),
    field({ label: 'Dispatcher', field: 'execution.moe_dispatcher', type: 'select', value: 'alltoall', options: execChoices('moe_dispatcher', { alltoall: 'all-to-all (every copy sent to its expert)', flex: 'flex: DeepEP / HybridEP (once per remote node)' }), hint: 'differs when the experts span nodes' }),
  );
  const more = $('#est-more');
  more.append(
    field({ label: 'Network for TP', field: 'execution.tensor_par_net', type: 'select' }),
    field({ label: 'Network for PP', field: 'execution.pipeline_par_net', type: 'select' }),
    field({ label: 'Network for DP', field: 'execution.data_par_net', type: 'select' }),
    field({ label: 'Network for CP', field: 'execution.context_par_net', type: 'select' }),
  );
  // Fine-tuning (execution.finetune): none is pre-training; LoRA/QLoRA train adapters only.
  $('#est-ft').append(
    field({ label: 'Method', field: 'finetune.method', type: 'select', value: 'none',
      options: [['none', 'none: pre-training'], ['full', 'full fine-tuning (every weight)'], ['lora', 'LoRA (frozen model, low-rank adapters)'], ['qlora', 'QLoRA (LoRA over a 4-bit NF4 base)']] }),
    field({ label: 'LoRA rank', field: 'finetune.rank', value: 16, min: 1, step: 1, hint: 'r: each adapted projection gets A (n×r) and B (r×n)' }),
    field({ label: 'Adapted projections', field: 'finetune.targets', type: 'text', value: 'all-linear', hint: 'PEFT’s target_modules: “all-linear” (every projection the model has) or names such as q_proj, v_proj; with MLA q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj' }),
    field({ label: 'Adapters on every routed expert too', field: 'finetune.routed_experts', type: 'checkbox', value: true, hint: 'models with experts: gate, up and down adapt each expert (PEFT’s names do), or only the shared experts' }),
    field({ label: 'Frozen weights held in', field: 'finetune.base_datatype', type: 'select', value: 'auto',
      options: [['auto', 'the datatype (LoRA) / NF4 (QLoRA)'], ['bfloat16', 'bfloat16'], ['float16', 'float16'], ['float8', 'float8'], ['float32', 'float32']] }),
  );
  for (const [k, label, dflt, hint] of MORE) {
    more.append(typeof dflt === 'string'
      ? field({ label, field: `execution.${k}`, type: 'select', options: execChoices(k), value: dflt, hint })
      : field({ label, field: `execution.${k}`, type: 'checkbox', value: dflt }));
  }
  const tr = $('#est-training');
  tr.append(
    field({ label: 'Training tokens', field: 'training.tokens', placeholder: 'e.g. 300e9', min: 1 }),
    field({ label: 'Price ($ per GPU-hour)', field: 'training.gpu_hour_price', value: 2, min: 0, hint: 'follows the system until you type your own' }),
    field({ label: 'Power per GPU (kW)', field: 'training.gpu_power_kw', value: 0.4, min: 0, hint: 'follows the system until you type your own' }),
    field({ label: 'PUE', field: 'training.pue', value: 1.1 }),
    field({ label: 'Grid (kg CO₂ per kWh)', field: 'training.co2_kg_per_kwh', value: 0.534 }),
  );
  f.addEventListener('change', (e) => {
    const name = e.target.dataset.field || '';
    if (name === 'model' || name === 'system') {
      if (e.target.value === '') return; // "custom …": keep the edited fields
      e.target.querySelector('option[value=""]')?.remove(); // leaving a "custom" object behind
      if (name === 'model') loadModel(e.target.value); else loadSystem(e.target.value);
    }
    else {
      // A choice the planner makes is theirs: it no longer follows the modern defaults.
      delete e.target.dataset.auto;
      refreshChoices();
    }
  });
  // Editing a preset's fields makes it a custom model or system: the selector says so at once
  // (and names the preset again if the edit is undone).
  f.addEventListener('input', (e) => {
    const name = e.target.dataset.field || '';
    if (name.startsWith('model.') || name.startsWith('model[')) syncPresetLabel('model');
    if (name.startsWith('system.') || name.startsWith('system[')) syncPresetLabel('system');
    if (name === 'training.gpu_power_kw' || name === 'training.gpu_hour_price') e.target.dataset.edited = 'true';
  });
  f.addEventListener('submit', (e) => { e.preventDefault(); submit(); });
}

// The model's fields, labelled, and the note on which block it is.
function showModel(m) {
  objectEditor($('#est-model-fields'), m, 'model', MODEL_LABELS, memberEnums('model'));
  const modern = isModern(m);
  form().dataset.modern = String(modern);
  $('#est-block-note').textContent = modern
    ? 'Modern block: every field counts; the embedding sits on the first pipeline stage, the output layer and loss on the last.'
    : 'Calculon’s block: transformer blocks only (vocab_size is not counted in the step). ';
  $('#est-modern').hidden = modern;
  const experts = hasExperts(m);
  form().dataset.moe = String(experts);
  $('#est-moe-exec').hidden = !experts;
  // A modern model can gain experts (or lose them): the group is optional.
  const toggle = $('#est-moe-toggle');
  toggle.hidden = !modern;
  toggle.textContent = experts ? 'Remove the mixture of experts (a dense model)' : 'Add a mixture of experts (8 experts, 2 per token)';
}

// Adds model.moe to a dense modern model (8 experts, 2 per token, each as wide as its MLP), or
// takes it away: the request then has no moe member.
function toggleExperts() {
  let m;
  try { m = readObject($('#est-model-fields'), 'model'); } catch (e) { showError(form(), e); return; }
  if (hasExperts(m)) delete m.moe;
  else m.moe = { num_experts: 8, top_k: 2, expert_feedforward: m.feedforward || 4 * m.hidden };
  showModel(m);
  syncPresetLabel('model');
  autoExperts();
  refreshChoices();
}

// The expert fields follow the split until the planner sets them.
function autoExperts() {
  const f = form();
  for (const k of ['expert_par', 'expert_tensor_par', 'expert_par_net']) {
    const input = f.querySelector(`[data-field="execution.${k}"]`);
    input.dataset.auto = 'true';
    if (k !== 'expert_par_net') setOptions(input, [[1, '1']], 1);
  }
  write(f, 'execution.moe_load_imbalance', '');
  write(f, 'execution.moe_capacity_factor', '');
  write(f, 'execution.moe_a2a_overlap', false);
  write(f, 'execution.moe_dispatcher', 'alltoall');
  write(f, 'execution.recompute_modules', '');
}

const showSystem = (sys) => objectEditor($('#est-system-fields'), systemView(sys), 'system', SYSTEM_LABELS, memberEnums('llm_system'));

function currentSystem() {
  try { return readObject($('#est-system-fields'), 'system'); } catch { return {}; }
}

// A preset's execution defaults. Modern presets: bfloat16, fused attention, sequence
// parallelism (rs_ag, all-gather redone in backward) when TP > 1, selective recompute, ZeRO 1
// and overlapped DP communication when DP > 1, FP8 when the system has a float8 rate; the
// fields that depend on TP or DP follow them (data-auto) until the planner sets them.
// Calculon presets: Calculon's defaults. Either way a preset starts without offload.
function applyDefaults() {
  const f = form();
  const modern = f.dataset.modern === 'true';
  const sys = currentSystem();
  const types = Object.keys(sys.matrix || {});
  const set = (k, v, auto) => {
    write(f, `execution.${k}`, v);
    const input = f.querySelector(`[data-field="execution.${k}"]`);
    if (auto) input.dataset.auto = 'true'; else delete input.dataset.auto;
  };
  // Both start without offload, TP overlap or a shard group, fused activation on, training.
  for (const k of ['weight_offload', 'activations_offload', 'optimizer_offload']) set(k, false);
  set('tensor_par_overlap', 'none');
  set('fused_activation', true);
  set('training', true);
  set('shard_group', '');
  set('recompute_blocks', '');
  if (modern) {
    if (types.includes('bfloat16')) set('datatype', 'bfloat16');
    set('attention_kernel', 'fused');
    set('activation_recompute', 'attn_only');
    set('fp8', types.includes('float8') && types.includes('bfloat16'));
    for (const k of ['tensor_par_comm_type', 'seq_par_ag_redo', 'zero_stage', 'data_par_overlap']) set(k, null, true);
  } else {
    if (types.includes('float16')) set('datatype', 'float16');
    set('attention_kernel', 'unfused');
    set('activation_recompute', 'full');
    set('fp8', false);
    set('context_par', 1);
    set('tensor_par_comm_type', 'ar');
    set('seq_par_ag_redo', false);
    set('zero_stage', 0);
    set('data_par_overlap', false);
  }
}

// The defaults that follow the split (modern presets, until the planner sets them).
function followSplit(tp, dp) {
  const f = form();
  const auto = (k) => f.querySelector(`[data-field="execution.${k}"]`).dataset.auto === 'true';
  if (auto('tensor_par_comm_type')) write(f, 'execution.tensor_par_comm_type', tp > 1 ? 'rs_ag' : 'ar');
  if (auto('seq_par_ag_redo')) write(f, 'execution.seq_par_ag_redo', tp > 1);
  if (auto('zero_stage')) write(f, 'execution.zero_stage', dp > 1 ? 1 : 0);
  if (auto('data_par_overlap')) write(f, 'execution.data_par_overlap', dp > 1);
}

async function loadModel(name) {
  showModel(await preset('models', name));
  form().querySelector('[data-field="model"]').dataset.base = name;
  notePreset('model', name);
  applyDefaults();
  autoExperts();
  refreshChoices();
}

async function loadSystem(name, keepNets) {
  const sys = await preset('systems', name);
  showSystem(sys);
  form().querySelector('[data-field="system"]').dataset.base = name;
  notePreset('system', name);
  const power = form().querySelector('[data-field="training.gpu_power_kw"]');
  if (powerOf(sys) !== undefined && power.dataset.edited !== 'true') power.value = powerOf(sys);
  const price = form().querySelector('[data-field="training.gpu_hour_price"]');
  if (typeof sys.price_per_gpu_hour === 'number' && price.dataset.edited !== 'true') price.value = sys.price_per_gpu_hour;
  refreshNetworks(sys, keepNets);
  if (form().dataset.modern === 'true') {
    // FP8 follows the system for a modern model: on where it has a float8 rate.
    const types = Object.keys(sys.matrix || {});
    if (types.includes('bfloat16')) write(form(), 'execution.datatype', 'bfloat16');
    write(form(), 'execution.fp8', types.includes('float8') && types.includes('bfloat16'));
  }
  refreshChoices();
}

// Turns the model in the editor into the modern block (a custom model), from its own fields.
function useModernBlock() {
  let m;
  try { m = readObject($('#est-model-fields'), 'model'); } catch (e) { showError(form(), e); return; }
  showModel(modernFields(m));
  syncPresetLabel('model');
  applyDefaults();
  refreshChoices();
}

// What a preset is, in a planner's words, under its selector.
function notePreset(kind, name) {
  const list = presetList()[kind === 'model' ? 'models' : 'systems'] || [];
  const note = $(`#est-${kind}-note`);
  if (note) note.textContent = name ? presetNote(name, (list.find((p) => p.name === name) || {}).comment) : `custom ${kind}: fields edited`;
}

// The selector names the preset while its fields are the preset's, else "custom …".
function syncPresetLabel(kind) {
  const select = form().querySelector(`[data-field="${kind}"]`);
  const base = select.dataset.base || select.value;
  let obj;
  try { obj = readObject($(`#est-${kind}-fields`), kind); } catch { obj = null; }
  const p = cachedPreset(kind === 'model' ? 'models' : 'systems', base);
  const same = obj && p && sameAsPreset(obj, p);
  if (same) {
    select.querySelector('option[value=""]')?.remove();
    select.value = base;
    notePreset(kind, base);
    return;
  }
  let custom = select.querySelector('option[value=""]');
  if (!custom) { custom = el('option', { value: '' }); select.append(custom); }
  custom.textContent = base ? `custom ${kind} (edited ${base})` : `custom ${kind}`;
  select.value = '';
  notePreset(kind, '');
}

// A preset goes by name when its fields were left alone (or only its defaults spelled out).
// The API's defaults inside model.moe (schemas/model.json) count as the preset's too.
const moeDefaults = (m) => (m && m.moe && typeof m.moe === 'object'
  ? { ...m, moe: { every: 1, first_dense_blocks: 0, router_bias: false, shared_experts: 0, shared_expert_feedforward: m.moe.expert_feedforward, ...m.moe } } : m);
const sameAsPreset = (o, q) => {
  if (!q) return false;
  const obj = moeDefaults(o), p = moeDefaults(q);
  return Object.keys(obj).every((k) => k in p ? sameValue(obj[k], p[k]) : DEFAULTS[k] === obj[k]) &&
    Object.keys(p).every((k) => k === '$comment' || k in obj);
};

// Network choices come from the system; by default TP stays on the fastest (first) network and
// PP and DP go to the last one, which connects the most GPUs.
function refreshNetworks(sys, keep) {
  const nets = (sys.networks || []).map((n, i) => [i, `${i}: ${fmtInt(n.size)} GPUs, ${n.bandwidth} GB/s`]);
  const last = Math.max(0, nets.length - 1);
  for (const [k, dflt] of [['tensor_par_net', 0], ['pipeline_par_net', last], ['data_par_net', last]]) {
    const s = form().querySelector(`[data-field="execution.${k}"]`);
    setOptions(s, nets, keep ? s.value : dflt);
  }
  // Context parallelism's network: the API's own choice unless the planner names one.
  const cpn = form().querySelector('[data-field="execution.context_par_net"]');
  setOptions(cpn, [['', 'automatic: the first tier with room after TP'], ...nets], keep ? cpn.value : '');
  const dt = form().querySelector('[data-field="execution.datatype"]');
  const types = Object.keys(sys.matrix || {});
  setOptions(dt, types.map((t) => [t, t]), types.includes(dt.value) ? dt.value : types.includes('float16') ? 'float16' : types[0]);
}

// If the degrees mapped on a network need more GPUs than it connects (say after the GPU count
// grew, or on a system whose first tier joins one or two GPUs: GH200, H100 NVL), go back to the
// default mapping: TP on the first network that connects TP GPUs, PP and DP on the last.
function fixNetworks(deg) {
  let nets;
  try { nets = readObject($('#est-system-fields'), 'system').networks || []; } catch { return; }
  if (!nets.length) return;
  const f = form();
  const need = nets.map(() => 1);
  for (const k of ['tensor_par', 'context_par', 'pipeline_par', 'data_par']) {
    const net = read(f, `execution.${k}_net`);
    if (net === '' || net === undefined) continue; // automatic
    const i = Number(net);
    if (need[i] === undefined) return;
    need[i] *= deg[k];
  }
  if (need.every((x, i) => x <= nets[i].size)) return;
  const last = nets.length - 1;
  write(f, 'execution.tensor_par_net', Math.max(0, nets.findIndex((n) => n.size >= deg.tensor_par)));
  write(f, 'execution.pipeline_par_net', last);
  write(f, 'execution.data_par_net', last);
}

// Keeps the current choice if still valid, else the largest valid one below it.
// dflt is the pick of a still-empty select.
function choose(select, values, dflt = values[0]) {
  const cur = Number(select.value) || dflt;
  const pick = values.includes(cur) ? cur : (values.filter((v) => v <= cur).pop() ?? values[0]);
  setOptions(select, values.map((v) => [v, String(v)]), pick);
  return pick;
}

// A count the form's choices are worked out from: a whole number from 1 to the API's maximum
// for it, else NaN (the planner is still typing; submitting shows the error beside the field).
function countOf(path, schema, member) {
  const v = peek(form(), path);
  return Number.isInteger(v) && v >= 1 && v <= maximumOf(schema, member) ? v : NaN;
}

// The batch as each data-parallel replica runs it, from the form's own DP and microbatch (also
// after a row is opened from a search or a plan, whose split the form then holds).
function batchHint() {
  const f = form(), hint = $('#est-batch-hint');
  const batch = peek(f, 'execution.batch_size'), dp = Number(read(f, 'execution.data_par')) || 1;
  const mbs = Number(read(f, 'execution.microbatch_size')) || 1;
  if (!Number.isInteger(batch) || batch < 1) {
    hint.textContent = 'give the global batch as a whole number of samples';
  } else if (batch % dp === 0) {
    const per = batch / dp;
    hint.textContent = `${fmtInt(per)} samples per DP replica (DP ${dp})` +
      (per % mbs === 0 ? `: ${fmtInt(per / mbs)} microbatches of ${mbs}` : `: not a whole number of microbatches of ${mbs}`);
  } else {
    hint.textContent = `batch must be a multiple of DP (${dp}): try ${fmtInt(Math.max(1, Math.round(batch / dp)) * dp)}`;
  }
}

// Offers only the degrees that divide: TP divides the GPUs and the model's hidden, feedforward
// and head counts; PP divides the rest of the GPUs and the blocks; DP is what is left; the
// microbatch divides the per-replica batch; interleaving fits the blocks per stage (below).
function refreshChoices() {
  const f = form();
  const q = (k) => f.querySelector(`[data-field="execution.${k}"]`);
  const m = (k) => Number(peek(f, `model.${k}`)) || 0;
  // While the GPU count or the blocks are not counts the API takes the choices stay as they
  // are: the planner is still typing, and submitting shows the error beside the field.
  const n = countOf('execution.num_procs', 'llm_execution', 'num_procs');
  const blocks = countOf('model.num_blocks', 'model', 'num_blocks');
  if (Number.isNaN(n) || Number.isNaN(blocks)) return;
  // TP also divides the key/value heads, or is a multiple of them (grouped-query attention).
  const kv = m('kv_heads');
  const tps = divisors(n).filter((d) => [m('hidden'), m('feedforward') || 4 * m('hidden'), m('attn_heads')].every((x) => x > 0 && x % d === 0) &&
    (!kv || kv % d === 0 || d % kv === 0));
  const tp = choose(q('tensor_par'), tps.length ? tps : [1], 8);
  // CP (modern block only) divides the rest, with two chunks of the sequence per GPU.
  const seq = m('seq_size');
  const cps = f.dataset.modern === 'true' ? divisors(n / tp | 0 || 1).filter((d) => d === 1 || (seq > 0 && seq % (2 * d) === 0)) : [1];
  const cp = choose(q('context_par'), cps, 1);
  // The modern block may split its blocks unevenly (DeepSeek-V3's 61 over 16 stages, Llama 3
  // 405B's 126 over 16: the first stages take one more), as the API and the search take them;
  // Calculon's block is offered the even splits only.
  const uneven = f.dataset.modern === 'true';
  const pps = divisors(n / (tp * cp) | 0 || 1).filter((d) => (uneven ? d <= blocks : blocks % d === 0));
  const pp = choose(q('pipeline_par'), pps.length ? pps : [1], 8);
  const dp = Math.max(1, Math.floor(n / (tp * cp * pp)));
  setOptions(q('data_par'), [[dp, String(dp)]], dp);
  fixNetworks({ tensor_par: tp, context_par: cp, pipeline_par: pp, data_par: dp });
  followSplit(tp, dp);
  refreshExperts(tp * cp * dp);
  const batch = countOf('execution.batch_size', 'llm_execution', 'batch_size');
  if (!Number.isNaN(batch)) choose(q('microbatch_size'), batch % dp === 0 ? divisors(batch / dp) : [1]);
  batchHint();
  // Interleaving: at most a stage's blocks, and 1 without a pipeline. Calculon's block needs the
  // chunks to divide the stage; the modern block also takes uneven chunks (the first ones hold a
  // block more), as Megatron's pipeline layouts place them.
  const bpp = Math.max(1, Math.ceil(blocks / pp));
  const vps = pp === 1 ? [1] : f.dataset.modern === 'true' ? Array.from({ length: bpp }, (_, i) => i + 1) : divisors(bpp);
  choose(q('pipeline_interleaving'), vps);
}

// Expert parallelism: EP divides the experts, ETP the expert's MLP width, and EP × ETP divides
// TP × CP × DP (the API folds the expert layers onto attention's GPUs, llm_moe.c fold_size). By
// default ETP is 1 and EP the largest that fits in the system's first network (its NVLink
// domain); the all-to-all runs on the first network that connects EP × ETP GPUs.
function refreshExperts(fold) {
  const f = form();
  if (f.dataset.moe !== 'true') return;
  const q = (k) => f.querySelector(`[data-field="execution.${k}"]`);
  const auto = (k) => q(k).dataset.auto === 'true';
  const num = (k) => Number(peek(f, `model.moe.${k}`)) || 0;
  const experts = countOf('model.moe.num_experts', 'model', 'moe.num_experts') || 1;
  const eff = num('expert_feedforward') || Number(peek(f, 'model.feedforward')) || 1;
  let nets;
  try { nets = readObject($('#est-system-fields'), 'system').networks || []; } catch { nets = []; }
  const etps = divisors(fold).filter((d) => eff % d === 0);
  const etp = auto('expert_tensor_par') ? (setOptions(q('expert_tensor_par'), etps.map((v) => [v, String(v)]), 1), 1) : choose(q('expert_tensor_par'), etps, 1);
  const eps = divisors(experts).filter((d) => (fold / etp) % d === 0);
  const domain = nets.length ? nets[0].size : 1;
  const fitting = eps.filter((d) => d * etp <= domain);
  const ep = auto('expert_par')
    ? (setOptions(q('expert_par'), eps.map((v) => [v, String(v)]), (fitting.length ? fitting : [1]).at(-1)), (fitting.length ? fitting : [1]).at(-1))
    : choose(q('expert_par'), eps, 1);
  // The all-to-all's network: any tier that connects the group; automatically the first one.
  const group = ep * etp;
  const ok = nets.map((n, i) => [i, n]).filter(([, n]) => !(n.size > 0) || n.size >= group || ep === 1);
  const netOpts = ok.map(([i, n]) => [i, `${i}: ${fmtInt(n.size)} GPUs, ${n.bandwidth} GB/s`]);
  const net = q('expert_par_net');
  const keep = !auto('expert_par_net') && ok.some(([i]) => String(i) === net.value) ? net.value : (ok[0] ? ok[0][0] : 0);
  setOptions(net, netOpts, keep);
  $('#est-moe-hint').textContent = `${fmtInt(experts)} experts: ${fmtInt(experts / ep)} per GPU; the all-to-all joins ${fmtInt(group)} GPU${group > 1 ? 's' : ''}` +
    `${fold / group > 1 ? `, expert gradients are reduced over ${fmtInt(fold / group)} copies` : ''}.`;
}

// execution.finetune from the Fine-tune fields (undefined for pre-training).
function finetuneOf(f) {
  const method = read(f, 'finetune.method');
  if (!method || method === 'none') return undefined;
  if (method === 'full') return { method };
  const ft = { method, rank: read(f, 'finetune.rank') };
  const names = String(read(f, 'finetune.targets') || '').split(/[\s,]+/).filter(Boolean);
  ft.targets = names.length === 1 && names[0] === 'all-linear' ? 'all-linear' : names;
  const base = read(f, 'finetune.base_datatype');
  if (base && base !== 'auto') ft.base_datatype = base;
  if (f.dataset.moe === 'true') ft.routed_experts = read(f, 'finetune.routed_experts'); // experts only
  return ft;
}

function writeFinetune(ft) {
  const f = form();
  write(f, 'finetune.method', ft?.method || 'none');
  if (ft?.rank) write(f, 'finetune.rank', ft.rank);
  if (ft?.targets) write(f, 'finetune.targets', Array.isArray(ft.targets) ? ft.targets.join(', ') : ft.targets);
  write(f, 'finetune.routed_experts', ft?.routed_experts !== false);
  write(f, 'finetune.base_datatype', ft?.base_datatype && !(ft.method === 'qlora' && ft.base_datatype === 'nf4') ? ft.base_datatype : 'auto');
}

// A pasted (or chosen) config.json becomes the model: POST /v1/models/from-hf-config reads it
// as a Fathom model object, which the form then holds as a custom model.
async function useHfConfig() {
  const note = $('#est-hf-note');
  let cfg;
  try { cfg = JSON.parse($('#est-hf-config').value); } catch (e) {
    note.textContent = `not JSON: ${e.message}`;
    return;
  }
  try {
    const out = (await api('POST', '/v1/models/from-hf-config', cfg)).data;
    showModel(out.model);
    syncPresetLabel('model');
    applyDefaults();
    autoExperts();
    refreshChoices();
    const p = out.parameters;
    note.textContent = `${out.architecture} (${out.family}): ${fmtInt(p.total - p.mtp)} parameters` +
      `${p.active !== p.total ? `, ${fmtInt(p.active - p.mtp_active)} active` : ''}. ${out.notes.join('. ')}.`;
  } catch (e) {
    note.textContent = e.field ? `${e.field}: ${e.message}` : e.message;
  }
}

// The request as the API wants it; presets go by name unless a field was edited.
function currentRequest() {
  const f = form();
  const model = readObject($('#est-model-fields'), 'model');
  const system = readObject($('#est-system-fields'), 'system');
  const mName = read(f, 'model'), sName = read(f, 'system');
  const execution = {};
  for (const input of f.querySelectorAll('[data-field^="execution."]')) {
    const k = input.dataset.field.slice(10);
    if (input.closest('#est-moe-exec') && f.dataset.moe !== 'true') continue; // a dense model: no expert fields
    const v = read(f, input.dataset.field);
    if (v === '') continue; // an "automatic" choice: the API's own (context_par_net)
    if (k === 'recompute_modules') { // a list of module names
      execution[k] = v.split(/[\s,]+/).filter(Boolean);
      continue;
    }
    execution[k] = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  }
  const ft = finetuneOf(f);
  if (ft) execution.finetune = ft;
  const same = sameAsPreset;
  const req = {
    model: same(model, cachedPreset('models', mName)) ? mName : model,
    system: same(system, cachedPreset('systems', sName)) ? sName : system,
    execution,
  };
  const tokens = read(f, 'training.tokens');
  if (tokens !== undefined) {
    req.training = { tokens };
    for (const k of ['gpu_hour_price', 'gpu_power_kw', 'pue', 'co2_kg_per_kwh']) {
      const v = read(f, `training.${k}`);
      if (v !== undefined) req.training[k] = v;
    }
  }
  return req;
}

async function submit() {
  const f = form();
  clearErrors(f);
  const btn = $('#est-submit');
  btn.disabled = true;
  $('#est-results').classList.add('busy');
  try {
    const req = currentRequest();
    const from = location.hash;
    const res = await api('POST', '/v1/estimate', req);
    showEstimate(req, res.data, res.hash);
    keepResultInUrl(res.hash, from);
  } catch (e) {
    if (e instanceof ApiError || e.field) showError(f, e);
    else showError(f, { message: e.message });
  } finally {
    btn.disabled = false;
    $('#est-results').classList.remove('busy');
  }
}

// Puts a request into the form (a shared link, or a row of a sweep's table).
async function fillForm(req) {
  const f = form();
  // A normalized object is a preset's if it has every member the preset file gives (the
  // normalized form adds the defaults the file leaves out); else the select says "custom".
  // Nested members (model.moe, model.mla) likewise: the normalized form spells out their defaults.
  const isObj = (x) => x && typeof x === 'object' && !Array.isArray(x);
  // A normalized system leaves out the preset's price and power (they are the bill's, not the
  // model's): a row opened from a search or a plan still names its preset.
  const billing = (k) => k === '$comment' || k === 'price_per_gpu_hour' || k === 'power_per_gpu_kw';
  const covers = (p, v) => isObj(v) && Object.keys(p).every((k) => billing(k) || (isObj(p[k]) ? covers(p[k], v[k]) : sameValue(p[k], v[k])));
  const pick = async (kind, key, v) => {
    const select = f.querySelector(`[data-field="${key}"]`);
    select.querySelector('option[value=""]')?.remove();
    if (typeof v === 'string') { write(f, key, v); return; }
    for (const p of presetList()[kind]) {
      // an alias is its preset's object under another name: the preset's own name is the answer
      if (!p.alias_of && covers(await preset(kind, p.name), v)) { write(f, key, p.name); return; }
    }
    select.append(el('option', { value: '' }, `custom ${key}`));
    select.value = '';
    select.dataset.base = '';
  };
  await pick('models', 'model', req.model);
  await pick('systems', 'system', req.system);
  for (const k of ['model', 'system']) {
    const v = read(f, k);
    if (v) f.querySelector(`[data-field="${k}"]`).dataset.base = v;
    notePreset(k, v);
  }
  showModel(typeof req.model === 'string' ? await preset('models', req.model) : req.model);
  const sys = typeof req.system === 'string' ? await preset('systems', req.system) : req.system;
  showSystem(sys);
  refreshNetworks(sys, true);
  // A request's execution is the planner's: nothing follows the modern defaults any more.
  for (const input of f.querySelectorAll('[data-auto]')) delete input.dataset.auto;
  const e = { context_par: 1, ...(req.execution || {}) };
  // optimizer_sharding is ZeRO stage 1 (an older request may give only it).
  if (e.zero_stage === undefined && e.optimizer_sharding !== undefined) e.zero_stage = e.optimizer_sharding ? 1 : 0;
  delete e.optimizer_sharding;
  // A normalized request spells out the API's own choices; left as such they would stop
  // following the split (a grid varying DP, a new GPU count): the shard group of all of DP × CP,
  // and the context-parallel network when there is no context parallelism.
  if (e.shard_group !== undefined && e.shard_group === (e.data_par ?? 0) * e.context_par) delete e.shard_group;
  if (e.context_par === 1) delete e.context_par_net;
  write(f, 'execution.shard_group', ''); // what the request leaves out is the API's default
  write(f, 'execution.recompute_blocks', '');
  write(f, 'execution.context_par_net', '');
  // The expert fields: the request's, else the API's defaults (no expert parallelism).
  for (const k of ['expert_par', 'expert_tensor_par']) setOptions(f.querySelector(`[data-field="execution.${k}"]`), [[e[k] ?? 1, String(e[k] ?? 1)]], e[k] ?? 1);
  for (const k of ['moe_load_imbalance', 'moe_capacity_factor']) write(f, `execution.${k}`, '');
  write(f, 'execution.moe_a2a_overlap', false);
  write(f, 'execution.moe_dispatcher', e.moe_dispatcher ?? 'alltoall');
  write(f, 'execution.fp8_params', false);
  write(f, 'execution.low_precision_gradients', false);
  write(f, 'execution.recompute_modules', (e.recompute_modules ?? []).join(', '));
  delete e.recompute_modules;
  write(f, 'execution.num_procs', e.num_procs ?? e.tensor_par * e.context_par * e.pipeline_par * e.data_par);
  write(f, 'execution.batch_size', e.batch_size);
  for (const k of ['tensor_par', 'context_par', 'pipeline_par', 'microbatch_size', 'pipeline_interleaving']) {
    const s = f.querySelector(`[data-field="execution.${k}"]`);
    setOptions(s, [[e[k], String(e[k])]], e[k]);
  }
  refreshChoices();
  for (const [k, v] of Object.entries(e)) {
    const input = f.querySelector(`[data-field="execution.${k}"]`);
    if (input && input.tagName === 'SELECT' && ![...input.options].some((o) => o.value === String(v))) input.append(el('option', { value: v }, String(v)));
    write(f, `execution.${k}`, v);
  }
  if (req.training) {
    for (const [k, v] of Object.entries(req.training)) {
      if (v === undefined || v === null) continue;
      write(f, `training.${k}`, v);
      const input = f.querySelector(`[data-field="training.${k}"]`);
      if (input) input.dataset.edited = 'true'; // the opened row's bill: kept until changed
    }
  }
  writeFinetune(req.execution?.finetune);
  batchHint();
}

async function init() {
  const presets = presetList();
  buildForm(presets);
  const f = form();
  const [model, sys] = await Promise.all([preset('models', read(f, 'model')), preset('systems', read(f, 'system'))]);
  showModel(model);
  showSystem(sys);
  $('#est-modern').addEventListener('click', useModernBlock);
  $('#est-hf-use').addEventListener('click', useHfConfig);
  $('#est-hf-file').addEventListener('change', async (e) => {
    const file = e.target.files?.[0];
    if (file) { $('#est-hf-config').value = await file.text(); await useHfConfig(); }
  });
  $('#est-moe-toggle').addEventListener('click', toggleExperts);
  autoExperts();
  for (const k of ['model', 'system']) { f.querySelector(`[data-field="${k}"]`).dataset.base = read(f, k); notePreset(k, read(f, k)); }
  refreshNetworks(sys);
  applyDefaults();
  refreshChoices(); // TP 8 × PP 8 where they divide: the usual starting point for large models
  initMeasured(); // the "Measured runs" section below the form
  offer('estimate.request', currentRequest);
  offer('estimate.open', async (req) => {
    await fillForm(req);
    location.hash = '#estimate';
    await submit();
  });
}

// A stored estimate (#r=<hash>) back on the form, with its answer.
async function open(result, hash) {
  await fillForm(result.request);
  // Names of matching presets read better than the objects the normalized request holds.
  const named = currentRequest();
  showEstimate({ ...result.request, model: named.model, system: named.system }, result.response, hash);
}

export const estimateTab = {
  name: 'estimate',
  footer: 'Step time and memory: Calculon’s analytical model of Megatron-style training, with Fathom’s modern block (grouped-query attention, gated MLP, embeddings, fused attention, FP8, context parallelism, ZeRO).',
  endpoints: ['estimate'],
  init,
  open,
};
