/* endpoint.c — the table of estimate endpoints (see endpoint.h). */
#include "endpoint.h"

#include <string.h>

/* FATHOM_HAVE_<MODULE> comes from CMake: a build of a subset of modules (FATHOM_CORE_MODULES)
 * serves just their endpoints. */
static const codec_endpoint_t *const all_endpoints[] = {
    &codec_transformer_endpoint,
    &codec_hf_config_endpoint,
#ifdef FATHOM_HAVE_LLM
    &codec_estimate_endpoint,
#endif
#ifdef FATHOM_HAVE_SCALING
    &codec_scaling_endpoint,
    &codec_scaling_fit_endpoint,
#endif
#ifdef FATHOM_HAVE_GOODPUT
    &codec_goodput_evaluate_endpoint,
    &codec_goodput_optimize_endpoint,
    &codec_goodput_fit_endpoint,
#endif
#ifdef FATHOM_HAVE_CALIBRATE
    &codec_calibrate_endpoint,
#endif
#ifdef FATHOM_HAVE_SERVING
    &codec_inference_endpoint,
#endif
};

const codec_endpoint_t *const *codec_endpoints(size_t *count)
{
    *count = sizeof all_endpoints / sizeof all_endpoints[0];
    return all_endpoints;
}

const codec_endpoint_t *codec_endpoint_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof all_endpoints / sizeof all_endpoints[0]; i++)
        if (strcmp(all_endpoints[i]->name, name) == 0)
            return all_endpoints[i];
    return NULL;
}

const codec_endpoint_t *codec_endpoint_by_path(const char *path)
{
    for (size_t i = 0; i < sizeof all_endpoints / sizeof all_endpoints[0]; i++)
        if (strcmp(all_endpoints[i]->path, path) == 0)
            return all_endpoints[i];
    return NULL;
}
