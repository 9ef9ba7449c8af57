/* goodput_fit_codec.c — POST /v1/goodput/fit: measured step times in, fitted performance
 * parameters out (goodput_codec.h has the wire format, core/goodput/goodput.h the fit).
 *
 * The rows are copied into a buffer whose length was checked against GOODPUT_MAX_MEASUREMENTS
 * before it was allocated; the buffer is freed on every path by the one cleanup at the end. */
#include <stdlib.h>

#include "endpoint.h"
#include "goodput_codec.h"
#include "json_read.h"

static const char *const fit_keys[] = {"measurements", NULL};
static const char *const row_keys[] = {"num_nodes", "num_replicas", "atomic_bsz",
                                       "accum_step_time", "optim_step_time", NULL};

/* Decodes and checks every row; *rows_out is malloc'd (caller frees) on success only. */
static int fit_decode(const json_t *body, goodput_measurement_t **rows_out, size_t *n_out,
                      fathom_error_t *err)
{
    if (jr_expect_object(body, "", err) || jr_check_keys(body, "", fit_keys, err))
        return -1;
    const json_t *ms = json_object_get(body, "measurements");
    if (jr_expect_array(ms, "measurements", 1, GOODPUT_MAX_MEASUREMENTS, err))
        return -1;
    size_t n = json_array_size(ms);
    goodput_measurement_t *rows = malloc(n * sizeof *rows);
    if (!rows)
        return fathom_error_set(err, FATHOM_E_INTERNAL, "measurements", "out of memory");
    int rc = -1;
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(ms, i);
        goodput_measurement_t *r = &rows[i];
        char p[JR_PATH_MAX];
        jr_path_index(p, sizeof p, "measurements", i);
        if (jr_expect_object(m, p, err) || jr_check_keys(m, p, row_keys, err) ||
            jr_int(m, p, "num_nodes", JR_REQUIRED, 0, 1, GOODPUT_MAX_NODES, &r->num_nodes, err) ||
            jr_int(m, p, "num_replicas", JR_REQUIRED, 0, 1, GOODPUT_MAX_REPLICAS,
                   &r->num_replicas, err) ||
            jr_int(m, p, "atomic_bsz", JR_REQUIRED, 0, 1, GOODPUT_MAX_BATCH, &r->atomic_bsz,
                   err) ||
            jr_positive(m, p, "accum_step_time", JR_REQUIRED, 0, CODEC_GOODPUT_MAX_SECONDS,
                        &r->accum_step_time, err) ||
            jr_positive(m, p, "optim_step_time", JR_REQUIRED, 0, CODEC_GOODPUT_MAX_SECONDS,
                        &r->optim_step_time, err))
            goto out;
    }
    if (goodput_measurements_check(rows, n, err))
        goto out;
    *rows_out = rows;
    *n_out = n;
    rows = NULL;
    rc = 0;
out:
    free(rows);
    return rc;
}

static json_t *fit_normalize(const json_t *body, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    goodput_measurement_t *rows;
    size_t n;
    if (fit_decode(body, &rows, &n, err))
        return NULL;
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(
            a, json_pack("{s:I,s:I,s:I,s:f,s:f}", "num_nodes", (json_int_t)rows[i].num_nodes,
                         "num_replicas", (json_int_t)rows[i].num_replicas, "atomic_bsz",
                         (json_int_t)rows[i].atomic_bsz, "accum_step_time",
                         rows[i].accum_step_time, "optim_step_time", rows[i].optim_step_time));
    free(rows);
    return json_pack("{s:o}", "measurements", a);
}

static json_t *fit_evaluate(const json_t *normalized, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    goodput_measurement_t *rows;
    size_t n;
    if (fit_decode(normalized, &rows, &n, err))
        return NULL;
    goodput_fit_t fit;
    json_t *out = NULL;
    if (goodput_fit_perf_params(rows, n, &fit, err))
        goto done;
    json_t *fixed = json_array();
    const struct {
        bool on;
        const char *name;
    } flags[] = {{fit.fixed.alpha_c, "alpha_c"}, {fit.fixed.alpha_n, "alpha_n"},
                 {fit.fixed.beta_n, "beta_n"},   {fit.fixed.alpha_r, "alpha_r"},
                 {fit.fixed.beta_r, "beta_r"}};
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
        if (flags[k].on)
            json_array_append_new(fixed, json_string(flags[k].name));
    out = json_pack("{s:o,s:f,s:o}", "perf_params", codec_goodput_perf_params_encode(&fit.params),
                    "objective", fit.objective, "fixed_params", fixed);
done:
    free(rows);
    return out;
}

const codec_endpoint_t codec_goodput_fit_endpoint = {"goodput_fit", "/v1/goodput/fit",
                                                     fit_normalize, fit_evaluate};
