/* alloc_guard.c — jansson's allocator, noting failures per thread (see alloc_guard.h). */
#include "alloc_guard.h"

#include <jansson.h>
#include <stdlib.h>

static void *(*inner_malloc)(size_t) = malloc; /* set once, before threads start */
static _Thread_local bool failed;

static void *guarded_malloc(size_t n)
{
    void *p = inner_malloc(n);
    if (!p)
        failed = true;
    return p;
}

void alloc_guard_install(void *(*inner)(size_t))
{
    inner_malloc = inner ? inner : malloc;
    json_set_alloc_funcs(guarded_malloc, free);
}

bool alloc_guard_take(void)
{
    bool was = failed;
    failed = false;
    return was;
}
