/* routes.h — the route table's entry (routes.c): main.c hands it to http_start, so the HTTP
 * layer calls no handler by name and nothing calls back into it. */
#ifndef FATHOM_ROUTES_H
#define FATHOM_ROUTES_H

#include "server.h"

/* Answers a complete request (body read) with its route's handler: a fixed route, an estimate
 * endpoint of the codec's table, a preflight, 404/405, or a file of the page. 1 when an answer
 * was queued, 0 to drop the connection (an http_dispatch_fn). */
int routes_handle(http_req_t *r);

#endif
