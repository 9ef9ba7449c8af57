/* store_rows.c — what every store backend shares, below them all: the sweep statuses' names,
 * timestamps, and handing rows out and freeing them (store.h, store_backend.h). */
#include "store_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const store_sweep_status_names[STORE_SWEEP__COUNT] = {"queued", "running", "done",
                                                                  "failed", "cancelled"};

store_sweep_status_t store__status_from_text(const char *t)
{
    for (int i = 0; t && i < STORE_SWEEP__COUNT; i++)
        if (strcmp(t, store_sweep_status_names[i]) == 0)
            return (store_sweep_status_t)i;
    return STORE_SWEEP_FAILED; /* a status this build does not know cannot be run */
}

int store__result_copied(store_result_t *out, const fathom_error_t *copy, const char *hash,
                         fathom_error_t *err)
{
    if (!copy->code && out->endpoint && out->request && out->response)
        return 0;
    store_result_close(out);
    return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory reading result %s", hash);
}

int store__sweep_deliver(store_sweep_t *sw, const fathom_error_t *copy, store_sweep_fn fn,
                         void *ctx, fathom_error_t *err)
{
    const int stop = copy->code ? 0 : fn(ctx, sw);
    store_sweep_close(sw);
    if (copy->code)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory reading sweeps");
    return stop ? 1 : 0;
}

void store_now_iso(char out[32])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03dZ", (int)(ts.tv_nsec / 1000000));
}

void store_result_close(store_result_t *r)
{
    free(r->endpoint);
    free(r->request);
    free(r->response);
    r->endpoint = r->request = r->response = NULL;
}

void store_sweep_close(store_sweep_t *sw)
{
    free(sw->spec);
    free(sw->state);
    free(sw->sample);
    free(sw->result);
    free(sw->error);
    free(sw->runs);
    sw->spec = sw->state = sw->sample = sw->result = sw->error = sw->runs = NULL;
}

void store_preset_close(store_preset_t *p)
{
    free(p->body);
    p->body = NULL;
}
