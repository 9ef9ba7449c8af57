/* json_write.h — the writers every encoder shares: numbers as a normalized request or an answer
 * writes them, and the all-or-nothing finish of an object built member by member. */
#ifndef FATHOM_JSON_WRITE_H
#define FATHOM_JSON_WRITE_H

#include <jansson.h>
#include <stdbool.h>

/* A real that reads back as the same double; an integral one is written as an integer (below
 * 2^53), so a normalized request looks like the files people write; non-finite → null. */
json_t *jw_num(double x);
/* v when ok, else NULL with v released. jansson's _new setters take their value even when they
 * fail (a NULL value fails too), so an encoder counts failures and gives back NULL after any: an
 * answer is never encoded with a member or a point missing, which a decoder would read as a
 * different request. */
json_t *jw_finish(json_t *v, bool ok);

#endif
