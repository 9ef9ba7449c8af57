/* bench.h — what the benchmarks share: a clock and the loading of the preset files. Header
 * only (static inline): each benchmark is one file and one executable. */
#ifndef FATHOM_BENCH_H
#define FATHOM_BENCH_H

#include <stdio.h>
#include <time.h>

#include "fathom_error.h"
#include "presets.h"

/* Seconds on clock id (CLOCK_MONOTONIC for wall time, CLOCK_PROCESS_CPUTIME_ID for CPU time). */
static inline double bench_clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* qsort order for doubles, largest first (fastest rates first). */
static inline int bench_descending(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* The presets under dir, or NULL after saying why (the reason names the file) on stderr. */
static inline codec_presets_t *bench_presets(const char *who, const char *dir)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    codec_presets_t *presets = codec_presets_load(dir, &err);
    if (!presets)
        fprintf(stderr, "%s: %s\n", who, err.message);
    return presets;
}

#endif
