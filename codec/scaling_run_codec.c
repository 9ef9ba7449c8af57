/* scaling_run_codec.c — the "training" request member and the "run" response block shared by
 * /v1/estimate and /v1/transformer (see scaling_run_codec.h). */
#include "scaling_run_codec.h"

#include "json_read.h"

static const char *const training_keys[] = {"tokens", "gpu_hour_price", "gpu_power_kw", "pue",
                                            "co2_kg_per_kwh", NULL};

int codec_training_decode(const json_t *v, const char *path, const codec_gpu_cost_t *gpu,
                          scaling_training_t *out, fathom_error_t *err)
{
    scaling_training_t t;
    bool has_price = gpu && gpu->has_price, has_power = gpu && gpu->has_power;
    if (jr_expect_object(v, path, err) || jr_check_keys(v, path, training_keys, err) ||
        jr_positive(v, path, "tokens", JR_REQUIRED, 0, TRAINING_MAX_TOKENS, &t.tokens, err) ||
        jr_real(v, path, "gpu_hour_price", has_price ? JR_OPTIONAL : JR_REQUIRED,
                has_price ? gpu->price_per_gpu_hour : 0, 0, TRAINING_MAX_PRICE,
                &t.gpu_hour_price, err) ||
        jr_real(v, path, "gpu_power_kw", has_power ? JR_OPTIONAL : JR_REQUIRED,
                has_power ? gpu->power_per_gpu_kw : 0, 0, TRAINING_MAX_POWER_KW,
                &t.gpu_power_kw, err) ||
        jr_real(v, path, "pue", JR_OPTIONAL, 1.0, 1.0, TRAINING_MAX_PUE, &t.pue, err) ||
        jr_real(v, path, "co2_kg_per_kwh", JR_OPTIONAL, SCALING_DEFAULT_CO2_KG_PER_KWH, 0,
                TRAINING_MAX_CO2, &t.co2_kg_per_kwh, err))
        return -1;
    *out = t;
    return 0;
}

json_t *codec_training_encode(const scaling_training_t *t)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f}", "tokens", t->tokens, "gpu_hour_price",
                     t->gpu_hour_price, "gpu_power_kw", t->gpu_power_kw, "pue", t->pue,
                     "co2_kg_per_kwh", t->co2_kg_per_kwh);
}

json_t *codec_run_encode(const scaling_run_cost_t *r)
{
    /* Steps are a whole number; beyond 2^53 a double is all there is. */
    json_t *steps = r->steps <= 9007199254740992.0 ? json_integer((json_int_t)r->steps)
                                                    : json_real(r->steps);
    return json_pack("{s:o,s:f,s:f,s:f,s:f,s:f,s:f}", "steps", steps, "wall_time_s",
                     r->wall_time_s, "days", r->days, "gpu_hours", r->gpu_hours, "dollars",
                     r->dollars, "kwh", r->kwh, "co2_kg", r->co2_kg);
}
