/* llm_layers.c — the layer table of one transformer block and the cost of each layer
 * (Calculon's layers.py and Llm._build_attn_block/_build_mlp_block).
 *
 * A block is a flat array of llm__layer_t: the kind says which cost rules apply, the numbers are
 * element counts for one microbatch on one processor (already split by tensor parallelism).
 * Adding a layer kind (an embedding, the output projection) means one constructor below and one
 * case in the few switch statements; the accumulation in llm_model.c iterates the table and does
 * not care what the layers are. */
#include <string.h>

#include "llm_internal.h"

/* ---- constructors (element counts as Calculon's layer classes define them) ---- */

/* Layer options; a zero flag is Calculon's default (activation and output stored). */
typedef struct {
    bool recompute, recomm, reused, act_dropped, out_dropped;
} flags_t;

#define FLAGS(...) ((flags_t){__VA_ARGS__})

static llm__layer_t *push(llm__block_t *b, llm__kind_t kind, flags_t f)
{
    llm__layer_t *l = &b->layers[b->num_layers++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->needs_recompute = f.recompute;
    l->needs_recomm = f.recomm;
    l->activation_reused = f.reused;
    l->activation_stored = !f.act_dropped;
    l->output_stored = !f.out_dropped;
    l->num_peers = 1;
    l->num_tiles = 1;
    return l;
}

static void add_linear(llm__block_t *b, double m, double n, double k, flags_t f)
{
    llm__layer_t *l = push(b, LLM__LINEAR, f);
    l->fw_flops = l->agrad_flops = l->wgrad_flops = 2 * m * n * k;
    l->inputs_size = m * n;
    l->output_size = m * k;
    l->weight_space = l->weight_grads = n * k;
    l->activation_space = m * n;
    l->activation_grads = m * k;
    l->optim_space = 2 * n * k;
}

/* A linear layer fused with its TP collective: the all-gather before it (conjugate false) or
 * the reduce-scatter/all-reduce after it (conjugate true), tiled tensor_par ways. */
static void add_linear_overlapped(llm__block_t *b, const llm_execution_t *e,
                                  const llm_network_t *net, int64_t m, int64_t n, int64_t k,
                                  bool conjugate, flags_t f)
{
    int64_t peers = e->tensor_par, tiles = e->tensor_par;
    int64_t act_space, act_grad_space, act_grad_net_buffer;
    if (e->tensor_par_comm_type == LLM_TP_COMM_RS_AG) {
        if (!conjugate) {
            k = k / peers;
            act_space = m * n / tiles;
            act_grad_space = m * k;
            act_grad_net_buffer = 0;
        } else {
            n = n / peers;
            act_space = m * n;
            act_grad_space = m * k / tiles;
            act_grad_net_buffer = m * k / tiles;
        }
    } else if (!conjugate) {
        k = k / peers;
        act_space = m * n;
        act_grad_space = 0;
        act_grad_net_buffer = 0;
    } else {
        n = n / peers;
        act_space = 0;
        act_grad_space = m * k;
        act_grad_net_buffer = m * k;
    }
    llm__layer_t *l = push(b, LLM__LINEAR_OVERLAPPED, f);
    double dm = (double)m, dn = (double)n, dk = (double)k;
    l->fw_flops = l->agrad_flops = l->wgrad_flops = 2 * dm * dn * dk;
    l->inputs_size = dm * dn;
    l->output_size = dm * dk;
    l->weight_space = l->weight_grads = dn * dk;
    l->activation_space = (double)act_space;
    l->activation_grads = (double)(act_grad_space + act_grad_net_buffer);
    l->optim_space = 2 * dn * dk;
    l->comm_type = e->tensor_par_comm_type;
    l->num_tiles = (double)tiles;
    l->num_peers = (double)peers;
    l->net = net;
    l->conjugate = conjugate;
    l->overlap = e->tensor_par_overlap;
}

static void add_batch_matmul(llm__block_t *b, double batch, double m, double n, double k,
                             flags_t f)
{
    llm__layer_t *l = push(b, LLM__BATCH_MATMUL, f);
    l->fw_flops = batch * 2 * m * n * k;
    l->agrad_flops = batch * 2 * 2 * m * n * k;
    l->inputs_size = l->activation_space = batch * (m * n + n * k);
    l->output_size = l->activation_grads = batch * m * k;
}

static void add_layer_norm(llm__block_t *b, double act, double hidden, flags_t f)
{
    llm__layer_t *l = push(b, LLM__LAYER_NORM, f);
    l->fw_flops = 9 * act;
    l->agrad_flops = 14 * act;
    l->wgrad_flops = 7 * act;
    l->inputs_size = l->output_size = l->activation_space = l->activation_grads = act;
    l->weight_space = l->weight_grads = 2 * hidden;
    l->optim_space = 2 * 2 * hidden;
}

static void add_dropout(llm__block_t *b, double act, flags_t f)
{
    llm__layer_t *l = push(b, LLM__DROPOUT, f);
    l->fw_flops = l->agrad_flops = act;
    l->inputs_size = l->output_size = l->activation_space = l->activation_grads = act;
}

static void add_gelu(llm__block_t *b, double act, bool fused, flags_t f)
{
    llm__layer_t *l = push(b, LLM__GELU, f);
    l->fw_flops = 8 * act;
    l->agrad_flops = 13 * act;
    l->inputs_size = l->output_size = act;
    /* A fused GeLU runs inside the preceding matmul and keeps nothing. */
    l->activation_space = l->activation_grads = fused ? 0 : act;
}

static void add_softmax(llm__block_t *b, double act, flags_t f)
{
    llm__layer_t *l = push(b, LLM__SOFTMAX, f);
    l->fw_flops = 5 * act;
    l->agrad_flops = 8 * act;
    l->inputs_size = l->output_size = l->activation_space = l->activation_grads = act;
}

static void add_elementwise(llm__block_t *b, double op1, double op2, flags_t f)
{
    llm__layer_t *l = push(b, LLM__ELEMENTWISE, f);
    double act = op1 > op2 ? op1 : op2;
    l->fw_flops = act;
    l->agrad_flops = op1 + op2;
    l->inputs_size = l->activation_space = op1 + op2;
    l->output_size = l->activation_grads = act;
}

static void add_fork(llm__block_t *b, double act, double users, flags_t f)
{
    llm__layer_t *l = push(b, LLM__FORK, f);
    l->inputs_size = act;
    l->agrad_flops = users * act;
    l->activation_space = act;
    l->num_users = users;
}

static void add_tp_comm(llm__block_t *b, const llm_execution_t *e, const llm_network_t *net,
                        double act, bool conjugate, flags_t f)
{
    llm__layer_t *l = push(b, LLM__TP_COMM, f);
    double peers = (double)e->tensor_par;
    l->net = net;
    l->num_peers = peers;
    l->comm_type = e->tensor_par_comm_type;
    l->comm_size = act;
    l->conjugate = conjugate;
    if (e->tensor_par > 1) {
        /* F: identity/all-gather forward, reduction backward; G is the conjugate. */
        if (!conjugate)
            l->agrad_flops = act * (peers - 1) / peers;
        else
            l->fw_flops = act * (peers - 1) / peers;
        l->inputs_size = l->output_size = act;
        l->activation_space = l->activation_grads = act;
    }
}

/* ---- the block ---- */

void llm__build_block(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                      const llm__sizes_t *z, llm__block_t *b)
{
    const llm_network_t *tp_net = &s->networks[e->tensor_par_net];
    const int64_t tp = e->tensor_par, bs = z->batch_seq;
    const bool seq_par = e->tensor_par_comm_type == LLM_TP_COMM_RS_AG;
    const double act = (double)z->activation_size;
    /* With sequence parallelism the layers outside the TP region see a sliver of the sequence. */
    const double outer_act = seq_par ? (double)z->seq_par_activation_size : act;
    const bool overlapped = e->tensor_par_overlap != LLM_TP_OVERLAP_NONE;
    const bool multihead = e->attention_type == LLM_ATTN_MULTIHEAD;
    const bool rf = e->activation_recompute == LLM_RECOMPUTE_FULL;
    const bool raf = rf || e->activation_recompute == LLM_RECOMPUTE_ATTN_ONLY;
    const int64_t qkv_width = m->attn_heads * m->attn_size;
    b->num_layers = 0;

    /* Attention. */
    bool ragf = raf || e->seq_par_ag_redo;
    add_fork(b, outer_act, 2, FLAGS(.recompute = rf));
    add_layer_norm(b, outer_act, (double)m->hidden,
                   FLAGS(.recompute = rf, .act_dropped = true, .reused = true));
    if (!overlapped) {
        add_tp_comm(b, e, tp_net, act, false, FLAGS(.recomm = ragf));
        add_fork(b, act, 3, FLAGS(.recompute = ragf, .act_dropped = ragf));
        double kv_width = multihead ? (double)(qkv_width / tp) : (double)m->attn_size;
        flags_t proj = FLAGS(.recompute = rf, .act_dropped = true, .reused = true);
        add_linear(b, (double)bs, (double)m->hidden, (double)(qkv_width / tp), proj);
        add_linear(b, (double)bs, (double)m->hidden, kv_width, proj);
        add_linear(b, (double)bs, (double)m->hidden, kv_width, proj);
    } else if (multihead) {
        add_linear_overlapped(b, e, tp_net, bs, m->hidden, qkv_width * 3, false,
                              FLAGS(.recompute = rf, .recomm = ragf));
    } else {
        add_linear_overlapped(b, e, tp_net, bs, m->hidden, qkv_width, false,
                              FLAGS(.recompute = rf, .recomm = ragf));
        add_fork(b, act, 2, FLAGS(.recompute = ragf, .act_dropped = ragf));
        flags_t proj = FLAGS(.recompute = rf, .act_dropped = true, .reused = true);
        add_linear(b, (double)bs, (double)m->hidden, (double)m->attn_size, proj);
        add_linear(b, (double)bs, (double)m->hidden, (double)m->attn_size, proj);
    }
    double heads_batch = (double)(e->microbatch_size * m->attn_heads / tp);
    double scores = (double)(m->attn_heads / tp) * (double)(m->seq_size * m->seq_size) *
                    (double)e->microbatch_size;
    add_batch_matmul(b, heads_batch, (double)m->seq_size, (double)m->attn_size,
                     (double)m->seq_size, FLAGS(.recompute = raf, .out_dropped = raf));
    add_softmax(b, scores, FLAGS(.recompute = raf, .out_dropped = raf));
    add_dropout(b, scores, FLAGS(.recompute = raf, .act_dropped = raf));
    add_batch_matmul(b, heads_batch, (double)m->seq_size, (double)m->seq_size,
                     (double)(qkv_width / m->attn_heads), FLAGS(.recompute = rf));
    if (!overlapped) {
        add_linear(b, (double)bs, (double)(qkv_width / tp), (double)m->hidden,
                   FLAGS(.recompute = rf));
        add_tp_comm(b, e, tp_net, act, true, FLAGS(.recomm = rf, .act_dropped = true));
    } else {
        add_linear_overlapped(b, e, tp_net, bs, qkv_width, m->hidden, true,
                              FLAGS(.recompute = rf, .recomm = rf));
    }
    add_dropout(b, outer_act, FLAGS(.recompute = rf));
    add_elementwise(b, outer_act, outer_act,
                    FLAGS(.recompute = rf, .act_dropped = true, .reused = true));

    /* MLP. */
    ragf = rf || e->seq_par_ag_redo;
    add_fork(b, outer_act, 2, FLAGS(.recompute = rf));
    add_layer_norm(b, outer_act, (double)m->hidden,
                   FLAGS(.recompute = rf, .act_dropped = true, .reused = true));
    if (!overlapped) {
        add_tp_comm(b, e, tp_net, act, false, FLAGS(.recomm = ragf));
        add_linear(b, (double)bs, (double)m->hidden, (double)(m->feedforward / tp),
                   FLAGS(.recompute = rf, .act_dropped = ragf));
    } else {
        add_linear_overlapped(b, e, tp_net, bs, m->hidden, m->feedforward, false,
                              FLAGS(.recompute = rf, .recomm = ragf));
    }
    add_gelu(b, (double)(m->feedforward * bs / tp), e->fused_activation, FLAGS(.recompute = rf));
    if (!overlapped) {
        add_linear(b, (double)bs, (double)(m->feedforward / tp), (double)m->hidden,
                   FLAGS(.recompute = rf));
        add_tp_comm(b, e, tp_net, act, true, FLAGS(.recomm = rf, .act_dropped = true));
    } else {
        add_linear_overlapped(b, e, tp_net, bs, m->feedforward, m->hidden, true,
                              FLAGS(.recompute = rf, .recomm = rf));
    }
    add_dropout(b, outer_act, FLAGS(.recompute = rf));
    add_elementwise(b, outer_act, outer_act,
                    FLAGS(.recompute = rf, .act_dropped = true, .reused = true));
}

/* ---- costs ---- */

static bool uses_matrix_engine(const llm__layer_t *l)
{
    return l->kind == LLM__LINEAR || l->kind == LLM__LINEAR_OVERLAPPED ||
           l->kind == LLM__BATCH_MATMUL;
}

double llm__layer_optimizer(const llm__layer_t *l, const llm__ctx_t *c)
{
    /* fp32 master weights (when training below fp32) plus Adam's two moments */
    double moments = l->optim_space * 4;
    double master = c->bpe < 4 ? l->weight_space * 4 : 0;
    return (master + moments) / c->optim_shards;
}

double llm__layer_flops(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st)
{
    switch (st) {
    case LLM__FW: return l->fw_flops;
    case LLM__AGRAD: return l->agrad_flops;
    case LLM__WGRAD: return l->wgrad_flops;
    case LLM__OPTIM: return l->weight_grads / c->optim_shards * 11;
    }
    return 0;
}

static double base_fw_mem(const llm__layer_t *l, const llm__ctx_t *c)
{
    return (l->inputs_size + l->output_size + l->weight_space) * c->bpe;
}

static double base_agrad_mem(const llm__layer_t *l, const llm__ctx_t *c)
{
    return (l->weight_space + (l->activation_space + l->activation_grads)) * c->bpe;
}

static double fw_mem(const llm__layer_t *l, const llm__ctx_t *c)
{
    switch (l->kind) {
    case LLM__DROPOUT: /* plus the 1-byte mask */
        return (l->inputs_size + l->output_size) * c->bpe + l->activation_space;
    case LLM__FORK: return 0;
    case LLM__TP_COMM:
        if (l->comm_type != LLM_TP_COMM_RS_AG && !l->conjugate)
            return 0; /* identity */
        return base_fw_mem(l, c);
    default: return base_fw_mem(l, c);
    }
}

double llm__layer_mem_accessed(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st)
{
    switch (st) {
    case LLM__FW: return fw_mem(l, c);
    case LLM__AGRAD:
        switch (l->kind) {
        case LLM__DROPOUT:
        case LLM__GELU:
        case LLM__SOFTMAX: return fw_mem(l, c);
        case LLM__FORK: return l->activation_space * c->bpe * (l->num_users + 1);
        case LLM__TP_COMM:
            if (l->comm_type != LLM_TP_COMM_RS_AG && l->conjugate)
                return 0; /* identity */
            return base_agrad_mem(l, c);
        default: return base_agrad_mem(l, c);
        }
    case LLM__WGRAD:
        if (l->weight_space == 0)
            return 0;
        return (l->weight_grads + (l->activation_space + l->activation_grads)) * c->bpe;
    case LLM__OPTIM: return llm__layer_optimizer(l, c);
    }
    return 0;
}

/* rs_ag always splits its collectives in two; p2p_rs_ag does so only at the chunk edges. */
static bool split_comm(const llm__layer_t *l, bool baseblock)
{
    return l->comm_type == LLM_TP_COMM_RS_AG ||
           (l->comm_type == LLM_TP_COMM_P2P_RS_AG && !baseblock);
}

double llm__layer_comm_bytes(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st,
                             bool baseblock)
{
    if (l->num_peers == 1)
        return 0;
    bool split = split_comm(l, baseblock);
    if (l->kind == LLM__TP_COMM) {
        if (!split && ((l->conjugate && st == LLM__AGRAD) || (!l->conjugate && st == LLM__FW)))
            return 0; /* identity forward or all-reduce backward */
        if (st == LLM__FW || st == LLM__AGRAD)
            return l->comm_size * c->bpe;
        if (st == LLM__WGRAD && l->needs_recomm && (split || l->conjugate))
            return l->comm_size * c->bpe;
        return 0;
    }
    if (l->kind == LLM__LINEAR_OVERLAPPED) {
        double ag = l->inputs_size * c->bpe, ar_rs = l->output_size * c->bpe;
        switch (st) {
        case LLM__FW: return l->conjugate ? ar_rs : (split ? ag : 0);
        case LLM__AGRAD: return !l->conjugate ? ag : (split ? ar_rs : 0);
        case LLM__WGRAD: return l->needs_recomm ? llm__layer_comm_bytes(l, c, LLM__FW, baseblock) : 0;
        case LLM__OPTIM: return 0;
        }
    }
    return 0;
}

/* Collective types of a communication layer's forward and backward pass (-1: none). */
static void comm_ops(const llm__layer_t *l, bool baseblock, int *fw, int *bw)
{
    bool split = split_comm(l, baseblock);
    if (l->conjugate) {
        *fw = split ? LLM_OP_REDUCE_SCATTER : LLM_OP_ALL_REDUCE;
        *bw = split ? LLM_OP_ALL_GATHER : -1;
    } else {
        *fw = split ? LLM_OP_ALL_GATHER : -1;
        *bw = split ? LLM_OP_REDUCE_SCATTER : LLM_OP_ALL_REDUCE;
    }
}

static double overlapped_net_time(const llm__layer_t *l, llm__ctx_t *c, llm__stage_t st,
                                  bool baseblock)
{
    if (l->num_peers == 1)
        return 0;
    int fw_op, bw_op;
    comm_ops(l, baseblock, &fw_op, &bw_op);
    /* The reduction's additions run on the vector engine. */
    double fw_flop_time = 0, bw_flop_time = 0;
    double red_flops = llm__layer_comm_bytes(l, c, st, baseblock) / c->bpe * (l->num_peers - 1) /
                       l->num_peers;
    double red_time = red_flops / llm__vector_throughput(c, red_flops);
    if (l->conjugate)
        fw_flop_time = red_time;
    else
        bw_flop_time = red_time;
    double bytes = llm__layer_comm_bytes(l, c, st, baseblock);
    switch (st) {
    case LLM__FW:
        return fw_op < 0 ? 0 : llm__net_time(l->net, fw_op, bytes, l->num_peers) + fw_flop_time;
    case LLM__AGRAD:
        return bw_op < 0 ? 0 : llm__net_time(l->net, bw_op, bytes, l->num_peers) + bw_flop_time;
    case LLM__WGRAD:
        return l->needs_recomm && fw_op >= 0 ? llm__net_time(l->net, fw_op, bytes, l->num_peers)
                                             : 0;
    case LLM__OPTIM: return 0;
    }
    return 0;
}

static double tp_comm_net_time(const llm__layer_t *l, llm__ctx_t *c, llm__stage_t st,
                               bool baseblock, const llm__cost_t *own)
{
    if (l->num_peers == 1)
        return 0;
    if (st == LLM__OPTIM || (st == LLM__WGRAD && !l->needs_recomm))
        return 0;
    int fw_op, bw_op;
    comm_ops(l, baseblock, &fw_op, &bw_op);
    /* The layer's own arithmetic (the reduction) and memory traffic count as network time. */
    double local = own->local;
    int op = st == LLM__AGRAD ? bw_op : fw_op;
    double net = op < 0 ? 0 : llm__net_time(l->net, op, llm__layer_comm_bytes(l, c, st, baseblock),
                                            l->num_peers);
    return net + local;
}

double llm__layer_net_time(const llm__layer_t *l, llm__ctx_t *c, llm__stage_t st, bool baseblock,
                           const llm__cost_t *own)
{
    switch (l->kind) {
    case LLM__TP_COMM: return tp_comm_net_time(l, c, st, baseblock, own);
    case LLM__LINEAR_OVERLAPPED: return overlapped_net_time(l, c, st, baseblock);
    default: return 0;
    }
}

void llm__layer_cost(llm__layer_t *l, llm__ctx_t *c, llm__stage_t st, llm__cost_t *k)
{
    k->flops = llm__layer_flops(l, c, st);
    double thr = uses_matrix_engine(l) && st != LLM__OPTIM ? llm__matrix_throughput(c, k->flops)
                                                            : llm__vector_throughput(c, k->flops);
    k->flops_time = k->flops / thr;
    k->mem = llm__layer_mem_accessed(l, c, st);
    k->mem_time = k->mem / llm__mem1_throughput(c, k->mem);
    k->local = llm__processing_time(c, k->flops_time, k->mem_time);
    if (l->kind == LLM__TP_COMM) {
        k->time = 0; /* its time is network time */
        return;
    }
    if (l->kind != LLM__LINEAR_OVERLAPPED) {
        k->time = k->local;
        return;
    }

    /* Tiled overlap: tensor_par tiles, each tile's compute hiding the previous tile's
     * communication; the communication slows the compute by processor_usage. Calculon asks
     * the baseblock's network time here. */
    double pu = l->net->processor_usage;
    double flop_time = k->flops_time;
    double flop_time_slowed = flop_time / (1 - pu);
    double mem_time = k->mem_time;
    double net_time = overlapped_net_time(l, c, st, true);
    double compute_time = k->local;
    double time, exposed;
    if (net_time == 0) {
        time = compute_time;
        exposed = 0;
    } else {
        double nt = l->num_tiles;
        double compute_time_slowed = llm__processing_time(c, flop_time_slowed, mem_time);
        double flop_tile_slowed = flop_time_slowed / nt;
        double net_tile = net_time / nt;
        double compute_tile = compute_time / nt;
        double compute_tile_slowed = compute_time_slowed / nt;
        double inflection = net_tile - flop_tile_slowed;
        if (inflection > 0) {
            time = compute_tile + (nt - 1) * compute_tile_slowed;
            exposed = (nt - 1) * inflection;
        } else {
            time = compute_tile + (nt - 1) * compute_tile + (nt - 1) * net_tile * pu;
            exposed = 0;
        }
        if (l->overlap == LLM_TP_OVERLAP_PIPE) {
            /* the pipe schedule exposes the first communication tile; ring does not */
            exposed += net_tile;
            time += net_tile;
        }
    }
    l->net_exposed_time = exposed;
    k->time = time;
}

/* A TP collective is fully exposed; an overlapped layer exposes what its tiling did not hide
 * in the stage it last processed (Calculon reads that value back for every later question,
 * whatever the stage or block kind). */
double llm__layer_exposed_net_time(const llm__layer_t *l, double net_time)
{
    switch (l->kind) {
    case LLM__TP_COMM: return net_time;
    case LLM__LINEAR_OVERLAPPED: return l->net_exposed_time;
    default: return 0;
    }
}

double llm__layer_required_bandwidth(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st,
                                     bool baseblock, const llm__cost_t *own)
{
    if (l->kind != LLM__LINEAR_OVERLAPPED)
        return 0;
    double tile = llm__layer_comm_bytes(l, c, st, baseblock) / l->num_tiles;
    double flop_time_slowed = own->flops_time / (1 - l->net->processor_usage);
    return tile / (flop_time_slowed / l->num_tiles);
}

double llm__layer_weight(const llm__layer_t *l, const llm__ctx_t *c)
{
    return l->weight_space * c->bpe;
}

double llm__layer_activation(const llm__layer_t *l, const llm__ctx_t *c)
{
    switch (l->kind) {
    case LLM__DROPOUT: return l->activation_space; /* the 1-byte mask */
    case LLM__TP_COMM:
        if (l->comm_type == LLM_TP_COMM_RS_AG)
            return l->activation_space * c->bpe / l->num_peers;
        return l->conjugate ? l->activation_space * c->bpe : 0;
    default: return l->activation_space * c->bpe;
    }
}

double llm__layer_output(const llm__layer_t *l, const llm__ctx_t *c)
{
    return l->output_size * c->bpe;
}

double llm__layer_weight_grad(const llm__layer_t *l, const llm__ctx_t *c, bool sharded)
{
    /* sharded: low-precision copy for communication; otherwise fp32 for accumulation */
    if (sharded)
        return l->weight_grads * c->bpe / c->optim_shards;
    return l->weight_grads * 4;
}

double llm__layer_activation_grad(const llm__layer_t *l, const llm__ctx_t *c)
{
    switch (l->kind) {
    case LLM__DROPOUT: return l->activation_grads;
    case LLM__TP_COMM:
        if (l->comm_type == LLM_TP_COMM_RS_AG)
            return l->activation_space * c->bpe / l->num_peers;
        return !l->conjugate ? l->activation_grads * c->bpe : 0;
    default: return l->activation_grads * c->bpe;
    }
}
