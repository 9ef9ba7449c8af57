/* llm_measured.c — the step model against published, measured training runs
 * (presets/validation/measured_runs.json, a copy of shared/validation/): for each run the
 * model, system and layout it states are estimated and the tokens per second per GPU compared.
 *
 * One rule for every row, no per-row knobs (doc/validation.md, "Measured runs"):
 *   model      the row's shape as the modern block: kv_heads, head size, vocabulary, RoPE
 *              (learned positions when pos_emb says "learned" or "absolute", none for NoPE),
 *              linear biases only when the row sets "bias": true,
 *              untied embeddings, causal, a sliding window when the attention text gives one
 *              (GPT-OSS: 128 tokens, every 2nd block full); gated MLP and RMSNorm for SwiGLU rows, plain MLP and
 *              LayerNorm otherwise (Nemotron-4's squared ReLU)
 *   system     one preset per GPU type, named as a word anywhere in gpu_type: h100_sxm,
 *              h200, h800, b200, b300, gb200_nvl72, gb300_nvl72, mi300x, a100_sxm (none for
 *              PCIe cards, a part with other memory than the preset's or capped below its
 *              board power, or GPUs without a preset: the row is listed with the reason)
 *   measured   tokens_per_s_per_gpu, else step_time_s compared as the tokens/s/GPU it makes,
 *              else tflops_per_gpu (below)
 *   execution  the row's TP, PP, VP (interleaving), DP (GPUs / (TP·PP·CP) when not given),
 *              global and micro batch; bfloat16, with
 *              FP8 GEMMs and FP8 primary weights (fp8_params) for FP8 and MXFP8 rows (a
 *              Megatron MoE row's fp8_recipe as its precision names it: mxfp8, blockwise,
 *              delayed, else current);
 *              gradients in bfloat16 (low_precision_gradients: every Megatron-Bridge performance
 *              recipe sets grad_reduce_in_fp32 = False, Megatron-LM's default); fused
 *              attention; sequence parallelism when
 *              TP > 1, keeping the sharded input and gathering it again in backward as
 *              Megatron does (seq_par_ag_redo; not with full recompute, which redoes it all),
 *              with the TP collectives overlapped with the GEMMs (tensor_par_overlap "ring":
 *              the NeMo recipes' tp_comm_overlap); the distributed optimizer and overlapped gradient reduction when DP > 1;
 *              TP, then DP, then PP placed on the NVLink tier while they fit in it (Megatron's
 *              rank order), from the first that does not the rest on the node-spanning tier
 *              context parallelism as the row gives it (cp; placed after TP on the NVLink tier
 *              while it fits); FSDP rows (fsdp > 0) as ZeRO-3 sharded over the row's FSDP
 *              group (shard_group; all of DP·CP for a row that only sets fsdp_enabled), other
 *              rows with DP > 1 Megatron's distributed optimizer
 *   recompute  the row's own when it states one the rule reads (stated_recompute), estimated
 *              as stated; else, as in the summary tables, unknown: the least that fits in
 *              memory (none, then attn_only, then attn_only with selective recompute of
 *              layernorm, then of moe_act too, then of mla_up_proj too, then full recompute of
 *              the fewest blocks of each pipeline chunk, Megatron's recompute_method "block", up
 *              to every block: least_recompute)
 *   MoE rows   model.moe from the row's num_experts, top_k, expert_ffn, shared_experts and
 *              shared_expert_ffn, the first dense blocks from moe_layers ("first 3 dense"),
 *              one MoE block in N from it ("every 2nd", "alternating", "interleaved": 2);
 *              model.mla parsed from the attention text ("MLA (q_lora 1536, kv_lora 512, …)");
 *              model.mtp_blocks from mtp_layers; group-limited routing from the row's
 *              router_groups and router_group_top_k, else from the built-in model preset of
 *              the same MoE shape (DeepSeek-V3's: 8 groups, 4 per token, from its config; no
 *              other preset has groups); feedforward = expert_ffn when the row gives no
 *              dense ffn (no dense block then); no router bias (timing-neutral); expert_par = ep,
 *              expert_tensor_par = etp (1 when not given, Megatron-Bridge's recipes); the
 *              dispatch/combine all-to-all on the NVLink tier while ep·etp fits in it, else on
 *              the node-spanning tier, with the flex dispatcher (Megatron-Bridge's MoE recipes
 *              dispatch with DeepEP or HybridEP); moe_load_imbalance 1 (the recipes
 *              force-balance routing); no all-to-all overlap (the tables do not say)

 * Rows that publish only the source's TFLOP/s per GPU (no tokens/s, microbatch not stated:
 * taken as 1) are estimated and compared on model TFLOP/s per GPU instead, their error reported
 * apart and kept out of the tokens/s mean. Their estimate is counted as the source counts: all
 * such rows come from NeMo 24.03's long-sequence table, whose FLOP formula (like Megatron-LM's
 * before March 2025) counts the whole s×s score matrix, causal or not. NeMo's 24.07 table checks
 * it: Llama 2 7B at 767 TFLOP/s and 16,634 tokens/s/GPU is 46.1 GFLOP per token, the full
 * count (46.08), not the causal one (42.86). Counted the causal way, a 512K-token row would be
 * compared against a figure inflated 1.9 times. A user's file (fathom validate --runs) is counted
 * the same way, so its rows had better give tokens/s. A row that publishes nothing measured is
 * listed with the reason.
 *
 * Leave-one-source-out (add_loso, when the calibrate module is built): each row is predicted
 * again by its GPU's preset calibrated on the other sources' rows of that GPU — the whole-run fit
 * of POST /v1/calibrate — so that the error says how well a calibrated Fathom predicts runs of a
 * software stack and publication it has not seen. A dense row's preset is fitted on dense rows
 * only: the MoE rows' software levels (dispatcher, CUDA graphs, release) move them more than any
 * parameter of the preset can follow, and would pull the dense fit with them; an MoE row's on
 * every row. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json_read.h"
#include "llm_codec.h"
#include "llm_measured_gpu.h"
#include "model_codec.h"
#include "text.h"

/* A row's integer member (an integral real such as 2.0 is that integer: row_types has refused
 * any other number), or dflt when absent or null. */
static int64_t row_int(const json_t *row, const char *key, int64_t dflt)
{
    const json_t *v = json_object_get(row, key);
    return json_is_number(v) ? (int64_t)json_number_value(v) : dflt;
}

/* The members the rule reads (doc/measured_runs.md), by type. null stands for absent, as the
 * published files write an unstated figure. Other members are descriptive (notes,
 * derived_fields, mfu, ...) and left alone: the format is open to what a source states. */
static const char *const row_ints[] = {
    "cp",      "dp",          "ep",       "etp",        "expert_ffn", "ffn",
    "fsdp",    "global_batch", "gpu_count", "head_dim", "heads",      "hidden",
    "kv_heads", "layers",     "micro_batch", "mtp_layers", "num_experts", "pp",
    "router_group_top_k", "router_groups", "seq_len", "shared_expert_ffn", "shared_experts",
    "top_k",   "tp",          "vocab",    "vp",         NULL};
static const char *const row_strings[] = {
    "attention", "gpu_type", "id", "mlp", "model", "moe_layers", "notes", "pos_emb",
    "precision", "recompute", "source", "source_section", "stack", NULL};
static const char *const row_bools[] = {"bias", "moe", "fsdp_enabled", NULL};
static const char *const row_numbers[] = {"tokens_per_s_per_gpu", "step_time_s",
                                          "tflops_per_gpu", "memory_gib", NULL};
static const jr_row_types_t row_types = {row_ints, row_strings, row_bools, row_numbers};

/* What a row publishes as measured, the first of these it gives as a number (doc/validation.md: the
 * ground truth is tokens/s/GPU or the step time; the source's TFLOP/s counts its own FLOPs),
 * and the reason when it is not positive. */
static const struct {
    const char *key, *not_positive;
} measured_keys[] = {
    {"tokens_per_s_per_gpu", "tokens_per_s_per_gpu must be a positive number"},
    {"step_time_s", "step_time_s must be a positive number"},
    {"tflops_per_gpu", "tflops_per_gpu must be a positive number"},
};

/* The index in measured_keys of the figure the row is compared on, or -1. */
static int measured_index(const json_t *row)
{
    for (int i = 0; i < (int)(sizeof measured_keys / sizeof measured_keys[0]); i++)
        if (json_is_number(json_object_get(row, measured_keys[i].key)))
            return i;
    return -1;
}

static const char *measured_key(const json_t *row)
{
    const int i = measured_index(row);
    return i < 0 ? NULL : measured_keys[i].key;
}

/* Why a row cannot be estimated yet, or NULL. The figure compared is measured_key's; it must be
 * a positive number, and a step time needs the batch, sequence and GPUs that make it tokens/s. */
static const char *inexpressible(const json_t *row)
{
    if (!json_is_object(row))
        return "a row is a JSON object in measured_runs.json's format";
    const int i = measured_index(row);
    if (i < 0)
        return "nothing measured is published";
    const char *key = measured_keys[i].key;
    const double v = json_number_value(json_object_get(row, key));
    if (!(v > 0) || !isfinite(v))
        return measured_keys[i].not_positive;
    if (strcmp(key, "step_time_s") == 0 &&
        (row_int(row, "global_batch", 0) <= 0 || row_int(row, "seq_len", 0) <= 0 ||
         row_int(row, "gpu_count", 0) <= 0))
        return "step_time_s is compared as tokens/s/GPU, which needs global_batch, seq_len and "
               "gpu_count";
    return NULL;
}

static json_t *row_model_dense(const json_t *row);

/* The integer after `key` in a free-text field ("q_lora 1536"), or dflt. */
static int64_t text_int(const char *text, const char *key, int64_t dflt)
{
    const char *p = strstr(text, key);
    long long v;
    return p && sscanf(p + strlen(key), " %lld", &v) == 1 ? (int64_t)v : dflt;
}

/* Every how many blocks one is an MoE block, from the moe_layers text: "every 4th layer" 4,
 * "alternating", "every other" or "interleaved" 2, else 1 (every block after the first dense
 * ones). */
static int64_t moe_every(const char *text)
{
    const int64_t n = text_int(text, "every", 0);
    if (n > 1)
        return n;
    return llm__has_word(text, "alternating") || llm__has_word(text, "interleaved") ||
                   llm__has_word(text, "every other")
               ? 2
               : 1;
}

/* model.moe, model.mla and model.mtp_blocks of an MoE row (header comment). */
static int add_moe(const json_t *row, json_t *m)
{
    if (!json_is_true(json_object_get(row, "moe")))
        return 0;
    const int64_t fe = row_int(row, "expert_ffn", 0);
    const int64_t shared = row_int(row, "shared_experts", 0);
    json_t *moe = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "num_experts",
                            (json_int_t)row_int(row, "num_experts", 0), "top_k",
                            (json_int_t)row_int(row, "top_k", 0), "expert_feedforward",
                            (json_int_t)fe, "shared_experts", (json_int_t)shared,
                            "shared_expert_feedforward",
                            (json_int_t)row_int(row, "shared_expert_ffn", fe),
                            "first_dense_blocks",
                            (json_int_t)text_int(jr_text(row, "moe_layers"), "first", 0));
    if (!moe || json_object_set_new(m, "moe", moe))
        return -1;
    const int64_t every = moe_every(jr_text(row, "moe_layers"));
    if (every > 1 && json_object_set_new(moe, "every", json_integer(every)))
        return -1;
    /* group-limited routing as the row gives it (else lend_router_groups) */
    const int64_t groups = row_int(row, "router_groups", 0);
    if (groups > 0 &&
        (json_object_set_new(moe, "router_groups", json_integer(groups)) ||
         json_object_set_new(moe, "router_group_top_k",
                             json_integer(row_int(row, "router_group_top_k", 0)))))
        return -1;
    if (row_int(row, "ffn", 0) == 0 && json_object_set_new(m, "feedforward", json_integer(fe)))
        return -1;
    if (row_int(row, "mtp_layers", 0) > 0 &&
        json_object_set_new(m, "mtp_blocks", json_integer(row_int(row, "mtp_layers", 0))))
        return -1;
    const char *attn = jr_text(row, "attention");
    if (strncmp(attn, "MLA", 3) != 0)
        return 0;
    json_t *mla = json_pack("{s:I,s:I,s:I,s:I,s:I}", "q_lora_rank",
                            (json_int_t)text_int(attn, "q_lora", 0), "kv_lora_rank",
                            (json_int_t)text_int(attn, "kv_lora", 0), "qk_nope_head_dim",
                            (json_int_t)text_int(attn, "qk_nope", 0), "qk_rope_head_dim",
                            (json_int_t)text_int(attn, "qk_rope", 0), "v_head_dim",
                            (json_int_t)text_int(attn, "v ", 0));
    return !mla || json_object_set_new(m, "mla", mla) ? -1 : 0;
}

/* model.sliding_window from the attention text ("sliding-window(128)"), every 2nd block full
 * when it alternates ("alternating full / sliding-window(128) layers"). */
static int add_window(const json_t *row, json_t *m)
{
    const char *attn = jr_text(row, "attention");
    const int64_t window = text_int(attn, "sliding-window(", 0);
    if (window <= 0)
        return 0;
    return json_object_set_new(m, "sliding_window", json_integer(window)) ||
                   (strstr(attn, "alternating") &&
                    json_object_set_new(m, "full_attention_every", json_integer(2)))
               ? -1
               : 0;
}

static json_t *row_model(const json_t *row)
{
    json_t *m = row_model_dense(row);
    if (m && (add_moe(row, m) || add_window(row, m))) {
        json_decref(m);
        return NULL;
    }
    return m;
}

/* model.position_embedding from the row's pos_emb text: learned (or absolute) positions, none
 * (NoPE), else rotary. */
static const char *row_position(const json_t *row)
{
    const char *pos = jr_text(row, "pos_emb");
    if (llm__has_word(pos, "learned") || llm__has_word(pos, "absolute"))
        return "learned";
    return llm__has_word(pos, "none") || llm__has_word(pos, "NoPE") ? "none" : "rope";
}

static json_t *row_model_dense(const json_t *row)
{
    const bool gated = codec_contains_nocase(jr_text(row, "mlp"), "SwiGLU");
    int64_t heads = row_int(row, "heads", 1);
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:s,s:b,s:s,s:b,s:b}", "hidden",
                     (json_int_t)row_int(row, "hidden", 0), "feedforward",
                     (json_int_t)row_int(row, "ffn", 0), "seq_size",
                     (json_int_t)row_int(row, "seq_len", 0), "attn_heads", (json_int_t)heads,
                     "kv_heads", (json_int_t)row_int(row, "kv_heads", heads), "attn_size",
                     (json_int_t)row_int(row, "head_dim", 0), "num_blocks",
                     (json_int_t)row_int(row, "layers", 0), "vocab_size",
                     (json_int_t)row_int(row, "vocab", 0), "gated_mlp", gated, "norm",
                     gated ? "rmsnorm" : "layernorm", "bias",
                     json_is_true(json_object_get(row, "bias")), "position_embedding",
                     row_position(row),
                     "tied_embeddings", 0, "causal", 1);
}

/* TP, then CP, DP and PP, each on the first tier that holds the span of its group (its degree
 * times the product of those before it: Megatron's rank order puts each group's ranks a stride
 * of the inner groups apart) and that it fills when the tier must be filled; a group never lands
 * below the tier of one before it, and one no tier holds goes on the last. */
static void place_networks(const llm_system_t *s, int64_t tp, int64_t cp, int64_t dp, int64_t pp,
                           int nets[4])
{
    const int64_t par[4] = {tp, cp, dp, pp};
    int64_t used = 1;
    int lowest = 0;
    for (int i = 0; i < 4; i++) {
        nets[i] = 0;
        if (par[i] == 1)
            continue;
        const int64_t next = used * par[i];
        int t = lowest;
        while (t < s->num_networks - 1 &&
               (s->networks[t].size < next ||
                (s->networks[t].must_be_filled && s->networks[t].size % next != 0)))
            t++;
        nets[i] = lowest = t;
        used = next;
    }
}

/* The row's DP, or GPUs / (TP·PP·CP) when it gives none (the validation set's derivation). */
static int64_t row_dp(const json_t *row)
{
    const int64_t dp = row_int(row, "dp", 0), n = row_int(row, "gpu_count", 0);
    const int64_t inner = row_int(row, "tp", 1) * row_int(row, "pp", 1) * row_int(row, "cp", 1);
    if (dp > 0)
        return dp;
    return inner > 0 && n > 0 && n % inner == 0 ? n / inner : 1;
}

/* The software level of an MoE row as its notes state it (doc/moe.md, "Validation"): the
 * CUDA-graph scope, the dispatcher and the all-to-all overlap. What a row leaves unsaid takes the
 * recipes' common setting: graphs over attention, router and preprocessing (Megatron-Core's MoE
 * guide: --cuda-graph-modules attn moe_router moe_preprocess), the flex dispatcher (DeepEP or
 * HybridEP), no all-to-all overlap. */
typedef struct {
    const char *graphs;     /* llm_cuda_graphs_names */
    const char *dispatcher; /* llm_moe_dispatcher_names */
    bool a2a_overlap;
    bool stated[3];         /* graphs, dispatcher, overlap read from the notes */
} moe_software_t;

static moe_software_t row_moe_software(const json_t *row)
{
    const char *n = jr_text(row, "notes");
    moe_software_t w = {"partial", "flex", false, {false, false, false}};
    if (codec_contains_nocase(n, "full-iteration CUDA graph") ||
        codec_contains_nocase(n, "CUDA graph over the whole iteration"))
        w.graphs = "full";
    else if (codec_contains_nocase(n, "no CUDA graphs"))
        w.graphs = "none";
    else if (codec_contains_nocase(n, "CUDA graphs over attention"))
        w.graphs = "partial";
    else if (codec_contains_nocase(n, "CUDA graphs over router"))
        w.graphs = "router";
    w.stated[0] = strcmp(w.graphs, "partial") != 0 || codec_contains_nocase(n, "CUDA graphs over");
    if (codec_contains_nocase(n, "all-to-all dispatcher")) {
        w.dispatcher = "alltoall";
        w.stated[1] = true;
    } else if (llm__has_word(n, "DeepEP") || llm__has_word(n, "HybridEP")) {
        w.stated[1] = true;
    }
    w.a2a_overlap = codec_contains_nocase(n, "all-to-all overlap");
    w.stated[2] = w.a2a_overlap;
    return w;
}

/* The release a row was measured with: the leading version of its source_section ("26.04.01
 * NeMo Container / …" → "26.04.01"), or NULL when it names none. */
static json_t *row_release(const json_t *row)
{
    const char *sec = jr_text(row, "source_section");
    size_t n = 0;
    while (isdigit((unsigned char)sec[n]) || (sec[n] == '.' && isdigit((unsigned char)sec[n + 1])))
        n++;
    return n >= 4 && strchr(sec, '.') && strchr(sec, '.') < sec + n ? json_stringn(sec, n)
                                                                     : json_null();
}

/* An MoE row's software level for the report: the release and what the notes state of the
 * dispatcher, the CUDA-graph scope and the all-to-all overlap, each with whether the notes
 * stated it or the recipes' default stands in (row_moe_software). */
static json_t *encode_software(const json_t *row)
{
    const moe_software_t w = row_moe_software(row);
    json_t *stated = json_array();
    static const char *const what[3] = {"cuda_graphs", "dispatcher", "a2a_overlap"};
    for (int i = 0; stated && i < 3; i++)
        if (w.stated[i] && json_array_append_new(stated, json_string(what[i]))) {
            json_decref(stated);
            stated = NULL;
        }
    return json_pack("{s:o,s:s,s:s,s:b,s:o}", "release", row_release(row), "dispatcher",
                     w.dispatcher, "cuda_graphs", w.graphs, "a2a_overlap", w.a2a_overlap,
                     "stated", stated);
}

/* The stack a row ran (doc/stacks.md): its "stack" member when it gives one, else the one its
 * source repository is: torchtitan's (pytorch/torchtitan) torchtitan; MosaicML's Composer and
 * llm-foundry and Hugging Face's Accelerate and transformers (FSDP1 trainers) fsdp; any other
 * (NVIDIA's Megatron-LM, NeMo, Megatron-Bridge) Megatron. */
static llm_stack_t row_stack(const json_t *row)
{
    const char *given = jr_text(row, "stack");
    for (int i = 0; llm_stack_names[i]; i++)
        if (strcmp(given, llm_stack_names[i]) == 0)
            return (llm_stack_t)i;
    const char *src = jr_text(row, "source");
    if (strncmp(src, "pytorch/torchtitan", 18) == 0)
        return LLM_STACK_TORCHTITAN;
    static const char *const fsdp1[] = {"mosaicml/composer", "mosaicml/llm-foundry",
                                        "huggingface/accelerate", "huggingface/transformers"};
    for (size_t i = 0; i < sizeof fsdp1 / sizeof fsdp1[0]; i++)
        if (strncmp(src, fsdp1[i], strlen(fsdp1[i])) == 0)
            return LLM_STACK_FSDP;
    return LLM_STACK_MEGATRON;
}

/* Whether the row's precision, notes or section say `what` (any case). */
static bool row_says(const json_t *row, const char *what)
{
    return codec_contains_nocase(jr_text(row, "precision"), what) || codec_contains_nocase(jr_text(row, "notes"), what) ||
           codec_contains_nocase(jr_text(row, "source_section"), what);
}

/* What a PyTorch-stack row runs beyond its layout, read from its words (doc/measured_runs.md):
 *   compile     "compile" in its precision ("BF16 + torch.compile", "Float8 … + compile"),
 *               async TP (torchtitan's is a compile pass), or torchtitan's Float8 unless the
 *               precision says "eager" (torchtitan runs it compiled)
 *   fp8         "Float8" or "FP8" in its precision; the recipe "rowwise" when it says so, else
 *               the stack's (torchao's tensorwise)
 *   async_tp    "Async TP"/"AsyncTP" in its precision, notes or section, unless its notes say
 *               "vanilla TP"
 *   the rest    as the stack runs it: torchtitan's sequence-parallel TP (rs_ag) without
 *               Transformer Engine's tiled overlap; no FP8 primary weights (torchao casts the
 *               bfloat16 weights each step); gradients reduced in fp32 (torchtitan's only
 *               mixed_precision_reduce in 2024) — no low_precision_gradients. */
static int pytorch_execution(const json_t *row, llm_stack_t stack, json_t *e)
{
    const char *prec = jr_text(row, "precision");
    const bool fp8 = codec_contains_nocase(prec, "Float8") || codec_contains_nocase(prec, "FP8");
    const bool vanilla = codec_contains_nocase(jr_text(row, "notes"), "vanilla TP");
    const bool async_tp = row_int(row, "tp", 1) > 1 && !vanilla &&
                          (row_says(row, "Async TP") || row_says(row, "AsyncTP"));
    /* torchtitan runs torchao's Float8 compiled: its docs/float8.md calls --training.compile
     * "required for competitive performance" (it fuses the casts), and the 405B config its
     * Float8 figures came from sets compile = true beside enable_float8_linear (pull request
     * 554, 9515a14) */
    const bool compile = codec_contains_nocase(prec, "compile") || async_tp ||
                         (fp8 && stack == LLM_STACK_TORCHTITAN && !codec_contains_nocase(prec, "eager"));
    if (json_object_set_new(e, "stack", json_string(llm_stack_names[stack])) ||
        json_object_set_new(e, "fp8", json_boolean(fp8)) ||
        json_object_set_new(e, "compile", json_boolean(compile)) ||
        json_object_set_new(e, "async_tp", json_boolean(async_tp)) ||
        json_object_set_new(e, "seq_par_ag_redo", json_false()))
        return -1;
    json_object_del(e, "tensor_par_overlap");
    json_object_del(e, "attention_kernel"); /* the stack's: F.scaled_dot_product_attention */
    json_object_del(e, "fp8_params");
    json_object_del(e, "low_precision_gradients");
    if (fp8 && codec_contains_nocase(prec, "rowwise") &&
        json_object_set_new(e, "fp8_recipe", json_string("rowwise")))
        return -1;
    return 0;
}

/* The microbatch: the row's; else, for torchtitan with pipeline parallelism, its default of as
 * many microbatches as pipeline ranks (pipeline_parallel_microbatches unset:
 * pipeline_llama.py) splitting each replica's batch; else 1. */
static int64_t row_micro(const json_t *row, int64_t pp, int64_t dp)
{
    const int64_t given = row_int(row, "micro_batch", 0);
    if (given > 0)
        return given;
    const int64_t local = dp > 0 ? row_int(row, "global_batch", 1) / dp : 1;
    if (row_stack(row) == LLM_STACK_TORCHTITAN && pp > 1 && local % pp == 0)
        return local / pp;
    return 1;
}

/* The pipeline chunks per rank: the row's VP; else, for a torchtitan row whose schedule is
 * interleaved ("Interleaved 1F1B" in its notes or section), torchtitan's default of 2 stages
 * per rank for its multi-stage schedules (generate_split_points); else 1. */
static int64_t row_interleaving(const json_t *row, int64_t pp, int64_t vp)
{
    if (pp <= 1)
        return 1;
    if (vp > 1)
        return vp;
    return row_stack(row) == LLM_STACK_TORCHTITAN &&
                   (codec_contains_nocase(jr_text(row, "notes"), "Interleaved") ||
                    codec_contains_nocase(jr_text(row, "source_section"), "Interleaved"))
               ? 2
               : 1;
}

static json_t *row_execution(const json_t *row, const llm_system_t *s, const char *recompute)
{
    const int64_t tp = row_int(row, "tp", 1), pp = row_int(row, "pp", 1);
    const int64_t dp = row_dp(row), vp = row_int(row, "vp", 1), cp = row_int(row, "cp", 1);
    /* fsdp is the sharding group; a row that only says fsdp_enabled shards over all of DP·CP */
    int64_t fsdp = row_int(row, "fsdp", 0);
    if (fsdp <= 0 && json_is_true(json_object_get(row, "fsdp_enabled")))
        fsdp = dp * cp;
    /* torchtitan shards over its dp_shard × cp mesh (the context-parallel ranks hold the same
     * parameters; parallel_dims.py's "dp_shard_cp"): the row's fsdp is dp_shard */
    if (fsdp > 0 && cp > 1 && row_stack(row) == LLM_STACK_TORCHTITAN)
        fsdp = fsdp * cp <= dp * cp ? fsdp * cp : dp * cp;
    const char *prec = jr_text(row, "precision");
    const bool fp8 = codec_contains_nocase(prec, "FP8");
    int zero = fsdp > 0 ? 3 : dp * cp > 1 ? 1 : 0;
    if (zero == 1 && row_stack(row) != LLM_STACK_MEGATRON)
        zero = 0; /* a PyTorch row without FSDP replicates (DDP): ZeRO-1 is Megatron's */
    int nets[4];
    place_networks(s, tp, cp, dp, pp, nets);
    const bool redo = tp > 1 && strcmp(recompute, "full") != 0;
    /* "op": torchtitan's per-op selective checkpointing, its own choice of what to rerun */
    const bool sac = strcmp(recompute, "op") == 0;
    if (sac)
        recompute = "none";
    const int64_t micro = row_micro(row, pp, dp), inter = row_interleaving(row, pp, vp);
    json_t *e = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:b,s:s,s:s,s:I,s:b,s:s,s:i,s:i,s:i,s:b}",
                     "num_procs", (json_int_t)row_int(row, "gpu_count", 1), "tensor_par",
                     (json_int_t)tp, "pipeline_par", (json_int_t)pp, "data_par", (json_int_t)dp,
                     "batch_size", (json_int_t)row_int(row, "global_batch", 1),
                     "microbatch_size", (json_int_t)micro, "datatype",
                     "bfloat16", "fp8", fp8, "attention_kernel", "fused", "tensor_par_comm_type",
                     tp > 1 ? "rs_ag" : "ar", "pipeline_interleaving",
                     (json_int_t)inter, "data_par_overlap", dp * cp > 1,
                     "activation_recompute", recompute, "tensor_par_net", nets[0],
                     "data_par_net", nets[2], "pipeline_par_net", nets[3], "seq_par_ag_redo",
                     redo);
    /* FP8 rows keep FP8 primary weights, as NeMo's and Megatron-Bridge's FP8 recipes do
     * (fp8_param_gather = True in their mixed-precision configs); every row's gradients are
     * bfloat16 (grad_reduce_in_fp32 = False in the performance recipes) */
    if (e && ((fp8 && json_object_set_new(e, "fp8_params", json_true())) ||
              json_object_set_new(e, "low_precision_gradients", json_true()))) {
        json_decref(e);
        return NULL;
    }
    if (e && tp > 1 && json_object_set_new(e, "tensor_par_overlap", json_string("ring"))) {
        json_decref(e);
        return NULL;
    }
    if (e && (json_object_set_new(e, "context_par", json_integer(cp)) ||
              json_object_set_new(e, "context_par_net", json_integer(nets[1])) ||
              json_object_set_new(e, "zero_stage", json_integer(zero)) ||
              (fsdp > 0 && fsdp < dp * cp &&
               json_object_set_new(e, "shard_group", json_integer(fsdp))))) {
        json_decref(e);
        return NULL;
    }
    const llm_stack_t stack = row_stack(row);
    if (e && stack != LLM_STACK_MEGATRON &&
        (pytorch_execution(row, stack, e) ||
         (sac && json_object_set_new(e, "selective_ac", json_string("op"))))) {
        json_decref(e);
        return NULL;
    }
    /* Megatron's FP8 recipe as the precision names it (Transformer Engine's MXFP8, 128-wide
     * blocks, delayed scaling); else per-tensor current scaling, the Megatron default
     * (llm_default_fp8_recipe) and what the FP8 rows that name a recipe name ("FP8-CS",
     * "current-scaling"). It sets what the host launches per expert (llm_host.c) and nothing
     * else of Megatron's step, so only MoE rows state it: dense rows that differ in it alone keep
     * one request, and stay a group Fathom cannot tell apart. */
    const bool moe = json_is_true(json_object_get(row, "moe"));
    const char *recipe = !fp8 || !moe || stack != LLM_STACK_MEGATRON ? NULL
                         : codec_contains_nocase(prec, "MXFP8")         ? "mxfp8"
                         : codec_contains_nocase(prec, "blockwise")     ? "blockwise"
                         : codec_contains_nocase(prec, "delayed")       ? "delayed"
                                                              : NULL;
    if (e && recipe && json_object_set_new(e, "fp8_recipe", json_string(recipe))) {
        json_decref(e);
        return NULL;
    }
    if (e && moe) {
        /* EP on the NVLink tier while the expert group fits in it, else the node tier */
        const int64_t ep = row_int(row, "ep", 1), etp = row_int(row, "etp", 1);
        const int net = ep * etp <= s->networks[0].size || s->num_networks < 2 ? 0 : 1;
        const moe_software_t w = row_moe_software(row);
        if (json_object_set_new(e, "expert_par", json_integer(ep)) ||
            json_object_set_new(e, "expert_tensor_par", json_integer(etp)) ||
            json_object_set_new(e, "expert_par_net", json_integer(net)) ||
            json_object_set_new(e, "moe_dispatcher", json_string(w.dispatcher)) ||
            json_object_set_new(e, "cuda_graphs", json_string(w.graphs)) ||
            json_object_set_new(e, "moe_a2a_overlap", json_boolean(w.a2a_overlap))) {
            json_decref(e);
            return NULL;
        }
    }
    return e;
}

/* The rows do not state a model's router groups: a built-in model preset of the same MoE shape
 * (hidden, blocks, experts, top_k, expert width) lends its own, which carry the model's
 * published configuration (DeepSeek-V3: n_group 8, topk_group 4). A row that gives them keeps
 * its own. */
static int lend_router_groups(json_t *jm, const codec_presets_t *presets)
{
    json_t *moe = json_object_get(jm, "moe");
    if (!moe || json_object_get(moe, "router_groups"))
        return 0;
    static const char *const shape[] = {"hidden", "num_blocks"};
    static const char *const moe_shape[] = {"num_experts", "top_k", "expert_feedforward"};
    json_t *list = codec_presets_list(presets);
    const json_t *models = json_object_get(list, "models"), *entry;
    size_t i;
    int rc = list ? 0 : -1;
    json_array_foreach(models, i, entry)
    {
        const json_t *pm = codec_presets_find(presets, PRESET_MODEL,
                                              json_string_value(json_object_get(entry, "name")));
        const json_t *pmoe = json_object_get(pm, "moe");
        if (!json_object_get(pmoe, "router_groups"))
            continue;
        bool same = true;
        for (size_t f = 0; f < 2; f++)
            same = same && json_equal(json_object_get(pm, shape[f]), json_object_get(jm, shape[f]));
        for (size_t f = 0; f < 3; f++)
            same = same && json_equal(json_object_get(pmoe, moe_shape[f]),
                                      json_object_get(moe, moe_shape[f]));
        if (same) {
            rc = json_object_set(moe, "router_groups", json_object_get(pmoe, "router_groups")) ||
                 json_object_set(moe, "router_group_top_k",
                                 json_object_get(pmoe, "router_group_top_k"));
            break;
        }
    }
    json_decref(list);
    return rc ? -1 : 0;
}

/* One expressible row made ready to estimate: its model, system (the preset), execution with the
 * least recompute that fits, and what it is compared on. */
typedef struct {
    fathom_model_t model;
    llm_system_t system;
    llm_execution_t exec;
    measured_gpu_t gpu; /* the row's GPU: preset, or a variant of it (gpu.label names it) */
    const char *sys_name, *source; /* sys_name: gpu.label */
    const char *recompute;            /* none, attn_only or full */
    bool recompute_stated;            /* the row's own, not the least that fits */
    int64_t recompute_blocks, chunk_blocks; /* full: of a chunk's chunk_blocks, 0 = every one */
    bool by_tokens; /* compared on tokens/s/GPU, else on model TFLOP/s/GPU */
    bool from_step_time; /* the tokens/s/GPU compared is the row's step time's */
    double measured, model_flops; /* model_flops: Fathom's count, the numerator of its MFU */
    double source_flops;          /* what the row's TFLOP/s counts (TFLOP/s-only rows) */
    double measured_memory_gib;   /* the peak the row states (memory_gib), 0 when none */
    llm_result_t result; /* with the preset */
} measured_row_t;

/* tokens/s/GPU = batch·seq / (step·procs) */
static double tokens_of_step(const measured_row_t *p, double step_s)
{
    return (double)p->exec.batch_size * (double)p->model.seq_size /
           (step_s * (double)p->exec.num_procs);
}

/* model TFLOP/s/GPU = FLOPs per step / (step·procs) / 1e12, in the count of the row's source */
static double tflops_of_step(const measured_row_t *p, double step_s)
{
    return p->source_flops / (step_s * (double)p->exec.num_procs) / 1e12;
}

/* What the row is compared on, from a step time. */
static double value_of_step(const measured_row_t *p, double step_s)
{
    return p->by_tokens ? tokens_of_step(p, step_s) : tflops_of_step(p, step_s);
}

/* The measured step time, by inverting value_of_step on the measured value. */
static double measured_step(const measured_row_t *p)
{
    return value_of_step(p, 1.0) / p->measured;
}

/* p->exec and p->result of the row with `recompute` (and recompute_blocks n when > 0, the
 * selective-recompute modules when not 0). */
static int estimate_row(const json_t *row, measured_row_t *p, const char *recompute, int64_t n,
                        unsigned modules, fathom_error_t *err)
{
    json_t *je = row_execution(row, &p->system, recompute);
    int rc = !je || (n > 0 && json_object_set_new(je, "recompute_blocks", json_integer(n))) ||
             codec_llm_execution_decode(je, "execution", &p->exec, err);
    p->exec.recompute_modules = modules;
    rc = rc || llm_estimate(&p->model, &p->system, &p->exec, &p->result, err);
    json_decref(je);
    return rc ? -1 : 0;
}

/* The recompute a row states in a form the rule reads (its "recompute" text, as the validation
 * set writes what a recipe shipped beside the numbers says), into *act, *blocks and *modules:
 *   "none …"                       none
 *   "full …"                       every block; "full (block, N layers)" the first N of a chunk
 *   "selective"                    attention only (Megatron's default module, core_attn)
 *   "selective: m1, m2 …"          those modules (Megatron's names), attention only when
 *                                  core_attn is among them
 * false for null, other text, or a module the step model does not have. */
static bool stated_recompute(const json_t *row, const char **act, int64_t *blocks,
                             unsigned *modules)
{
    const char *text = json_string_value(json_object_get(row, "recompute"));
    if (!text)
        return false;
    while (isspace((unsigned char)*text))
        text++;
    *blocks = 0;
    *modules = 0;
    if (strncasecmp(text, "none", 4) == 0 && !isalnum((unsigned char)text[4])) {
        *act = "none";
        return true;
    }
    if (strncasecmp(text, "full", 4) == 0 && !isalnum((unsigned char)text[4])) {
        *act = "full";
        long long n;
        const char *blk = strstr(text, "block");
        if (blk && sscanf(blk + strcspn(blk, "0123456789"), "%lld", &n) == 1 && n > 0)
            *blocks = (int64_t)n;
        return true;
    }
    if (strncasecmp(text, "selective", 9) != 0 || isalnum((unsigned char)text[9]))
        return false;
    if (row_stack(row) != LLM_STACK_MEGATRON) {
        /* torchtitan's selective_ac_option: "op" per-op checkpointing (what its shipped
         * train_configs/llama3_8b.toml sets, so a bare "selective" too), or "layer": an integer
         * N that checkpoints every N-th block, 2 by default — half of every chunk's blocks */
        if (!llm__has_word(text, "layer")) {
            *act = "op";
            return true;
        }
        const int64_t layers = row_int(row, "layers", 0), pp = row_int(row, "pp", 1);
        const int64_t vp = row_int(row, "vp", 1);
        const int64_t chunk = llm_largest_chunk(pp > 0 ? (layers + pp - 1) / pp : layers,
                                                vp > 1 ? vp : 1);
        *act = "full";
        *blocks = chunk / 2 > 0 ? chunk / 2 : 1;
        return true;
    }
    const char *list = strchr(text, ':');
    *act = "attn_only";
    if (!list)
        return true;
    /* the names other than core_attn, read as execution.recompute_modules is read */
    *act = "none";
    json_t *holder = json_object(), *names = json_array();
    if (!holder || json_object_set_new(holder, "recompute_modules", names)) {
        json_decref(holder);
        return false;
    }
    for (const char *q = list + 1; *q;) {
        q += strspn(q, " ,;");
        const int len = (int)strcspn(q, " ,;)");
        if (len == 0)
            break;
        if (len == 9 && strncmp(q, "core_attn", 9) == 0)
            *act = "attn_only";
        else
            json_array_append_new(names, json_stringn(q, (size_t)len));
        q += len;
    }
    fathom_error_t ignored;
    const bool read = jr_enum_set(holder, "recompute", "recompute_modules", JR_OPTIONAL,
                                  llm_recompute_module_names, modules, &ignored) == 0;
    json_decref(holder);
    return read;
}

/* The least recompute that fits, one rule for every row: none, then attention only (torchtitan:
 * per-op checkpointing), then attention only with the selective-recompute modules of the
 * search's ladder that the measured runs' recipes use (layernorm, then moe_act with it, then
 * mla_up_proj with them; never the whole moe MLP, which none of them selects, nor a dense
 * model's whole mlp, which none of the dense recipes selects), then full recompute of the
 * fewest blocks of each pipeline chunk that fit, up to every block. Leaves p->exec, p->result and the choice in *p. */
static int least_recompute(const json_t *row, measured_row_t *p, fathom_error_t *err)
{
    p->recompute_blocks = p->chunk_blocks = 0;
    /* a recompute the row states is the run's: estimated as stated, fitting or not */
    const char *act;
    int64_t blocks;
    unsigned modules;
    p->recompute_stated = stated_recompute(row, &act, &blocks, &modules);
    if (p->recompute_stated) {
        p->recompute = act;
        if (estimate_row(row, p, act, blocks, modules, err))
            return -1;
        p->recompute_blocks = blocks;
        p->chunk_blocks =
            llm_largest_chunk(p->result.blocks_per_proc, p->exec.pipeline_interleaving);
        return 0;
    }
    p->recompute = "none";
    if (estimate_row(row, p, p->recompute, 0, 0, err))
        return -1;
    if (p->result.fits_memory)
        return 0;
    /* torchtitan has no attention-only recompute: its step between none and whole blocks is
     * per-op checkpointing (llm_selective_op_applies) */
    p->recompute = p->exec.stack == LLM_STACK_TORCHTITAN ? "op" : "attn_only";
    if (estimate_row(row, p, p->recompute, 0, 0, err))
        return -1;
    if (p->result.fits_memory)
        return 0;
    unsigned sets[LLM_RECOMPUTE_MODULE_SETS];
    const int n = llm_recompute_module_ladder(&p->model, &p->exec, sets);
    for (int i = 0; i < n && !(sets[i] & (LLM_RECOMPUTE_MOE | LLM_RECOMPUTE_MLP)); i++) {
        if (estimate_row(row, p, "attn_only", 0, sets[i], err))
            return -1;
        if (p->result.fits_memory)
            return 0;
    }
    /* full: the fewest recompute_blocks of a chunk that fit, 0 (every block) last */
    const int64_t chunk =
        llm_largest_chunk(p->result.blocks_per_proc, p->exec.pipeline_interleaving);
    p->recompute = "full";
    p->chunk_blocks = chunk;
    for (int64_t b = chunk > 1 ? 1 : 0;; b = b + 1 < chunk ? b + 1 : 0) {
        if (estimate_row(row, p, "full", b, 0, err))
            return -1;
        if (b == 0 || p->result.fits_memory) {
            p->recompute_blocks = b;
            return 0;
        }
    }
}

/* Decodes and estimates one expressible row with the least recompute that fits into *p; -1
 * with err set when the row cannot be decoded or estimated at all. */
static int prepare_row(const json_t *row, const codec_presets_t *presets, measured_row_t *p,
                       fathom_error_t *err)
{
    char why[512];
    p->source = jr_text(row, "source");
    if (llm__measured_gpu(jr_text(row, "gpu_type"), presets, &p->gpu, why, sizeof why))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "gpu_type", "%s", why);
    p->sys_name = p->gpu.label;
    json_t *jm = row_model(row), *js = llm__measured_gpu_system(&p->gpu);
    int rc = !jm || !js || lend_router_groups(jm, presets) ||
             codec_model_decode(jm, "model", presets, &p->model, err) ||
             codec_llm_system_decode(js, "system", presets, &p->system, err);
    json_decref(jm);
    json_decref(js);
    if (rc)
        return -1;
    if (least_recompute(row, p, err))
        return -1;
    /* a step time is compared as the tokens/s/GPU it makes: GBS·seq / (step·GPUs) */
    const char *key = measured_key(row);
    const double figure = json_number_value(json_object_get(row, key));
    p->from_step_time = strcmp(key, "step_time_s") == 0;
    p->by_tokens = p->from_step_time || strcmp(key, "tokens_per_s_per_gpu") == 0;
    p->measured = p->from_step_time ? tokens_of_step(p, figure) : figure;
    p->model_flops = llm_model_flops(&p->model, p->exec.batch_size, true);
    const json_t *mem = json_object_get(row, "memory_gib");
    p->measured_memory_gib = json_is_number(mem) && json_number_value(mem) > 0
                                 ? json_number_value(mem)
                                 : 0;
    fathom_model_t full_scores = p->model; /* the source's count: every s×s score (file head) */
    full_scores.causal = false;
    p->source_flops = llm_model_flops(&full_scores, p->exec.batch_size, true);
    return 0;
}

/* "recompute_blocks" and "blocks_per_chunk" of a row that recomputes only some blocks,
 * "recompute_modules" of one that recomputes selected modules, and "estimate_request": the
 * model, system preset and execution the rule estimated, a body POST /v1/estimate takes. */
static json_t *encode_rule_choice(const measured_row_t *p, json_t *o)
{
    json_t *exec = codec_llm_execution_encode(&p->exec);
    json_t *request = json_pack("{s:o,s:o,s:o}", "model", codec_model_encode(&p->model), "system",
                                llm__measured_gpu_system(&p->gpu), "execution", exec);
    const json_t *mods = json_object_get(exec, "recompute_modules"); /* borrowed via request */
    if (!o || !request || json_object_set_new(o, "estimate_request", request)) {
        json_decref(o);
        json_decref(o ? NULL : request); /* a failed set_new has released it already */
        return NULL;
    }
    if ((p->recompute_blocks > 0 &&
         (json_object_set_new(o, "recompute_blocks", json_integer(p->recompute_blocks)) ||
          json_object_set_new(o, "blocks_per_chunk", json_integer(p->chunk_blocks)))) ||
        (mods && json_object_set_new(o, "recompute_modules", json_deep_copy(mods)))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The built-in estimate of a prepared row. */
static json_t *encode_estimate(const measured_row_t *p)
{
    const llm_result_t *r = &p->result;
    const double step = r->stats.total_time, per_proc_s = step * (double)p->exec.num_procs;
    const double est = value_of_step(p, step);
    json_t *o = json_pack("{s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:s,s:b,s:f,s:f,s:f}", "system",
                     p->sys_name, "precision", p->exec.fp8 ? "fp8" : "bf16", "compared",
                     p->by_tokens ? "tokens_per_s_per_gpu" : "tflops_per_gpu", "measured",
                     p->measured, "estimated", est, "error_pct",
                     100.0 * (est - p->measured) / p->measured, "estimated_tokens_per_s_per_gpu",
                     tokens_of_step(p, step), "estimated_tflops_per_gpu", tflops_of_step(p, step),
                     "recompute", p->recompute,
                     "fits_memory", r->fits_memory, "step_time_s", step, "mfu",
                     p->model_flops / (per_proc_s * r->extra.peak_flops), "memory_gib",
                     r->mem_tier1_bytes / 1073741824.0);
    /* the peak the row states beside Fathom's tier-1 bytes (summary.mem_tier1_bytes) */
    if (o && p->measured_memory_gib > 0 &&
        (json_object_set_new(o, "measured_memory_gib", json_real(p->measured_memory_gib)) ||
         json_object_set_new(o, "memory_error_pct",
                             json_real(100.0 * (r->mem_tier1_bytes / 1073741824.0 -
                                                p->measured_memory_gib) /
                                       p->measured_memory_gib)))) {
        json_decref(o);
        return NULL;
    }
    /* the estimate's plausibility warnings, as every estimate in a table carries them (the
     * page marks them in the row): an MFU above the best published one, an offload... */
    if (o && json_object_set_new(o, "warnings",
                                 codec_llm_warnings_encode(&p->model, &p->system, &p->exec, r))) {
        json_decref(o);
        return NULL;
    }
    if (o && ((p->from_step_time &&
               json_object_set_new(o, "measured_from", json_string("step_time_s"))) ||
              json_object_set_new(o, "recompute_from",
                                  json_string(p->recompute_stated ? "row" : "rule")))) {
        json_decref(o);
        return NULL;
    }
    return encode_rule_choice(p, o);
}

/* Mean and worst absolute error of one group of rows. */
typedef struct {
    double sum, worst;
    int n;
} errors_t;

static void errors_add(errors_t *a, double error_pct)
{
    double e = fabs(error_pct);
    a->sum += e;
    a->worst = e > a->worst ? e : a->worst;
    a->n++;
}

/* Mean absolute error of a group, 0 when it has no row. */
static double errors_mean(const errors_t *a)
{
    return a->n ? a->sum / a->n : 0.0;
}

static json_t *errors_encode(const errors_t *a)
{
    return json_pack("{s:i,s:f,s:f}", "rows", a->n, "mean_abs_error_pct", errors_mean(a),
                     "max_abs_error_pct", a->worst);
}

/* The groups a row's error counts in: tokens/s rows, the dense and the MoE ones among them, and
 * rows compared on TFLOP/s. */
typedef struct {
    errors_t tokens, dense, moe, tflops;
} groups_t;

static void groups_add(groups_t *g, const measured_row_t *p, bool moe, double error_pct)
{
    errors_add(p->by_tokens ? &g->tokens : &g->tflops, error_pct);
    if (p->by_tokens)
        errors_add(moe ? &g->moe : &g->dense, error_pct);
}

#ifdef FATHOM_HAVE_CALIBRATE
#include "calibrate.h"

/* Leave-one-source-out calibration. For each source S and GPU preset G among S's rows, G is
 * calibrated (core/calibrate's whole-run fit, as POST /v1/calibrate with runs only) on the rows of
 * G from every OTHER source — their measured step time, the same layout, recompute and model as
 * above — and S's rows on G are predicted with that system. A row whose GPU no other source
 * measured has no calibrated prediction (the reason says so). items[i] gets "loso". */
static void add_loso(const measured_row_t *prep, const bool *ok, const bool *moe, size_t n,
                     json_t *items, groups_t *g)
{
    bool *done = calloc(n ? n : 1, sizeof *done);
    calibrate_run_t *runs = calloc(n ? n : 1, sizeof *runs);
    calibrate_result_t *res = malloc(sizeof *res);
    for (size_t i = 0; done && runs && res && i < n; i++) {
        if (!ok[i] || done[i])
            continue;
        const char *src = prep[i].source, *sys = prep[i].sys_name;
        size_t nr = 0; /* (at most CALIBRATE_MAX_RUNS of them: the first in the file) */
        for (size_t j = 0; j < n; j++)
            if (ok[j] && strcmp(prep[j].source, src) != 0 && strcmp(prep[j].sys_name, sys) == 0 &&
                (moe[i] || !moe[j]) && nr < CALIBRATE_MAX_RUNS)
                runs[nr++] = (calibrate_run_t){&prep[j].model, prep[j].exec,
                                               measured_step(&prep[j])};
        fathom_error_t err;
        fathom_error_clear(&err);
        const calibrate_input_t in = {NULL, 0, NULL, 0, runs, nr};
        const char *why = nr == 0 ? "no other source measured this GPU: nothing to calibrate on"
                          : calibrate_fit_system(&prep[i].system, &in, res, &err) ? err.message
                                                                                  : NULL;
        for (size_t k = i; k < n; k++) {
            if (!ok[k] || strcmp(prep[k].source, src) != 0 || strcmp(prep[k].sys_name, sys) != 0 ||
                moe[k] != moe[i])
                continue;
            done[k] = true;
            json_t *l = json_pack("{s:s,s:i}", "left_out_source", src, "calibration_rows", (int)nr);
            if (!l)
                continue;
            const double step = why ? NAN
                                    : calibrate_run_time(&res->system,
                                                         &(calibrate_run_t){&prep[k].model,
                                                                            prep[k].exec, 0});
            if (why || !isfinite(step)) {
                json_object_set_new(l, "reason",
                                    json_string(why ? why : "the calibrated system cannot "
                                                            "estimate this run"));
            } else {
                /* what the fit moved: each free parameter, base and fitted, and whether the
                 * data pushed it to a bound */
                json_t *params = json_array();
                for (int q = 0; params && q < res->n_params; q++)
                    json_array_append_new(
                        params, json_pack("{s:s,s:f,s:f,s:i}", "name", res->params[q].name,
                                          "base", res->params[q].base, "fitted",
                                          res->params[q].fitted, "at_bound",
                                          res->params[q].at_bound));
                json_object_set_new(l, "parameters", params ? params : json_null());
                const double est = value_of_step(&prep[k], step);
                const double e = 100.0 * (est - prep[k].measured) / prep[k].measured;
                json_object_set_new(l, "estimated", json_real(est));
                json_object_set_new(l, "error_pct", json_real(e));
                groups_add(g, &prep[k], moe[k], e);
            }
            json_object_set_new(json_array_get(items, k), "loso", l);
        }
    }
    free(done);
    free(runs);
    free(res);
}
#endif

static json_t *groups_encode(const groups_t *g)
{
    return json_pack("{s:i,s:f,s:f,s:o,s:i,s:f,s:f,s:i,s:f,s:f}", "rows_estimated", g->tokens.n,
                     "mean_abs_error_pct", errors_mean(&g->tokens),
                     "max_abs_error_pct", g->tokens.worst, "tflops_only",
                     errors_encode(&g->tflops), "moe_rows_estimated", g->moe.n,
                     "moe_mean_abs_error_pct", errors_mean(&g->moe),
                     "moe_max_abs_error_pct", g->moe.worst, "dense_rows_estimated", g->dense.n,
                     "dense_mean_abs_error_pct", errors_mean(&g->dense),
                     "dense_max_abs_error_pct", g->dense.worst);
}

/* Rows Fathom cannot tell apart: the same estimate request (model, system, execution), compared
 * on the same figure. Fathom gives them one estimate, so when their measurements differ (another
 * software release of the same recipe, another cluster) no estimate can be closer to all of them
 * than f = (max − min)/(max + min): the estimate 2·max·min/(max + min) is +f off the smallest
 * and −f off the largest, and any other is further from one of the two. A group's f is a floor
 * under the worst error of every model, physics or not, that reads only what a row states.
 * Returns {"groups": [{"ids", "measured_min", "measured_max", "error_floor_pct"}] (two or more
 * rows each, in file order), "error_floor_pct": the largest f, 0 with no group}. */
static json_t *indistinguishable(const json_t *items)
{
    const size_t n = json_array_size(items);
    bool *taken = calloc(n ? n : 1, sizeof *taken);
    json_t *groups = json_array();
    double floor_pct = 0;
    for (size_t i = 0; taken && groups && i < n; i++) {
        const json_t *first = json_array_get(items, i);
        const json_t *request = json_object_get(first, "estimate_request");
        if (!request || taken[i])
            continue;
        json_t *ids = json_array();
        double lo = INFINITY, hi = -INFINITY;
        for (size_t j = i; ids && j < n; j++) {
            const json_t *it = json_array_get(items, j);
            if (!json_equal(request, json_object_get(it, "estimate_request")) ||
                strcmp(jr_text(first, "compared"), jr_text(it, "compared")) != 0)
                continue;
            const double m = json_number_value(json_object_get(it, "measured"));
            taken[j] = true;
            json_array_append_new(ids, json_string(jr_text(it, "id")));
            lo = m < lo ? m : lo;
            hi = m > hi ? m : hi;
        }
        if (json_array_size(ids) < 2) {
            json_decref(ids);
            continue;
        }
        const double f = 100.0 * (hi - lo) / (hi + lo);
        floor_pct = f > floor_pct ? f : floor_pct;
        json_array_append_new(groups, json_pack("{s:o,s:f,s:f,s:f}", "ids", ids, "measured_min",
                                                lo, "measured_max", hi, "error_floor_pct", f));
    }
    free(taken);
    return groups ? json_pack("{s:o,s:f}", "groups", groups, "error_floor_pct", floor_pct) : NULL;
}

json_t *codec_llm_measured_report_rows(const json_t *rows, const char *source,
                                       const codec_presets_t *presets, fathom_error_t *err)
{
    if (!json_is_array(rows)) {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, "runs",
                         "measured runs are a JSON array of rows");
        return NULL;
    }
    const size_t n = json_array_size(rows);
    for (size_t i = 0; i < n; i++)
        if (jr_row_types(json_array_get(rows, i), "runs", i, &row_types, "id", err))
            return NULL;
    measured_row_t *prep = calloc(n ? n : 1, sizeof *prep);
    bool *ok = calloc(n ? n : 1, sizeof *ok), *moe = calloc(n ? n : 1, sizeof *moe);
    json_t *out = json_array();
    groups_t built_in;
    memset(&built_in, 0, sizeof built_in);
    errors_t memory; /* peak memory against the rows that state theirs */
    memset(&memory, 0, sizeof memory);
    int not_fitting = 0;
    for (size_t i = 0; prep && ok && moe && out && i < n; i++) {
        const json_t *row = json_array_get(rows, i);
        json_t *item = json_pack("{s:s,s:s,s:s,s:s,s:I,s:{s:I,s:I,s:I,s:I,s:I}}", "id",
                                 jr_text(row, "id"), "source", jr_text(row, "source"), "model",
                                 jr_text(row, "model"), "gpu", jr_text(row, "gpu_type"),
                                 "gpu_count", (json_int_t)row_int(row, "gpu_count", 0), "layout",
                                 "tp", (json_int_t)row_int(row, "tp", 1), "pp",
                                 (json_int_t)row_int(row, "pp", 1), "vp",
                                 (json_int_t)row_int(row, "vp", 1), "cp",
                                 (json_int_t)row_int(row, "cp", 1), "dp",
                                 (json_int_t)row_dp(row));
        const char *why = inexpressible(row);
        fathom_error_t rerr;
        fathom_error_clear(&rerr);
        moe[i] = json_is_true(json_object_get(row, "moe"));
        if (!why && prepare_row(row, presets, &prep[i], &rerr))
            why = rerr.message;
        ok[i] = why == NULL;
        json_t *est = ok[i] ? encode_estimate(&prep[i]) : NULL;
        if (!item || (ok[i] && !est)) {
            json_decref(item);
            json_decref(est);
            json_decref(out);
            out = NULL;
            break;
        }
        json_object_set_new(item, "expressible", json_boolean(ok[i]));
        json_object_set_new(item, "moe", json_boolean(moe[i]));
        if (moe[i] && json_object_set_new(item, "software", encode_software(row))) {
            json_decref(item);
            json_decref(est);
            json_decref(out);
            out = NULL;
            break;
        }
        if (!ok[i]) {
            json_object_set_new(item, "reason", json_string(why));
        } else {
            json_object_update(item, est);
            groups_add(&built_in, &prep[i], moe[i],
                       json_real_value(json_object_get(est, "error_pct")));
            const json_t *me = json_object_get(est, "memory_error_pct");
            if (me)
                errors_add(&memory, json_real_value(me));
            not_fitting += !prep[i].result.fits_memory;
        }
        json_decref(est);
        json_array_append_new(out, item);
    }
    json_t *report = out ? groups_encode(&built_in) : NULL;
    if (report) {
        json_object_set_new(report, "source", json_string(source));
        json_object_set_new(report, "rows_total", json_integer((json_int_t)n));
        json_object_set_new(report, "memory", errors_encode(&memory));
        json_object_set_new(report, "rows_not_fitting", json_integer(not_fitting));
#ifdef FATHOM_HAVE_CALIBRATE
        groups_t loso;
        memset(&loso, 0, sizeof loso);
        add_loso(prep, ok, moe, n, out, &loso);
        json_object_set_new(report, "loso", groups_encode(&loso));
#endif
        json_object_set_new(report, "indistinguishable", indistinguishable(out));
        json_object_set_new(report, "rows", out);
        out = NULL;
    }
    json_decref(out);
    free(prep);
    free(ok);
    free(moe);
    if (!report)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return report;
}

json_t *codec_llm_measured_report(const codec_presets_t *presets, fathom_error_t *err)
{
    const json_t *rows = codec_presets_measured(presets);
    if (!rows) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL,
                         "no measured runs: the presets directory has no "
                         "validation/measured_runs.json");
        return NULL;
    }
    json_t *report = codec_llm_measured_report_rows(rows, "presets/validation/measured_runs.json",
                                                    presets, err);
    /* the PyTorch-native runs beside them: another stack, reported apart (doc/stacks.md) */
    const json_t *pytorch = codec_presets_pytorch_runs(presets);
    if (report && pytorch) {
        json_t *pt = codec_llm_measured_report_rows(pytorch, "presets/validation/pytorch_runs.json",
                                                    presets, err);
        if (!pt || json_object_set_new(report, "pytorch", pt)) {
            json_decref(report);
            return NULL;
        }
    }
    return report;
}
