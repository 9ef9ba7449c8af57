/* cache.h — the result cache: one row per config hash in the `results` table.
 *
 * A row is inserted whole in one statement (never updated except its hit counter), so a reader
 * sees either no row or the complete response. Concurrent misses on the same hash both compute
 * and the second insert is a no-op: results are deterministic, so either copy is the answer. */
#ifndef FATHOM_CACHE_H
#define FATHOM_CACHE_H

#include "db.h"

typedef struct {
    char *endpoint;
    char *request;  /* normalized request, canonical JSON text */
    char *response; /* response body as first served */
    char created_at[32];
    long long hit_count;
} cache_entry_t;

/* 1 and *out filled (free with cache_entry_free) when found, 0 when absent, -1 on a DB error. */
int cache_get(db_t *db, const char *hash, cache_entry_t *out);
/* Counts one hit. 0, or -1 on a DB error (a read-only or full disk). */
int cache_count_hit(db_t *db, const char *hash);
/* Stores a result. 0, or -1 on a DB error. */
int cache_put(db_t *db, const char *hash, const char *endpoint, const char *request,
              const char *response);
void cache_entry_free(cache_entry_t *e);

#endif
