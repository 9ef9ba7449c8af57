/* sweeps.h — asynchronous sweeps: stored in SQLite, run on the libuv worker pool. */
#ifndef FATHOM_SWEEPS_H
#define FATHOM_SWEEPS_H

#include <stddef.h>
#include <uv.h>

#include "server.h"

sweeps_t *sweeps_create(server_t *srv, uv_loop_t *loop, char *errbuf, size_t errlen);
/* Asks running sweeps to stop at their next checkpoint (they resume after a restart). */
void sweeps_begin_shutdown(sweeps_t *s);
/* Closes the module's libuv handles; the loop then ends once running jobs have returned. */
void sweeps_shutdown(sweeps_t *s);
void sweeps_free(sweeps_t *s);

#endif
