/* sweep_kind.c — the table of sweep kinds (see sweep_kind.h) and the POST /v1/sweep body's
 * dispatch by its "kind". */
#include "sweep_kind.h"

#include <string.h>

#include "json_read.h"

/* FATHOM_HAVE_<MODULE> comes from CMake: a build without a module has none of its kinds. Room
 * is left after the built-in rows for kinds registered at start-up (sweep_kind_register). */
#define EXTRA_MAX 4
static const sweep_kind_t *all_kinds[] = {
#ifdef FATHOM_HAVE_SEARCH
    &codec_search_kind,
    &codec_grid_kind,
    &codec_plan_kind,
#endif
#ifdef FATHOM_HAVE_SERVING
    &codec_serving_plan_kind,
#endif
    NULL, NULL, NULL, NULL, NULL, /* EXTRA_MAX registered, then the end */
};
#define ROOM (sizeof all_kinds / sizeof all_kinds[0] - 1)

static size_t count_kinds(void)
{
    size_t n = 0;
    while (all_kinds[n])
        n++;
    return n;
}

const sweep_kind_t *const *sweep_kinds(size_t *count)
{
    *count = count_kinds();
    return all_kinds;
}

const sweep_kind_t *sweep_kind_by_name(const char *name)
{
    for (size_t i = 0; name && all_kinds[i]; i++)
        if (strcmp(all_kinds[i]->name, name) == 0)
            return all_kinds[i];
    return NULL;
}

int sweep_kind_register(const sweep_kind_t *kind)
{
    size_t n = count_kinds();
    if (n >= ROOM || sweep_kind_by_name(kind->name))
        return -1;
    all_kinds[n] = kind;
    return 0;
}

json_t *codec_sweep_normalize(const json_t *body, const codec_ctx_t *ctx,
                              const sweep_limits_t *limits, const sweep_kind_t **kind,
                              uint64_t *size, fathom_error_t *err)
{
    const char *names[ROOM + 1];
    size_t n = count_kinds();
    for (size_t i = 0; i <= n; i++)
        names[i] = all_kinds[i] ? all_kinds[i]->name : NULL;
    int k;
    if (jr_expect_object(body, "", err) ||
        jr_enum(body, "", "kind", JR_REQUIRED, 0, names, &k, err))
        return NULL;
    *kind = all_kinds[k];
    return all_kinds[k]->normalize(body, ctx, limits, size, err);
}
