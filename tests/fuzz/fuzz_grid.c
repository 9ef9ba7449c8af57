/* fuzz_grid.c — libFuzzer target for grid sweeps: the spec is normalized (a body without "kind"
 * is taken as a grid), and a few points (first, last, middle and one picked by the input) are
 * expanded with codec_grid_point and run through the estimate endpoint as a sweep worker would
 * (normalize, then evaluate). Each point must carry exactly one value per axis. */
#include "fuzz_common.h"
#include "search_sweep_codec.h"

static const sweep_limits_t limits = {.max_grid_points = 100000, .max_search_executions = 1};
static const codec_endpoint_t *estimate;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    estimate = fuzz_endpoint_named("estimate");
    return 0;
}

static void check_point(const json_t *spec, uint64_t index, int naxes)
{
    json_t *body = NULL, *values = NULL;
    if (codec_grid_point(spec, index, &body, &values))
        fuzz_fail("grid point %llu of %llu refused", (unsigned long long)index,
                  (unsigned long long)codec_grid_size(spec));
    if ((int)json_object_size(values) != naxes)
        fuzz_fail("grid point has %zu values for %d axes", json_object_size(values), naxes);
    fuzz_endpoint(estimate, body);
    json_decref(body);
    json_decref(values);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = fuzz_parse(data, size);
    if (!body)
        return 0;
    if (json_is_object(body) && !json_object_get(body, "kind"))
        json_object_set_new(body, "kind", json_string("grid"));
    fathom_error_t err;
    fathom_error_clear(&err);
    const sweep_kind_t *kind = NULL;
    uint64_t n = 0;
    json_t *spec = codec_sweep_normalize(body, fuzz_ctx(), &limits, &kind, &n, &err);
    if (!spec) {
        fuzz_check_refusal("grid", &err);
        fuzz_check_names_field("grid", body, &err);
        json_decref(body);
        return 0;
    }
    json_decref(body);
    if (kind == &codec_grid_kind) {
        const char *names[SWEEP_GRID_MAX_AXES];
        int naxes = codec_grid_axes(spec, names);
        int top_n = codec_grid_top_n(spec);
        if (n == 0 || codec_grid_size(spec) != n || naxes < 1 || top_n < 1 ||
            top_n > SWEEP_TOP_N_MAX)
            fuzz_fail("grid of %llu points, %d axes, top_n %d", (unsigned long long)n, naxes,
                      top_n);
        uint64_t pick = size ? (uint64_t)data[size - 1] * 7919u % n : 0;
        check_point(spec, 0, naxes);
        if (n > 1)
            check_point(spec, n - 1, naxes);
        if (n > 2)
            check_point(spec, n / 2, naxes);
        if (pick != 0 && pick != n - 1 && pick != n / 2)
            check_point(spec, pick, naxes);
        json_t *b = NULL, *v = NULL;
        if (codec_grid_point(spec, n, &b, &v) == 0)
            fuzz_fail("grid point %llu past the end was accepted", (unsigned long long)n);
    }
    json_decref(spec);
    return 0;
}
