/* cache.h — the result cache: one row per config hash in the `results` table.
 *
 * A row is inserted whole in one transaction (never updated except its hit counter), so a reader
 * sees either no row or the complete response. New rows are written behind the answer: they
 * wait in a bounded queue (where lookups find them too) and one thread commits them in
 * batches, so no request waits for a commit; a crash can lose the last ~20 ms of cache rows,
 * never leave half of one. Concurrent misses on the same hash both compute
 * and the second insert is a no-op: results are deterministic, so either copy is the answer.
 *
 * Hits are counted in memory and written in one transaction a second (cache_flush_hits, from
 * the main loop, and at shutdown): a write per cached answer would queue every hit behind the
 * database's one writer. A crash loses at most a second of hit counts, never a result.
 *
 * In front of the table sits a small in-memory map from the exact request bytes to the stored
 * answer: a dashboard that polls with the same body gets its answer without parsing,
 * normalizing or reading the database. It is filled only on a hit (a body seen twice), so
 * one-off requests never occupy it, and it is bounded in entries and bytes (LRU). Built-in
 * presets and the estimator cannot change while the process runs, so equal bytes mean an equal
 * answer; a request naming a user preset (which any replica may replace) never enters the map
 * (estimate.c), and its normalized request holds the preset's content, so its hash changes when
 * the preset does. */
#ifndef FATHOM_CACHE_H
#define FATHOM_CACHE_H

#include <stddef.h>

#include "canonical.h"
#include "store.h"

typedef struct {
    char *endpoint;
    char *request;  /* normalized request, canonical JSON text */
    char *response; /* response body as first served */
    char created_at[32];
    long long hit_count;
} cache_entry_t;

typedef struct cache cache_t;

cache_t *cache_create(store_t *store);
/* Writes the pending hit counts, then frees. */
void cache_free(cache_t *c);

/* 1 and *out filled (free with cache_entry_free) when found, 0 when absent, -1 on a DB error. */
int cache_get(cache_t *c, const char *hash, cache_entry_t *out);
/* Counts one hit (in memory until the next flush). */
void cache_count_hit(cache_t *c, const char *hash);
/* Writes the counted hits in one transaction. 0, or -1 on a DB error (they stay pending). */
int cache_flush_hits(cache_t *c);
/* The hot map: 1 with the config hash and a malloc'd copy of the answer when these exact bytes
 * were answered from the cache before, else 0. */
int cache_hot_get(cache_t *c, const char *endpoint, const char *body, size_t len,
                  char hash[CODEC_HASH_HEX_LEN + 1], char **response);
void cache_hot_put(cache_t *c, const char *endpoint, const char *body, size_t len,
                   const char *hash, const char *response);

/* Stores a result. 0, or -1 on a DB error (a read-only or full disk). */
int cache_put(cache_t *c, const char *hash, const char *endpoint, const char *request,
              const char *response);
void cache_entry_free(cache_entry_t *e);

#endif
