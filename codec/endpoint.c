/* endpoint.c — the table of estimate endpoints (see endpoint.h). */
#include "endpoint.h"

#include <string.h>

static const codec_endpoint_t *const all_endpoints[] = {
    &codec_transformer_endpoint,
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
