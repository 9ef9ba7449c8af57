/* llm_system_variant.c — a GPU variant: a system preset with the figures that differ on the part
 * people actually rent (doc/stacks.md, "GPU variants"):
 *
 *   {"preset": "h100_sxm", "memory_gib": 96, "memory_gbps": 2400, "power_limit_w": 500,
 *    "nvlink_gbps": 200, "nic_gbps": 25}
 *
 * memory_gib and memory_gbps replace mem1's capacity and bandwidth; power_limit_w, below the
 * preset's board power (power_per_gpu_kw), lowers the sustained clock and so every matrix and
 * vector rate by llm_power_capped_clock (the memory keeps its own clock), and becomes the
 * variant's power_per_gpu_kw; nvlink_gbps replaces tier 0's bandwidth and nic_gbps the last
 * tier's (per GPU and direction, as networks[i].bandwidth); float4_tflops replaces the dense FP4
 * rate serving reads (0: none), and a power limit lowers it with the others. The result is a
 * whole system object:
 * the normalized request holds it, so a variant and the object it stands for are one request. */
#include <string.h>

#include "json_read.h"
#include "llm_codec.h"

static const char *const variant_keys[] = {"preset",      "memory_gib", "memory_gbps",
                                           "power_limit_w", "nvlink_gbps", "nic_gbps",
                                           "float4_tflops", NULL};

/* Multiplies every "tflops" of a processor object by k. */
static int scale_rates(json_t *proc, double k)
{
    const char *dt;
    json_t *rate;
    json_object_foreach(proc, dt, rate)
    {
        json_t *t = json_object_get(rate, "tflops");
        if (json_is_number(t) && json_object_set_new(rate, "tflops",
                                                     json_real(json_number_value(t) * k)))
            return -1;
    }
    return 0;
}

static int set_real(json_t *obj, const char *key, double v)
{
    return json_is_object(obj) ? json_object_set_new(obj, key, json_real(v)) : -1;
}

/* The power limit: lower clocks by llm_power_capped_clock below the preset's board power. */
static int apply_power(json_t *sys, const char *path, double limit_w, fathom_error_t *err)
{
    char p[JR_PATH_MAX];
    jr_path(p, sizeof p, path, "power_limit_w");
    const json_t *board = json_object_get(sys, "power_per_gpu_kw");
    if (!json_is_number(board) || !(json_number_value(board) > 0))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "the preset states no board power (power_per_gpu_kw) to cap");
    const double board_w = json_number_value(board) * 1000.0;
    if (limit_w > board_w)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "%g W is above the preset's board power (%g W): a GPU draws at "
                                "most its board power",
                                limit_w, board_w);
    if (!(limit_w > LLM_IDLE_POWER_SHARE * board_w))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "%g W is at or below the part's idle power (%g W): it could not "
                                "run",
                                limit_w, LLM_IDLE_POWER_SHARE * board_w);
    const double k = llm_power_capped_clock(board_w, limit_w);
    const json_t *fp4 = json_object_get(sys, "float4_tflops"); /* the same tensor cores' clock */
    if (scale_rates(json_object_get(sys, "matrix"), k) ||
        scale_rates(json_object_get(sys, "vector"), k) ||
        (json_is_number(fp4) && set_real(sys, "float4_tflops", json_number_value(fp4) * k)) ||
        json_object_set_new(sys, "power_per_gpu_kw", json_real(limit_w / 1000.0)))
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return 0;
}

/* The variant's overrides on a copy of its preset (header). */
static json_t *make_variant(const json_t *v, const char *path, const codec_presets_t *presets,
                            fathom_error_t *err)
{
    const char *name;
    double mem_gib = 0, mem_gbps = 0, power_w = 0, nvlink = 0, nic = 0, fp4 = -1;
    if (jr_check_keys(v, path, variant_keys, err) ||
        jr_string(v, path, "preset", JR_REQUIRED, NULL, 256, &name, err) ||
        jr_positive(v, path, "memory_gib", JR_OPTIONAL, 0, 1e9, &mem_gib, err) ||
        jr_positive(v, path, "memory_gbps", JR_OPTIONAL, 0, 1e9, &mem_gbps, err) ||
        jr_positive(v, path, "power_limit_w", JR_OPTIONAL, 0, 1e6, &power_w, err) ||
        jr_positive(v, path, "nvlink_gbps", JR_OPTIONAL, 0, 1e9, &nvlink, err) ||
        jr_positive(v, path, "nic_gbps", JR_OPTIONAL, 0, 1e9, &nic, err) ||
        jr_real(v, path, "float4_tflops", JR_OPTIONAL, -1, 0, 1e6, &fp4, err))
        return NULL;
    char p[JR_PATH_MAX];
    jr_path(p, sizeof p, path, "preset");
    const json_t *base;
    if (codec_presets_resolve(presets, PRESET_SYSTEM, name, &base, err))
        return NULL;
    if (!base) {
        codec_presets_unknown(presets, PRESET_SYSTEM, name, p, err);
        return NULL;
    }
    json_t *sys = json_deep_copy(base);
    json_t *nets = json_object_get(sys, "networks");
    const size_t n_nets = json_array_size(nets);
    int rc = sys ? 0 : -1;
    if (!rc && mem_gib > 0)
        rc = set_real(json_object_get(sys, "mem1"), "GiB", mem_gib);
    if (!rc && mem_gbps > 0)
        rc = set_real(json_object_get(sys, "mem1"), "GBps", mem_gbps);
    if (!rc && fp4 >= 0)
        rc = set_real(sys, "float4_tflops", fp4);
    if (!rc && nvlink > 0)
        rc = set_real(json_array_get(nets, 0), "bandwidth", nvlink);
    if (!rc && nic > 0) {
        jr_path(p, sizeof p, path, "nic_gbps");
        if (n_nets < 2) {
            json_decref(sys);
            fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                             "the preset has one network tier: no NIC tier to set");
            return NULL;
        }
        rc = set_real(json_array_get(nets, n_nets - 1), "bandwidth", nic);
    }
    if (rc) {
        json_decref(sys);
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    if (power_w > 0 && apply_power(sys, path, power_w, err)) {
        json_decref(sys);
        return NULL;
    }
    return sys;
}

/* An object is a variant when it names a preset or gives only a variant's members: {"memory_gib":
 * 96} without "preset" is a variant missing its preset, not a system object missing everything. */
static bool is_variant(const json_t *v)
{
    if (!json_is_object(v) || json_object_size(v) == 0)
        return false;
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        bool known = false;
        for (int i = 0; variant_keys[i]; i++)
            known = known || strcmp(key, variant_keys[i]) == 0;
        if (!known)
            return json_object_get(v, "preset") != NULL;
    }
    return true;
}

int codec_llm_system_resolve(const json_t *v, const char *path, const codec_presets_t *presets,
                             const json_t **out, json_t **owned, fathom_error_t *err)
{
    *out = NULL;
    *owned = NULL;
    if (codec_presets_deref(presets, PRESET_SYSTEM, &v, path, err))
        return -1;
    if (is_variant(v)) {
        *owned = make_variant(v, path, presets, err);
        *out = *owned;
        return *owned ? 0 : -1;
    }
    /* borrowed: the registry's presets are shared by every thread, so never incref'd here */
    *out = v;
    return 0;
}
