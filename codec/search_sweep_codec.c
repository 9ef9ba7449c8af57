/* search_sweep_codec.c — sweep specs and grid points (see search_sweep_codec.h). */
#include "search_sweep_codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "llm_codec.h"
#include "search.h"
#include "search_codec.h"
#include "search_plan_codec.h"

static const char *const grid_keys[] = {"kind", "base", "axes", "top_n", NULL};
static const char *const base_roots[] = {"model", "system", "execution", "training", NULL};

/* Follows a path like "system.networks[0].bandwidth" inside v. On success *parent is the
 * container holding the last step, and *key or *index names it (index -1 for an object key). */
static int resolve(json_t *v, const char *path, json_t **parent, char *key, size_t keycap,
                   long *index)
{
    char buf[JR_PATH_MAX];
    if (strlen(path) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", path);
    json_t *cur = v;
    char *p = buf;
    while (*p) {
        char *dot = strchr(p, '.');
        if (dot)
            *dot = '\0';
        char *br = strchr(p, '[');
        if (br)
            *br = '\0';
        if (!*p || !json_is_object(cur) || !json_object_get(cur, p))
            return -1;
        if (!br) {
            if (!dot) {
                *parent = cur;
                snprintf(key, keycap, "%s", p);
                *index = -1;
                return 0;
            }
            cur = json_object_get(cur, p);
        } else {
            cur = json_object_get(cur, p);
            char *q = br + 1;
            for (;;) {
                char *end;
                long i = strtol(q, &end, 10);
                if (end == q || *end != ']' || i < 0 || !json_is_array(cur) ||
                    (size_t)i >= json_array_size(cur))
                    return -1;
                q = end + 1;
                if (*q == '[') {
                    cur = json_array_get(cur, (size_t)i);
                    q++;
                    continue;
                }
                if (*q != '\0')
                    return -1;
                if (!dot) {
                    *parent = cur;
                    *index = i;
                    key[0] = '\0';
                    return 0;
                }
                cur = json_array_get(cur, (size_t)i);
                break;
            }
        }
        p = dot + 1;
    }
    return -1;
}

static int set_path(json_t *v, const char *path, json_t *value)
{
    json_t *parent;
    char key[JR_PATH_MAX];
    long index;
    if (resolve(v, path, &parent, key, sizeof key, &index))
        return -1;
    if (index < 0)
        return json_object_set(parent, key, value);
    return json_array_set(parent, (size_t)index, value);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int codec_grid_axes(const json_t *spec, const char **names)
{
    const json_t *axes = json_object_get(spec, "axes");
    const char *key;
    json_t *val;
    int n = 0;
    json_object_foreach((json_t *)axes, key, val)
    {
        if (n < SWEEP_GRID_MAX_AXES)
            names[n++] = key;
    }
    qsort(names, (size_t)n, sizeof names[0], by_name);
    return n;
}

uint64_t codec_grid_size(const json_t *spec)
{
    const char *names[SWEEP_GRID_MAX_AXES];
    int n = codec_grid_axes(spec, names);
    uint64_t total = 1;
    for (int i = 0; i < n; i++)
        total *= json_array_size(json_object_get(json_object_get(spec, "axes"), names[i]));
    return total;
}

int codec_grid_top_n(const json_t *spec)
{
    return (int)json_integer_value(json_object_get(spec, "top_n"));
}

/* data_par × context_par of an execution object (a value that is not a count reads as 0). */
static json_int_t group_of(const json_t *exec)
{
    json_int_t dp = json_integer_value(json_object_get(exec, "data_par"));
    json_int_t cp = json_integer_value(json_object_get(exec, "context_par"));
    return dp * (cp > 1 ? cp : 1);
}

int codec_grid_point(const json_t *spec, uint64_t index, json_t **body, json_t **values)
{
    const char *names[SWEEP_GRID_MAX_AXES];
    int n = codec_grid_axes(spec, names);
    if (index >= codec_grid_size(spec))
        return -1;
    json_t *b = json_deep_copy(json_object_get(spec, "base"));
    json_t *vals = json_object();
    const json_t *axes = json_object_get(spec, "axes");
    uint64_t rest = index;
    /* The normalized base spells out its shard group; all of its data_par × context_par is the
     * default, "shard over every rank", and stays so at a point whose degrees differ (as a group
     * smaller than that stays the group given). */
    json_t *exec = json_object_get(b, "execution");
    const bool shard_all = json_integer_value(json_object_get(exec, "shard_group")) ==
                           group_of(exec);
    for (int i = n - 1; i >= 0; i--) {
        const json_t *arr = json_object_get(axes, names[i]);
        size_t len = json_array_size(arr);
        json_t *v = json_array_get(arr, (size_t)(rest % len));
        rest /= len;
        if (set_path(b, names[i], v) || json_object_set(vals, names[i], v)) {
            json_decref(b);
            json_decref(vals);
            return -1;
        }
    }
    /* (a degree the axis made no count leaves the group as it was: that degree is the error) */
    if (shard_all && !json_object_get(vals, "execution.shard_group") && group_of(exec) >= 1 &&
        json_object_set_new(exec, "shard_group", json_integer(group_of(exec)))) {
        json_decref(b);
        json_decref(vals);
        return -1;
    }
    *body = b;
    *values = vals;
    return 0;
}

/* A "system" axis may name user presets: each is replaced by its object here, so the stored spec
 * (and so the sweep's id) holds the preset's content and no point reads a preset later. A name
 * no preset has is refused now rather than at every point. Returns the axis's values to store
 * (new reference) or NULL with err. */
static json_t *resolve_system_axis(const char *key, json_t *vals, const codec_ctx_t *ctx,
                                   const char *path, fathom_error_t *err)
{
    if (strcmp(key, "system") != 0)
        return json_incref(vals);
    json_t *out = json_copy(vals);
    for (size_t i = 0; out && i < json_array_size(out); i++) {
        const json_t *v = json_array_get(out, i);
        char q[JR_PATH_MAX];
        jr_path_index(q, sizeof q, path, i);
        if (!json_is_string(v) ||
            codec_presets_is_builtin(ctx->presets, PRESET_SYSTEM, json_string_value(v)))
            continue;
        if (codec_presets_deref(ctx->presets, PRESET_SYSTEM, &v, q, err)) {
            json_decref(out);
            return NULL;
        }
        if (json_array_set_new(out, i, json_deep_copy(v))) {
            json_decref(out);
            out = NULL;
        }
    }
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return out;
}

/* The JSON kind of a value as an axis compares it: every number is one kind (the normalized base
 * writes an integral real as an integer). */
static int kind_of(const json_t *v)
{
    return json_is_number(v) ? JSON_REAL : json_is_boolean(v) ? JSON_TRUE : (int)json_typeof(v);
}

/* Whether value v of axis `key` can stand where the normalized base has `was`; else the 422
 * naming path q (axes.<key>[i]), which every point would otherwise fail one by one. A value of
 * another kind than the base's is refused (a string for execution.tensor_par, a number for the
 * whole execution object), but a preset name for the model or the system; a fraction where the
 * base has an integer is refused when the base with it substituted names the axis's own field
 * (execution.tensor_par 4.5; system.mem1.GiB 0.5 is a real and decodes). Other refusals of a
 * substituted base may hang on another axis's value (microbatch_size must divide the batch of
 * a data_par axis), so they are left to the point. */
static int check_axis_value(const json_t *nbase, const char *key, const json_t *was,
                            const json_t *v, const codec_ctx_t *ctx, const char *q,
                            fathom_error_t *err)
{
    const bool preset = strcmp(key, "model") == 0 || strcmp(key, "system") == 0;
    if (preset && json_is_string(v)) {
        /* A name no model preset has is refused now, as resolve_system_axis refuses a system's,
         * not at its every point. */
        const json_t *named = v;
        return strcmp(key, "model") == 0
                   ? codec_presets_deref(ctx->presets, PRESET_MODEL, &named, q, err)
                   : 0;
    }
    if (json_is_object(was) || json_is_array(was))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "%s would replace the whole %s of the base: %s", jr_type_name(v),
                                key,
                                preset ? "its values are preset names, or the axis names a "
                                         "field inside it (system.mem1.GiB)"
                                       : "an axis names one field inside it, down to a number, "
                                         "string or boolean (execution.tensor_par)");
    if (!json_is_null(was) && kind_of(v) != kind_of(was))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q, "must be %s, as the base's %s "
                                "is, not %s", json_is_number(was) ? "a number" : jr_type_name(was),
                                key, jr_type_name(v));
    if (!json_is_integer(was) || !json_is_real(v) ||
        json_real_value(v) == floor(json_real_value(v)))
        return 0;
    json_t *b = json_deep_copy(nbase);
    fathom_error_t e2;
    fathom_error_clear(&e2);
    json_t *n = b && set_path(b, key, (json_t *)v) == 0
                    ? codec_estimate_endpoint.normalize(b, ctx, &e2)
                    : NULL;
    json_decref(b);
    if (n) {
        json_decref(n);
        return 0;
    }
    if (strcmp(e2.field, key) == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q, "%s", e2.message);
    return e2.code == FATHOM_E_INTERNAL ? fathom_error_set(err, e2.code, NULL, "%s", e2.message)
                                        : 0;
}

json_t *codec_grid_normalize(const json_t *body, const codec_ctx_t *ctx,
                             const sweep_limits_t *limits, uint64_t *size, fathom_error_t *err)
{
    if (jr_check_keys(body, "", grid_keys, err))
        return NULL;
    const json_t *base = json_object_get(body, "base");
    if (jr_expect_object(base, "base", err) || jr_check_keys(base, "base", base_roots, err))
        return NULL;
    json_t *nbase = codec_estimate_endpoint.normalize(base, ctx, err);
    if (!nbase) {
        /* Names the field inside the sweep body: "execution.x" becomes "base.execution.x". */
        char field[FATHOM_ERROR_FIELD_MAX + 8];
        snprintf(field, sizeof field, "base%s%s", err->field[0] ? "." : "", err->field);
        snprintf(err->field, sizeof err->field, "%.*s", (int)sizeof err->field - 1, field);
        return NULL;
    }
    int64_t top_n;
    const json_t *axes = json_object_get(body, "axes");
    if (jr_int(body, "", "top_n", JR_OPTIONAL, 10, 1, SWEEP_TOP_N_MAX, &top_n, err) ||
        jr_expect_object(axes, "axes", err)) {
        json_decref(nbase);
        return NULL;
    }
    size_t naxes = json_object_size(axes);
    if (naxes == 0 || naxes > SWEEP_GRID_MAX_AXES) {
        fathom_error_set(err, naxes ? FATHOM_E_LIMIT_EXCEEDED : FATHOM_E_INVALID_FIELD, "axes",
                         "must name between 1 and %d axes", SWEEP_GRID_MAX_AXES);
        json_decref(nbase);
        return NULL;
    }
    json_t *naxes_obj = json_object();
    uint64_t total = 1;
    const char *key;
    json_t *vals;
    json_object_foreach((json_t *)axes, key, vals)
    {
        char p[JR_PATH_MAX];
        jr_path(p, sizeof p, "axes", key);
        json_t *parent;
        char last[JR_PATH_MAX];
        long index;
        if (resolve(nbase, key, &parent, last, sizeof last, &index)) {
            fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                             "is not a field of the normalized base (paths look like "
                             "execution.tensor_par, system.mem1.GiB or model.seq_size)");
            goto fail;
        }
        if (jr_expect_array(vals, p, 1, SWEEP_GRID_MAX_VALUES, err))
            goto fail;
        const json_t *was = index < 0 ? json_object_get(parent, last)
                                      : json_array_get(parent, (size_t)index);
        for (size_t i = 0; i < json_array_size(vals); i++) {
            json_t *v = json_array_get(vals, i);
            char q[JR_PATH_MAX];
            jr_path_index(q, sizeof q, p, i);
            if (!(json_is_number(v) || json_is_string(v) || json_is_boolean(v))) {
                fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                 "axis values must be numbers, strings or booleans");
                goto fail;
            }
            if (check_axis_value(nbase, key, was, v, ctx, q, err))
                goto fail;
        }
        total *= json_array_size(vals);
        if (total > limits->max_grid_points) {
            fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "axes",
                             "the grid has more than %llu points, the limit of this server "
                             "(--max-sweep-points)",
                             (unsigned long long)limits->max_grid_points);
            goto fail;
        }
        json_t *stored = resolve_system_axis(key, vals, ctx, p, err);
        if (!stored)
            goto fail;
        if (json_object_set_new(naxes_obj, key, stored)) {
            fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
            goto fail;
        }
    }
    *size = total;
    return json_pack("{s:s,s:o,s:o,s:I}", "kind", "grid", "base", nbase, "axes", naxes_obj,
                     "top_n", (json_int_t)top_n);
fail:
    json_decref(nbase);
    json_decref(naxes_obj);
    return NULL;
}

int codec_sweep_stat_names(json_t *names)
{
    llm_stats_t zero;
    memset(&zero, 0, sizeof zero);
    json_t *stats = codec_llm_stats_encode(&zero);
    const char *key;
    json_t *unused;
    int rc = stats ? 0 : -1;
    json_object_foreach(stats, key, unused)
    {
        if (!rc)
            rc = json_array_append_new(names, json_string(key));
    }
    json_decref(stats);
    return rc;
}

int codec_sweep_gather(json_t *array, json_t *item, int *failed)
{
    if (item && json_array_append_new(array, item) == 0)
        return 0;
    *failed = 1;
    return 1;
}

json_t *codec_sweep_cell(json_t *v)
{
    return v ? json_incref(v) : json_null();
}

int codec_sweep_stat_cells(const json_t *stats, json_t *cells)
{
    json_t *names = json_array();
    int rc = names ? codec_sweep_stat_names(names) : -1;
    size_t i;
    json_t *name;
    json_array_foreach(names, i, name)
    {
        if (!rc)
            rc = json_array_append_new(
                cells, codec_sweep_cell(json_object_get(stats, json_string_value(name))));
    }
    json_decref(names);
    return rc;
}
