/* cache.c — reading and writing result rows (see cache.h). */
#include "cache.h"

#include <pthread.h>
#include <sodium.h>
#include <stdbool.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "canonical.h"

/* Bounds of the queue of results waiting to be written. Past them a result is served but not
 * stored (X-Fathom-Stored: false): the queue must not grow with a burst of new requests. */
#define WRITE_QUEUE_MAX 8192
#define WRITE_QUEUE_MAX_BYTES (64 * 1024 * 1024)
#define WRITE_BATCH_MS 20

typedef struct {
    char hash[CODEC_HASH_HEX_LEN + 1];
    char *endpoint, *request, *response;
    char created_at[32];
    size_t bytes;
} queued_result_t;

/* Bounds of the hot map: small, because it only has to hold what dashboards repeat. */
#define HOT_MAX_ENTRIES 1024
#define HOT_MAX_BYTES (4 * 1024 * 1024)
#define HOT_BUCKETS 2048 /* a power of two */

typedef struct hot_entry {
    unsigned char key[crypto_generichash_BYTES];
    char hash[CODEC_HASH_HEX_LEN + 1];
    char *response;
    size_t size;
    struct hot_entry *chain;            /* bucket list */
    struct hot_entry *newer, *older;    /* LRU list */
} hot_entry_t;

/* Distinct hashes with pending hits before a flush is forced. */
#define HITS_PENDING_MAX 4096

typedef struct {
    char hash[CODEC_HASH_HEX_LEN + 1];
    long long count;
} pending_hit_t;

struct cache {
    store_t *store;
    /* Lock order: the three locks below are leaves. None is held while another is taken, or
     * across a store call (the store's own locks are taken inside its calls only). */
    pthread_mutex_t lock; /* guards pending */
    pending_hit_t *pending;
    int npending;
    /* Write-behind: HTTP threads queue new results; one thread writes them in batches, one
     * transaction each, so no request waits for a commit or a WAL checkpoint. */
    pthread_mutex_t write_lock; /* guards the queue, the batch and `stopping` */
    pthread_cond_t write_wake;
    queued_result_t *queue;
    int nqueued;
    size_t queued_bytes;
    queued_result_t *batch; /* being written: still readable, freed after its commit */
    int nbatch;
    bool stopping;
    pthread_t writer;
    bool writer_started;
    pthread_mutex_t hot_lock; /* guards the hot map */
    hot_entry_t *buckets[HOT_BUCKETS];
    hot_entry_t *newest, *oldest;
    int hot_entries;
    size_t hot_bytes;
};

static void free_queued(queued_result_t *q)
{
    free(q->endpoint);
    free(q->request);
    free(q->response);
}

/* Inserts result rows in one transaction. 0, or -1 (nothing of the batch is stored). */
static int insert_batch(cache_t *c, const queued_result_t *rows, int n)
{
    store_result_row_t *out = malloc((size_t)(n ? n : 1) * sizeof *out);
    if (!out)
        return -1;
    for (int i = 0; i < n; i++)
        out[i] = (store_result_row_t){rows[i].hash, rows[i].endpoint, rows[i].request,
                                      rows[i].response, rows[i].created_at};
    fathom_error_t err;
    int rc = store_results_put(c->store, out, n, &err);
    free(out);
    return rc;
}

/* The writer thread: every WRITE_BATCH_MS (or when woken), writes what is queued. A batch that
 * fails is dropped (these are cache rows: the answer was already served) and switches the
 * cache to synchronous stores, so callers learn about the fault (X-Fathom-Stored: false). */
static void *writer_main(void *arg)
{
    cache_t *c = arg;
    pthread_mutex_lock(&c->write_lock);
    for (;;) {
        while (c->nqueued == 0 && !c->stopping)
            pthread_cond_wait(&c->write_wake, &c->write_lock);
        if (c->nqueued == 0 && c->stopping)
            break;
        if (!c->stopping) { /* let a batch gather */
            pthread_mutex_unlock(&c->write_lock);
            struct timespec ts = {0, WRITE_BATCH_MS * 1000000L};
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&c->write_lock);
        }
        int n = c->nqueued;
        memcpy(c->batch, c->queue, (size_t)n * sizeof *c->batch);
        c->nbatch = n;
        c->nqueued = 0;
        c->queued_bytes = 0;
        pthread_mutex_unlock(&c->write_lock);
        int failed = insert_batch(c, c->batch, n);
        pthread_mutex_lock(&c->write_lock);
        for (int i = 0; i < n; i++)
            free_queued(&c->batch[i]);
        c->nbatch = 0;
        (void)failed; /* noted in the database's write state by insert_batch */
    }
    pthread_mutex_unlock(&c->write_lock);
    return NULL;
}

cache_t *cache_create(store_t *store)
{
    cache_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->pending = calloc(HITS_PENDING_MAX, sizeof *c->pending);
    if (!c->pending) {
        free(c);
        return NULL;
    }
    c->store = store;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->hot_lock, NULL);
    pthread_mutex_init(&c->write_lock, NULL);
    pthread_cond_init(&c->write_wake, NULL);
    c->queue = calloc(WRITE_QUEUE_MAX, sizeof *c->queue);
    c->batch = calloc(WRITE_QUEUE_MAX, sizeof *c->batch);
    if (!c->queue || !c->batch || pthread_create(&c->writer, NULL, writer_main, c) != 0) {
        cache_free(c);
        return NULL;
    }
    c->writer_started = true;
    return c;
}

void cache_free(cache_t *c)
{
    if (!c)
        return;
    if (c->writer_started) { /* the writer empties the queue before it returns */
        pthread_mutex_lock(&c->write_lock);
        c->stopping = true;
        pthread_cond_signal(&c->write_wake);
        pthread_mutex_unlock(&c->write_lock);
        pthread_join(c->writer, NULL);
    }
    for (int i = 0; i < c->nqueued; i++)
        free_queued(&c->queue[i]);
    free(c->queue);
    free(c->batch);
    pthread_mutex_destroy(&c->write_lock);
    pthread_cond_destroy(&c->write_wake);
    cache_flush_hits(c);
    for (hot_entry_t *e = c->newest, *next; e; e = next) {
        next = e->older;
        free(e->response);
        free(e);
    }
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->hot_lock);
    free(c->pending);
    free(c);
}

static void hot_key(const char *endpoint, const char *body, size_t len,
                    unsigned char key[crypto_generichash_BYTES])
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, crypto_generichash_BYTES);
    crypto_generichash_update(&st, (const unsigned char *)endpoint, strlen(endpoint) + 1);
    crypto_generichash_update(&st, (const unsigned char *)body, len);
    crypto_generichash_final(&st, key, crypto_generichash_BYTES);
}

static size_t hot_bucket(const unsigned char *key)
{
    size_t b;
    memcpy(&b, key, sizeof b);
    return b & (HOT_BUCKETS - 1);
}

static void hot_unlink_lru(cache_t *c, hot_entry_t *e)
{
    if (e->newer)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void hot_push_newest(cache_t *c, hot_entry_t *e)
{
    e->older = c->newest;
    e->newer = NULL;
    if (c->newest)
        c->newest->newer = e;
    c->newest = e;
    if (!c->oldest)
        c->oldest = e;
}

static hot_entry_t *hot_find(cache_t *c, const unsigned char *key)
{
    for (hot_entry_t *e = c->buckets[hot_bucket(key)]; e; e = e->chain)
        if (memcmp(e->key, key, sizeof e->key) == 0)
            return e;
    return NULL;
}

static void hot_evict_oldest(cache_t *c)
{
    hot_entry_t *e = c->oldest;
    hot_entry_t **p = &c->buckets[hot_bucket(e->key)];
    while (*p != e)
        p = &(*p)->chain;
    *p = e->chain;
    hot_unlink_lru(c, e);
    c->hot_entries--;
    c->hot_bytes -= e->size;
    free(e->response);
    free(e);
}

int cache_hot_get(cache_t *c, const char *endpoint, const char *body, size_t len,
                  char hash[CODEC_HASH_HEX_LEN + 1], char **response)
{
    unsigned char key[crypto_generichash_BYTES];
    hot_key(endpoint, body, len, key);
    int found = 0;
    pthread_mutex_lock(&c->hot_lock);
    hot_entry_t *e = hot_find(c, key);
    if (e && (*response = malloc(e->size + 1)) != NULL) {
        memcpy(*response, e->response, e->size + 1);
        memcpy(hash, e->hash, CODEC_HASH_HEX_LEN + 1);
        hot_unlink_lru(c, e);
        hot_push_newest(c, e);
        found = 1;
    }
    pthread_mutex_unlock(&c->hot_lock);
    return found;
}

void cache_hot_put(cache_t *c, const char *endpoint, const char *body, size_t len,
                   const char *hash, const char *response)
{
    size_t size = strlen(response);
    if (size > HOT_MAX_BYTES / 16)
        return; /* a rare giant answer would push out everything else */
    hot_entry_t *e = calloc(1, sizeof *e);
    char *copy = malloc(size + 1);
    if (!e || !copy) {
        free(e);
        free(copy);
        return;
    }
    memcpy(copy, response, size + 1);
    hot_key(endpoint, body, len, e->key);
    snprintf(e->hash, sizeof e->hash, "%.64s", hash);
    e->response = copy;
    e->size = size;
    pthread_mutex_lock(&c->hot_lock);
    if (hot_find(c, e->key)) { /* another thread got there first */
        pthread_mutex_unlock(&c->hot_lock);
        free(copy);
        free(e);
        return;
    }
    while (c->oldest && (c->hot_entries >= HOT_MAX_ENTRIES || c->hot_bytes + size > HOT_MAX_BYTES))
        hot_evict_oldest(c);
    size_t b = hot_bucket(e->key);
    e->chain = c->buckets[b];
    c->buckets[b] = e;
    hot_push_newest(c, e);
    c->hot_entries++;
    c->hot_bytes += size;
    pthread_mutex_unlock(&c->hot_lock);
}

/* A result still in the write queue counts as stored: its link must work at once. */
static int copy_queued(const queued_result_t *q, cache_entry_t *out)
{
    memset(out, 0, sizeof *out);
    out->endpoint = strdup(q->endpoint);
    out->request = strdup(q->request);
    out->response = strdup(q->response);
    snprintf(out->created_at, sizeof out->created_at, "%s", q->created_at);
    if (out->endpoint && out->request && out->response)
        return 1;
    cache_entry_free(out);
    return -1;
}

static int get_queued(cache_t *c, const char *hash, cache_entry_t *out)
{
    int found = 0;
    pthread_mutex_lock(&c->write_lock);
    for (int i = 0; i < c->nqueued && !found; i++)
        if (strcmp(c->queue[i].hash, hash) == 0)
            found = copy_queued(&c->queue[i], out);
    for (int i = 0; i < c->nbatch && !found; i++)
        if (strcmp(c->batch[i].hash, hash) == 0)
            found = copy_queued(&c->batch[i], out);
    pthread_mutex_unlock(&c->write_lock);
    return found;
}

int cache_get(cache_t *cache, const char *hash, cache_entry_t *out)
{
    int queued = get_queued(cache, hash, out);
    if (queued)
        return queued;
    store_result_t row;
    fathom_error_t err;
    if (store_result_get(cache->store, hash, &row, &err))
        return err.code == FATHOM_E_NOT_FOUND ? 0 : -1;
    memset(out, 0, sizeof *out);
    out->endpoint = row.endpoint; /* ownership moves to out */
    out->request = row.request;
    out->response = row.response;
    memcpy(out->created_at, row.created_at, sizeof out->created_at);
    out->hit_count = row.hit_count;
    return 1;
}

void cache_count_hit(cache_t *c, const char *hash)
{
    int flush = 0;
    pthread_mutex_lock(&c->lock);
    int i;
    for (i = 0; i < c->npending; i++)
        if (strcmp(c->pending[i].hash, hash) == 0)
            break;
    if (i == c->npending && c->npending < HITS_PENDING_MAX) {
        snprintf(c->pending[i].hash, sizeof c->pending[i].hash, "%.64s", hash);
        c->pending[i].count = 0;
        c->npending++;
    }
    if (i < c->npending)
        c->pending[i].count++;
    flush = c->npending == HITS_PENDING_MAX;
    pthread_mutex_unlock(&c->lock);
    if (flush)
        cache_flush_hits(c);
}

int cache_flush_hits(cache_t *c)
{
    pthread_mutex_lock(&c->lock);
    int n = c->npending;
    pending_hit_t *batch = n ? malloc((size_t)n * sizeof *batch) : NULL;
    if (batch) {
        memcpy(batch, c->pending, (size_t)n * sizeof *batch);
        c->npending = 0;
    }
    pthread_mutex_unlock(&c->lock);
    if (!batch)
        return n ? -1 : 0;

    char now[32];
    store_now_iso(now);
    store_hit_t *hits = malloc((size_t)n * sizeof *hits);
    int rc = -1;
    if (hits) {
        for (int i = 0; i < n; i++)
            hits[i] = (store_hit_t){batch[i].hash, now, batch[i].count};
        fathom_error_t err;
        rc = store_results_hit(c->store, hits, n, &err);
        free(hits);
    }
    free(batch);
    /* Counts that could not be written (read-only or full disk) are dropped: they are
     * statistics, and keeping them would grow without bound while the fault lasts. */
    return rc;
}

int cache_put(cache_t *c, const char *hash, const char *endpoint, const char *request,
              const char *response)
{
    queued_result_t q;
    memset(&q, 0, sizeof q);
    snprintf(q.hash, sizeof q.hash, "%.64s", hash);
    store_now_iso(q.created_at);
    q.endpoint = strdup(endpoint);
    q.request = strdup(request);
    q.response = strdup(response);
    q.bytes = strlen(request) + strlen(response);
    if (!q.endpoint || !q.request || !q.response) {
        free_queued(&q);
        return -1;
    }
    if (store_writes_failing(c->store)) {
        /* The last write failed (full disk, read-only file): try this one now, so the caller
         * knows whether it is stored; queueing resumes once a write succeeds. */
        int rc = insert_batch(c, &q, 1);
        free_queued(&q);
        return rc;
    }
    pthread_mutex_lock(&c->write_lock);
    if (c->nqueued == WRITE_QUEUE_MAX || c->queued_bytes + q.bytes > WRITE_QUEUE_MAX_BYTES) {
        pthread_mutex_unlock(&c->write_lock);
        free_queued(&q);
        return -1;
    }
    c->queue[c->nqueued++] = q;
    c->queued_bytes += q.bytes;
    pthread_cond_signal(&c->write_wake);
    pthread_mutex_unlock(&c->write_lock);
    return 0;
}

void cache_entry_free(cache_entry_t *e)
{
    free(e->endpoint);
    free(e->request);
    free(e->response);
    e->endpoint = e->request = e->response = NULL;
}
