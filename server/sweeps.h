/* sweeps.h — asynchronous sweeps: stored in SQLite, run on the libuv worker pool.
 *
 * HTTP threads call sweeps_submit / sweeps_cancel / the read functions; everything else runs on
 * the loop thread (see the DESIGN note in sweeps.c). */
#ifndef FATHOM_SWEEPS_H
#define FATHOM_SWEEPS_H

#include <jansson.h>
#include <stddef.h>
#include <uv.h>

#include "server.h"

sweeps_t *sweeps_create(server_t *srv, uv_loop_t *loop, char *errbuf, size_t errlen);
/* Asks running sweeps to stop at their next checkpoint (they resume after a restart) and stops
 * dispatching work. */
void sweeps_begin_shutdown(sweeps_t *s);
/* Closes the module's libuv handles; the loop then ends once running work items return. */
void sweeps_shutdown(sweeps_t *s);
void sweeps_free(sweeps_t *s);

/* HTTP-thread entry points. Each returns an HTTP status and fills *out (new reference: the
 * answer body) or err. */
int sweeps_submit(sweeps_t *s, const json_t *body, json_t **out, fathom_error_t *err);
int sweeps_status(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err);
int sweeps_cancel(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err);
int sweeps_list(sweeps_t *s, int limit, json_t **out, fathom_error_t *err);
/* A search's sample of the executions that fit, for plotting (404 for a grid). */
int sweeps_sample(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err);
/* A page of a sweep's points (grid) or best list (search), as JSON or as CSV text. */
int sweeps_results(sweeps_t *s, const char *id, long long offset, long long limit, int csv,
                   json_t **out_json, char **out_csv, fathom_error_t *err);

#endif
