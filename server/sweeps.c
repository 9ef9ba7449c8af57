/* sweeps.c — the sweep scheduler: runs the units of every kind of sweep on the libuv worker
 * pool and checkpoints them through the store. It knows no kind by name: a job holds its kind's
 * row of the sweep-kind table (codec/sweep_kind.h) and calls it to open the spec, run a unit,
 * merge, checkpoint and make the result. (What HTTP threads ask of sweeps — submit, status,
 * cancel, lists — is in sweep_views.c; result downloads in sweep_results.c.)
 *
 * DESIGN (the worker pool's contract).
 * - Ownership. The store owns a sweep: its row is created by POST /v1/sweep (HTTP thread) as
 *   'queued', and only the loop thread claims it (running), checkpoints it and finishes it. The
 *   in-memory job_t (loop thread) is a cache of that row plus the work in flight; it can be
 *   thrown away at any moment and rebuilt from the row.
 * - Work. A sweep is cut into units by its kind (a search's work units, 64 grid points, one
 *   candidate of a plan). The loop thread queues one uv_work_t per unit on libuv's pool (UV_THREADPOOL_SIZE =
 *   --workers, set by main before any thread starts), at most --workers at a time across all
 *   sweeps, oldest sweep first. If uv_queue_work fails the callbacks never run and the unit stays
 *   undispatched. The work function runs on a pool thread, touches only its chunk and the
 *   read-only opened spec (the kind's run), and returns nothing: a refused grid point is a
 *   result, and a unit that failed says so in its chunk (`failed`, with its error). Completion
 *   (after_work) runs on the loop thread.
 * - Failure. A unit fails when its kind's run_unit says so (out of memory), or when any
 *   allocation on its thread failed while it ran (alloc_guard.h: the codecs cannot always tell
 *   running out of memory from a bad field). A failed unit is never merged and never counted
 *   done: it is queued again (at most UNIT_RETRIES times in a row; then the sweep fails, its
 *   error the unit's error object). A checkpoint is written whole
 *   or not at all: when memory runs out encoding it, it is tried again RETRY_MS later (so are
 *   starting a job, queueing a unit, merging and finishing); when the store refuses it (a full
 *   disk) the job is dropped and the row, still 'running' at its last checkpoint, resumes on the
 *   next start. So `done` always counts units whose every point is stored.
 * - Order and durability. Units finish in any order; the loop thread merges them strictly in
 *   unit order, and a checkpoint (store_sweep_checkpoint: one transaction) writes the merged
 *   units' points (a kind that keeps points) or its merged state as the kind encodes it (a kind
 *   that keeps a state), together with `done` and the evaluations so far — at most every
 *   CHECKPOINT_MS, when PENDING_MAX_BYTES of points wait, and at the end. After a crash the
 *   sweep resumes at `done` with the evaluations counted so far and, merging in unit order
 *   deterministically, ends with the same results and counts. Finishing (the result document, status done) is a second step after the last
 *   checkpoint; a sweep found with every unit done but not finished is finished on resume.
 * - Cancel. DELETE sets the row to 'cancelled' (HTTP thread, one store call) and raises the
 *   job's cancel flag; a running unit polls it every 4096 executions (or every grid point) and
 *   stops within milliseconds. No unit ever waits in the pool's queue (at most --workers are
 *   queued, one per pool thread), so there is nothing to uv_cancel: the job goes when its
 *   running units return. A checkpoint only applies while the row is 'running', so a cancelled
 *   sweep is never written again.
 * - Replicas. On a shared store (store_shared: PostgreSQL) other fathomd processes run sweeps
 *   too. A sweep is claimed with a lease (store.h); every POLL_MS the loop thread renews the
 *   lease of each job it runs and drops a job whose sweep is no longer running here (cancelled
 *   through another replica, or taken over after this one stalled past its lease) — its units
 *   stop as on a local cancel — then looks for pending sweeps: submitted elsewhere, or left by a
 *   replica that died (its lease lapsed; the sweep resumes at its last checkpoint). A job whose
 *   checkpoint failed because the database was unreachable is dropped as on a full disk, and the
 *   poll claims it again (still ours) once the database answers. On SQLite nothing polls.
 * - Helping (shared store, kinds that keep a state: a search). A replica whose workers would
 *   otherwise idle claims single units of such a sweep another replica owns, from the end of its unit range
 *   (store_unit_help), runs them in a helper job (s->helps, never in s->jobs: no checkpoint, no
 *   finish) and stores each unit's state as its kind encodes it (store_unit_finish), renewing
 *   the units' leases at
 *   every poll. The owner claims each unit before dispatching it (next_unit); a unit held
 *   elsewhere is marked remote and, when the in-order merge reaches it, its stored result is
 *   decoded and merged like a local chunk (fetch_remote), so merging stays in unit order and
 *   the result is identical. A remote unit whose lease lapsed (its helper died) is claimed back
 *   and run here.
 * - Shutdown. sweeps_begin_shutdown raises every job's cancel flag without touching the rows:
 *   running units stop, finished ones are checkpointed, rows stay 'running', and the next start
 *   resumes them. On a shared store each job's lease is released after its last checkpoint, so
 *   another replica resumes the sweep at once.
 * - Threads and atomics. The loop thread owns every job_t field except `cancel` (written by HTTP
 *   threads and the loop, read by pool threads) and the jobs list links (read by HTTP threads
 *   under s->lock to find a job to cancel). Flags crossing threads use one idiom, the __atomic
 *   builtins on plain ints (core's search_run_unit polls `volatile int *cancel`).
 *   Lock order: s->lock is a leaf — nothing else (no store call, no log) is called while it is
 *   held. */
#include "sweeps.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_guard.h"
#include "canonical.h"
#include "error_codec.h"
#include "log.h"
#include "metrics.h"
#include "sweeps_internal.h"

#define CHECKPOINT_MS 500
/* Merged points waiting for their checkpoint are written once they pass this size, so a fast
 * sweep's memory stays bounded whatever its size. */
#define PENDING_MAX_BYTES (4u * 1024 * 1024)
/* A unit that fails this many times in a row fails its sweep. */
#define UNIT_RETRIES 3
/* After a step of the loop thread ran out of memory (starting a job, queueing a unit, merging,
 * a checkpoint or finishing), it is tried again this much later. */
#define RETRY_MS 100
/* On a shared store: how often leases are renewed and pending sweeps looked for (well inside
 * the store's lease, so a live replica never loses one). */
#define POLL_MS 1000

typedef struct chunk chunk_t;

typedef struct job {
    char id[CODEC_HASH_HEX_LEN + 1];
    const sweep_kind_t *kind;
    json_t *spec;
    sweep_run_t *run;       /* the kind's opened spec: read-only while units run */
    sweep_state_t *merged;  /* a kind that keeps a state: units [0, next_merge) */
    size_t total_units, next_dispatch, next_merge, committed;
    chunk_t **ready;        /* finished units waiting for their turn to merge */
    size_t *retry;          /* failed units to run again (at most --workers at a time) */
    size_t nretry;
    int failures;           /* consecutive failed units */
    sweep_point_t *pending; /* a kind that keeps points: merged points not yet checkpointed */
    size_t npending, pending_cap, pending_bytes;
    uint64_t evaluations;   /* of units [0, next_merge), the checkpoint's before a restart */
    volatile int cancel;    /* __atomic: written by HTTP and loop threads, read by pool threads */
    int inflight;
    bool dropped;           /* cancelled, failed or finished: never written again */
    uint64_t last_commit_ms;
    /* Shared store, kinds that keep a state. Owner: remote[u] is set when another replica holds
     * unit u (its result is read from the store when the merge reaches it). Helper (a job that
     * runs units of another replica's sweep): busy lists the units in flight, to renew their
     * leases. */
    unsigned char *remote;
    bool helper, used;
    size_t *busy;
    int nbusy;
    struct job *next;
} job_t;

struct chunk {
    uv_work_t req;
    sweeps_t *s;
    job_t *job;
    size_t unit;
    bool cancelled, failed;
    fathom_error_t err; /* why it failed */
    sweep_unit_t out;   /* what it made: its state (kept in a fresh one) or its points */
};

struct sweeps {
    server_t *srv;
    uv_loop_t *loop;
    uv_async_t wake;
    bool wake_open;
    uv_timer_t retry; /* armed after a step ran out of memory: see RETRY_MS */
    bool retry_open;
    uv_timer_t poll;  /* shared store only: see POLL_MS */
    bool poll_open;
    pthread_mutex_t lock; /* guards the jobs list's links against HTTP-thread lookups (a leaf) */
    job_t *jobs;
    job_t *helps; /* shared store: helper jobs (loop thread only) */
    int inflight;
    int stopping; /* __atomic: written by the loop thread, read by HTTP threads */
    sweep_limits_t limits;
};

static int job_cancelled(const job_t *j)
{
    return __atomic_load_n(&j->cancel, __ATOMIC_RELAXED);
}

static void job_set_cancel(job_t *j)
{
    __atomic_store_n(&j->cancel, 1, __ATOMIC_RELAXED);
}

static bool keeps_state(const job_t *j)
{
    return j->kind->keeps == SWEEP_KEEPS_STATE;
}

/* ------------------------------------------------------- the store as a points reader ---- */

static int store_page(void *self, long long first, long long max, sweep_point_fn fn, void *ctx,
                      fathom_error_t *err)
{
    const sweeps_points_at_t *at = self;
    return store_points_page(at->store, at->id, first, max, fn, ctx, err);
}

static int store_best(void *self, int top_n, sweep_point_fn fn, void *ctx, long long *stored,
                      long long *good, fathom_error_t *err)
{
    const sweeps_points_at_t *at = self;
    return store_points_best(at->store, at->id, top_n, fn, ctx, stored, good, err);
}

sweep_points_t sweeps__points(sweeps_points_at_t *at)
{
    return (sweep_points_t){at, store_page, store_best};
}

/* ---------------------------------------------------------------- loop thread: jobs ---- */

static void chunk_free(chunk_t *ch)
{
    if (ch->out.state)
        ch->job->kind->state_free(ch->out.state);
    sweep_points_free(ch->out.points, ch->out.npoints);
    free(ch);
}

static void job_free(job_t *j)
{
    if (!j)
        return;
    for (size_t u = 0; j->ready && u < j->total_units; u++)
        if (j->ready[u])
            chunk_free(j->ready[u]);
    free(j->ready);
    free(j->retry);
    free(j->remote);
    free(j->busy);
    if (j->merged)
        j->kind->state_free(j->merged);
    if (j->run)
        j->kind->close(j->run);
    json_decref(j->spec);
    sweep_points_free(j->pending, j->npending);
    free(j);
}

static void job_remove(sweeps_t *s, job_t *j)
{
    /* Shutting down with the sweep still ours and checkpointed: hand it over now rather than
     * when the lease lapses (a node drain, a rolling update). */
    if (__atomic_load_n(&s->stopping, __ATOMIC_RELAXED) && !j->dropped &&
        store_shared(s->srv->store)) {
        fathom_error_t err;
        if (store_sweep_release(s->srv->store, j->id, &err))
            log_msg(LOG_WARN, "sweep %s: lease not released (%s); it lapses", j->id, err.message);
    }
    pthread_mutex_lock(&s->lock);
    for (job_t **p = &s->jobs; *p; p = &(*p)->next) {
        if (*p == j) {
            *p = j->next;
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    job_free(j);
}

/* Records a sweep's failure: its error object, as every other error is shown. */
static void mark_failed(sweeps_t *s, const char *id, const fathom_error_t *why)
{
    json_t *e = codec_error_encode(why);
    char *text = e ? json_dumps(e, JSON_COMPACT) : NULL;
    fathom_error_t err;
    if (store_sweep_fail(s->srv->store, id,
                         text ? text : "{\"code\":\"internal\",\"message\":\"out of memory\"}",
                         &err))
        log_msg(LOG_WARN, "sweep %s: cannot record its failure: %s", id, err.message);
    log_event(LOG_WARN, "sweep failed",
              json_pack("{s:s,s:s,s:s}", "sweep", id, "code", fathom_code_name(why->code),
                        "error", why->message));
    free(text);
    json_decref(e);
}

static void schedule_retry(sweeps_t *s);

/* The loop thread's steps return 0, or -1 with err; err's code says what follows: internal
 * (memory ran out: the step is tried again RETRY_MS later), anything else (the stored data or
 * the store is at fault). A step that failed while an allocation failed unseen in the codec
 * (alloc_guard.h) counts as out of memory: -1 with err made internal. */
static int failed(fathom_error_t *err)
{
    if (alloc_guard_take() && err->code != FATHOM_E_INTERNAL)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory (%s)", err->message);
    return -1;
}

static int out_of_memory(fathom_error_t *err)
{
    return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
}

/* Opens a stored sweep's spec through its kind (for a job or a helper job). 0, or -1 with err
 * (internal: try again later; else the stored sweep does not open). */
static int job_open(sweeps_t *s, job_t *j, const char *kind, const char *spec, fathom_error_t *err)
{
    const codec_ctx_t ctx = {s->srv->presets};
    json_error_t jerr;
    if (!(j->kind = sweep_kind_by_name(kind)))
        return fathom_error_set(err, FATHOM_E_INVALID_JSON, NULL,
                                "a stored sweep of a kind this fathomd does not know ('%s')",
                                kind);
    alloc_guard_take();
    j->spec = spec ? json_loads(spec, 0, &jerr) : NULL;
    if (!j->spec) {
        if (spec && json_error_code(&jerr) == json_error_out_of_memory)
            return out_of_memory(err);
        return fathom_error_set(err, FATHOM_E_INVALID_JSON, NULL, "stored spec is not JSON");
    }
    if (!(j->run = j->kind->open(j->spec, &ctx, err)))
        return failed(err);
    j->total_units = j->kind->units(j->run);
    if (keeps_state(j) && !(j->merged = j->kind->state_new(j->run, err)))
        return failed(err);
    return 0;
}

/* Builds a job for a pending row and claims the row. NULL (row failed) on a bad spec; NULL
 * (row left as it is) when it cannot be claimed now. */
static job_t *job_start(sweeps_t *s, const store_sweep_t *row)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    job_t *j = calloc(1, sizeof *j);
    if (!j)
        return NULL; /* out of memory: the row stays queued and is tried again */
    snprintf(j->id, sizeof j->id, "%s", row->id);
    int rc = job_open(s, j, row->kind, row->spec, &err);
    if (rc == 0 && (row->done < 0 || (size_t)row->done > j->total_units))
        rc = fathom_error_set(&err, FATHOM_E_INVALID_JSON, NULL, "stored progress is out of range");
    if (rc == 0) {
        j->next_dispatch = j->next_merge = j->committed = (size_t)row->done;
        /* The checkpoint's evaluations: a resumed sweep counts the whole run's. */
        j->evaluations = row->evaluations > 0 ? (uint64_t)row->evaluations : 0;
        if (j->merged && row->state && row->done > 0 &&
            j->kind->decode_state(j->run, row->state, row->sample, j->merged, &err))
            rc = failed(&err);
    }
    if (rc == 0) {
        j->ready = calloc(j->total_units ? j->total_units : 1, sizeof *j->ready);
        /* failed units (one per worker) and a unit taken back from a helper that died */
        j->retry = calloc((size_t)s->srv->cfg.workers + 1, sizeof *j->retry);
        if (!j->ready || !j->retry)
            rc = out_of_memory(&err);
        else if (keeps_state(j) && store_shared(s->srv->store) &&
                 !(j->remote = calloc(j->total_units ? j->total_units : 1, sizeof *j->remote)))
            rc = out_of_memory(&err);
    }
    if (rc == 0 && store_sweep_claim(s->srv->store, row->id, (long long)j->total_units, &err)) {
        /* cancelled meanwhile, or the store is not writable: looked at again on the next
         * wake-up (a submission, a completion) */
        job_free(j);
        return NULL;
    }
    if (rc) {
        /* Out of memory is not the row's fault: it stays queued. Anything else is (stored
         * data that no longer decodes), and the sweep fails. */
        if (err.code == FATHOM_E_INTERNAL)
            schedule_retry(s);
        else
            mark_failed(s, row->id, &err);
        job_free(j);
        return NULL;
    }
    j->last_commit_ms = uv_now(s->loop);
    log_event(LOG_INFO, row->done ? "sweep resumed" : "sweep started",
              json_pack("{s:s,s:s,s:I,s:I}", "sweep", row->id, "kind", row->kind, "units",
                        (json_int_t)j->total_units, "done", (json_int_t)row->done));
    return j;
}

/* Writes the merged, not yet checkpointed part of j in one store transaction. 0, or -1 with
 * err: internal when memory ran out before anything was written (tried again later), else the
 * row is no longer running (cancelled) or the store refused the write (the job is dropped). */
static int checkpoint(sweeps_t *s, job_t *j, fathom_error_t *err)
{
    fathom_error_clear(err);
    char *state = NULL, *sample = NULL;
    int rc = -1;
    if (j->merged && j->kind->encode_state(j->run, j->merged, &state, &sample, err))
        goto out; /* only memory can fail */
    store_checkpoint_t cp = {j->id,      (long long)j->next_merge, (long long)j->evaluations,
                             j->pending, j->npending,              state,
                             sample};
    rc = store_sweep_checkpoint(s->srv->store, &cp, err);
    if (rc == 0) {
        sweep_points_free(j->pending, j->npending);
        j->pending = NULL;
        j->npending = j->pending_cap = j->pending_bytes = 0;
        j->committed = j->next_merge;
    }
out:
    free(state);
    free(sample);
    j->last_commit_ms = uv_now(s->loop);
    if (rc && err->code == FATHOM_E_INTERNAL)
        schedule_retry(s);
    else if (rc)
        log_event(LOG_WARN, "sweep checkpoint not written; dropping the job (it resumes from its "
                            "last checkpoint on the next start unless cancelled)",
                  json_pack("{s:s,s:s}", "sweep", j->id, "error", err->message));
    return rc;
}

/* Records the finished sweep's result document. 0, or -1 with err: internal when memory ran
 * out (tried again later), else the store refused (finished on the next start). */
static int finish(sweeps_t *s, job_t *j, fathom_error_t *err)
{
    fathom_error_clear(err);
    sweeps_points_at_t at = {s->srv->store, j->id};
    sweep_points_t pts = sweeps__points(&at);
    json_t *res = j->kind->result(j->run, j->merged, &pts, SWEEP_RESULT_FINAL, err);
    char *text = res ? json_dumps(res, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(res);
    int rc = -1;
    if (!text)
        fathom_error_set(err, err->code ? err->code : FATHOM_E_INTERNAL, NULL, "%s",
                         err->message[0] ? err->message : "out of memory encoding the result");
    else
        rc = store_sweep_finish(s->srv->store, j->id, text, err);
    free(text);
    if (rc && err->code == FATHOM_E_INTERNAL)
        schedule_retry(s);
    else if (rc == 0)
        log_event(LOG_INFO, "sweep done", json_pack("{s:s,s:I}", "sweep", j->id, "evaluations",
                                                    (json_int_t)j->evaluations));
    else
        log_event(LOG_WARN, "sweep not finished (it is finished on the next start)",
                  json_pack("{s:s,s:s}", "sweep", j->id, "error", err->message));
    return rc;
}

/* ------------------------------------------------------------ pool threads: the work ---- */

/* Runs one unit through its kind. A kind that keeps a state runs it into a fresh one (merged on
 * the loop thread in unit order). */
static void work(uv_work_t *req)
{
    chunk_t *ch = req->data;
    job_t *j = ch->job;
    const codec_ctx_t ctx = {ch->s->srv->presets};
    metrics_worker_busy(ch->s->srv->metrics, 1);
    fathom_error_clear(&ch->err);
    alloc_guard_take(); /* forget failures of earlier work on this thread */
    int rc = -1;
    if (!keeps_state(j) || (ch->out.state = j->kind->state_new(j->run, &ch->err)))
        rc = j->kind->run_unit(j->run, &ctx, ch->unit, &j->cancel, &ch->out, &ch->err);
    ch->cancelled = rc && ch->err.code == FATHOM_E_CANCELLED;
    /* An allocation that failed anywhere in the unit may have changed its answer (a member left
     * out reads as a field error): such a unit is not stored, it runs again. */
    if (alloc_guard_take() && !ch->cancelled)
        rc = fathom_error_set(&ch->err, FATHOM_E_INTERNAL, NULL, "out of memory running a unit");
    ch->failed = rc && !ch->cancelled;
    metrics_worker_busy(ch->s->srv->metrics, -1);
}

/* ------------------------------------------------------- loop thread: scheduling ---- */

static void after_work(uv_work_t *req, int status);
static void load_pending(sweeps_t *s);
static void on_retry(uv_timer_t *t);

/* ---------------------------------------- loop thread: helping other replicas ---- */

/* The helper job for sweep id (another replica's sweep of `kind`), made from its spec when new. */
static job_t *helper_job(sweeps_t *s, const char *id, const char *kind, const char *spec)
{
    for (job_t *j = s->helps; j; j = j->next)
        if (strcmp(j->id, id) == 0)
            return j;
    job_t *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    snprintf(j->id, sizeof j->id, "%s", id);
    j->helper = true;
    fathom_error_t err;
    j->busy = calloc((size_t)s->srv->cfg.workers, sizeof *j->busy);
    if (!j->busy || job_open(s, j, kind, spec, &err)) {
        job_free(j);
        return NULL;
    }
    j->next = s->helps;
    s->helps = j;
    return j;
}

static void helper_unlink(sweeps_t *s, job_t *j)
{
    for (job_t **p = &s->helps; *p; p = &(*p)->next) {
        if (*p == j) {
            *p = j->next;
            break;
        }
    }
    job_free(j);
}

/* Claims a unit of another replica's sweep of a kind whose units travel (one that keeps a
 * state). 0 with *h; -1 when there is none. */
static int claim_help(sweeps_t *s, store_unit_help_t *h, const sweep_kind_t **kind)
{
    size_t n;
    const sweep_kind_t *const *kinds = sweep_kinds(&n);
    for (size_t i = 0; i < n; i++) {
        fathom_error_t err;
        if (kinds[i]->keeps == SWEEP_KEEPS_STATE &&
            store_unit_help(s->srv->store, kinds[i]->name, h, &err) == 0) {
            *kind = kinds[i];
            return 0;
        }
    }
    return -1;
}

/* Free workers, and no sweep of this replica's own to run: claim units of sweeps other
 * replicas own, from the end of their range. */
static void help(sweeps_t *s)
{
    while (s->inflight < s->srv->cfg.workers &&
           !__atomic_load_n(&s->stopping, __ATOMIC_RELAXED)) {
        store_unit_help_t h;
        const sweep_kind_t *kind;
        if (claim_help(s, &h, &kind))
            return; /* nothing to help with (its claim lapses if it was a failure after it) */
        job_t *j = helper_job(s, h.id, kind->name, h.spec);
        free(h.spec);
        if (!j || h.unit < 0 || (size_t)h.unit >= j->total_units ||
            j->nbusy >= s->srv->cfg.workers)
            return; /* the claim lapses and the unit is claimed again */
        chunk_t *ch = calloc(1, sizeof *ch);
        if (!ch)
            return;
        ch->s = s;
        ch->job = j;
        ch->unit = (size_t)h.unit;
        ch->req.data = ch;
        if (uv_queue_work(s->loop, &ch->req, work, after_work) != 0) {
            free(ch);
            return;
        }
        j->busy[j->nbusy++] = ch->unit;
        j->used = true;
        j->inflight++;
        s->inflight++;
    }
}

/* A helper's unit returned: its state is stored for the owner (unless it was stopped). */
static void helper_done(sweeps_t *s, chunk_t *ch, int status)
{
    job_t *j = ch->job;
    for (int i = 0; i < j->nbusy; i++) {
        if (j->busy[i] == ch->unit) {
            j->busy[i] = j->busy[--j->nbusy];
            break;
        }
    }
    bool stopping = __atomic_load_n(&s->stopping, __ATOMIC_RELAXED);
    if (status != UV_ECANCELED && !ch->cancelled && !ch->failed && !stopping) {
        char *state = NULL, *sample = NULL;
        fathom_error_t err;
        if (j->kind->encode_state(j->run, ch->out.state, &state, &sample, &err))
            log_msg(LOG_WARN, "sweep %s: out of memory storing unit %zu; its claim lapses", j->id,
                    ch->unit);
        else if (store_unit_finish(s->srv->store, j->id, (long long)ch->unit, state, sample,
                                   (long long)ch->out.evaluations, &err))
            log_msg(LOG_INFO, "sweep %s: unit %zu not stored (%s)", j->id, ch->unit,
                    err.message);
        free(state);
        free(sample);
    }
    chunk_free(ch);
    if (stopping && j->inflight == 0)
        helper_unlink(s, j);
}

/* The next unit of j to run: a failed one first, else the next in order. On a shared store a
 * unit of a kind that keeps a state is claimed first; units other replicas hold are skipped
 * (merged from the store when their turn comes). */
static bool next_unit(sweeps_t *s, job_t *j, size_t *unit)
{
    if (j->nretry) {
        *unit = j->retry[--j->nretry];
        return true;
    }
    while (j->next_dispatch < j->total_units) {
        if (j->remote) {
            bool claimed = false;
            fathom_error_t err;
            if (store_unit_claim(s->srv->store, j->id, (long long)j->next_dispatch, &claimed,
                                 &err))
                return false; /* the database is away: tried again at the next poll */
            if (!claimed) {
                j->remote[j->next_dispatch++] = 1;
                continue;
            }
        }
        *unit = j->next_dispatch++;
        return true;
    }
    return false;
}

static bool job_has_work(const job_t *j)
{
    return !j->dropped && !job_cancelled(j) && (j->nretry || j->next_dispatch < j->total_units);
}

/* Queues units of the oldest jobs on free workers. */
static void fill(sweeps_t *s)
{
    for (job_t *j = s->jobs; j && s->inflight < s->srv->cfg.workers; j = j->next) {
        while (job_has_work(j) && s->inflight < s->srv->cfg.workers) {
            chunk_t *ch = calloc(1, sizeof *ch);
            if (!ch) {
                schedule_retry(s);
                return;
            }
            size_t unit = 0;
            if (!next_unit(s, j, &unit)) {
                free(ch);
                break;
            }
            ch->s = s;
            ch->job = j;
            ch->unit = unit;
            ch->req.data = ch;
            if (uv_queue_work(s->loop, &ch->req, work, after_work) != 0) {
                j->retry[j->nretry++] = unit; /* never started: after_work will not run */
                free(ch);
                schedule_retry(s);
                return;
            }
            j->inflight++;
            s->inflight++;
        }
    }
}

static void dispatch(sweeps_t *s)
{
    if (__atomic_load_n(&s->stopping, __ATOMIC_RELAXED))
        return;
    fill(s);
    if (s->inflight < s->srv->cfg.workers) {
        load_pending(s);
        fill(s);
    }
    if (s->inflight < s->srv->cfg.workers && store_shared(s->srv->store))
        help(s);
}

/* Moves a merged chunk's points to the job's pending list. -1 when memory ran out (the chunk
 * keeps its points). */
static int take_points(job_t *j, chunk_t *ch)
{
    sweep_unit_t *out = &ch->out;
    if (j->npending + out->npoints > j->pending_cap) {
        size_t cap = j->pending_cap ? j->pending_cap : 256;
        while (cap < j->npending + out->npoints)
            cap *= 2;
        sweep_point_t *grown = realloc(j->pending, cap * sizeof *grown);
        if (!grown)
            return -1;
        j->pending = grown;
        j->pending_cap = cap;
    }
    for (size_t i = 0; i < out->npoints; i++) {
        j->pending_bytes += strlen(out->points[i].values) + strlen(out->points[i].response);
        j->pending[j->npending++] = out->points[i];
    }
    free(out->points);
    out->points = NULL;
    out->npoints = 0;
    return 0;
}

static void drop_job(job_t *j)
{
    j->dropped = true;
    job_set_cancel(j);
}

/* Unit u of j is held by another replica: its stored state as a ready chunk when it is stored
 * (1); 0 while it runs there, or when it was taken back here (its holder's lease lapsed: it is
 * queued to run here) or cannot be read now. */
static int fetch_remote(sweeps_t *s, job_t *j, size_t u)
{
    fathom_error_t err;
    bool done = false;
    char *state = NULL, *sample = NULL;
    long long evaluations = 0;
    if (store_unit_result(s->srv->store, j->id, (long long)u, &done, &state, &sample,
                          &evaluations, &err))
        return 0;
    if (!done) {
        bool claimed = false;
        if (j->nretry <= (size_t)s->srv->cfg.workers &&
            store_unit_claim(s->srv->store, j->id, (long long)u, &claimed, &err) == 0 &&
            claimed) {
            log_event(LOG_INFO, "sweep unit taken back (its replica stopped renewing it)",
                      json_pack("{s:s,s:I}", "sweep", j->id, "unit", (json_int_t)u));
            j->remote[u] = 0;
            j->retry[j->nretry++] = u;
        } else if (j->inflight == 0) {
            schedule_retry(s); /* nothing here will call advance: look again shortly */
        }
        return 0;
    }
    chunk_t *ch = calloc(1, sizeof *ch);
    int rc = 0;
    alloc_guard_take();
    if (ch) {
        ch->s = s;
        ch->job = j;
        ch->unit = u;
    }
    if (ch && (ch->out.state = j->kind->state_new(j->run, &err)) != NULL) {
        if (j->kind->decode_state(j->run, state, sample, ch->out.state, &err) == 0 &&
            !alloc_guard_take()) {
            ch->out.evaluations = evaluations > 0 ? (uint64_t)evaluations : 0;
            j->ready[u] = ch;
            j->remote[u] = 0;
            ch = NULL;
            rc = 1;
        } else if (failed(&err) && err.code != FATHOM_E_INTERNAL &&
                   j->nretry <= (size_t)s->srv->cfg.workers) {
            log_msg(LOG_WARN, "sweep %s: unit %zu's stored result is unreadable (%s); running it "
                              "here", j->id, u, err.message);
            j->remote[u] = 0;
            j->retry[j->nretry++] = u;
        } else {
            schedule_retry(s); /* out of memory: read again later */
        }
    } else {
        schedule_retry(s);
    }
    if (ch)
        chunk_free(ch);
    free(state);
    free(sample);
    return rc;
}

/* Merges finished units in order; checkpoints when due; finishes when every unit is stored. */
static void advance(sweeps_t *s, job_t *j)
{
    while (j->next_merge < j->total_units &&
           (j->ready[j->next_merge] ||
            (j->remote && j->remote[j->next_merge] && fetch_remote(s, j, j->next_merge)))) {
        chunk_t *ch = j->ready[j->next_merge];
        if (keeps_state(j)) {
            j->kind->merge(j->run, j->merged, ch->out.state);
        } else if (take_points(j, ch)) {
            schedule_retry(s); /* out of memory: merged later */
            break;
        }
        j->ready[j->next_merge] = NULL;
        j->evaluations += ch->out.evaluations;
        metrics_evaluations(s->srv->metrics, ch->out.evaluations);
        chunk_free(ch);
        j->next_merge++;
    }
    bool stopping = __atomic_load_n(&s->stopping, __ATOMIC_RELAXED);
    bool final = j->next_merge == j->total_units;
    bool due = uv_now(s->loop) - j->last_commit_ms >= CHECKPOINT_MS ||
               j->pending_bytes >= PENDING_MAX_BYTES;
    fathom_error_t err;
    if (j->next_merge > j->committed && (final || due || stopping) && checkpoint(s, j, &err)) {
        if (err.code != FATHOM_E_INTERNAL)
            drop_job(j);
        return;
    }
    if (final && j->committed == j->total_units && !j->dropped &&
        (finish(s, j, &err) == 0 || err.code != FATHOM_E_INTERNAL))
        j->dropped = true; /* done (or finished on the next start): nothing more to run */
}

static void after_work(uv_work_t *req, int status)
{
    chunk_t *ch = req->data;
    sweeps_t *s = ch->s;
    job_t *j = ch->job;
    s->inflight--;
    j->inflight--;
    if (j->helper) {
        helper_done(s, ch, status);
        dispatch(s);
        return;
    }
    if (status == UV_ECANCELED || ch->cancelled || j->dropped) {
        chunk_free(ch);
    } else if (ch->failed) {
        size_t unit = ch->unit;
        fathom_error_t why = ch->err;
        chunk_free(ch);
        if (++j->failures > UNIT_RETRIES) {
            mark_failed(s, j->id, &why);
            drop_job(j);
        } else {
            log_msg(LOG_WARN, "sweep %s: unit %zu failed (%s); running it again", j->id, unit,
                    why.message);
            j->retry[j->nretry++] = unit;
        }
    } else {
        j->failures = 0;
        j->ready[ch->unit] = ch;
        advance(s, j);
    }
    bool stopping = __atomic_load_n(&s->stopping, __ATOMIC_RELAXED);
    if (j->inflight == 0 && (j->dropped || stopping || job_cancelled(j))) {
        if (stopping && !j->dropped && j->next_merge > j->committed)
            checkpoint(s, j, &(fathom_error_t){0});
        job_remove(s, j);
    }
    dispatch(s);
}

static bool job_known(sweeps_t *s, const char *id)
{
    for (job_t *j = s->jobs; j; j = j->next)
        if (strcmp(j->id, id) == 0)
            return true;
    return false;
}

typedef struct {
    sweeps_t *s;
    bool busy; /* some job still has units to hand out */
} pending_walk_t;

/* Starts one pending row not yet in memory. A queued sweep starts (turns 'running') only when
 * the workers would otherwise run out of units, so 'queued' in the store means waiting, and the
 * queue limit counts waiters. */
static int start_pending(void *ctx, const store_sweep_t *row)
{
    pending_walk_t *w = ctx;
    sweeps_t *s = w->s;
    if (__atomic_load_n(&s->stopping, __ATOMIC_RELAXED))
        return 1;
    if (job_known(s, row->id) || (row->status == STORE_SWEEP_QUEUED && w->busy))
        return 0;
    job_t *j = job_start(s, row);
    if (!j)
        return 0;
    if (job_has_work(j))
        w->busy = true;
    pthread_mutex_lock(&s->lock);
    job_t **tail = &s->jobs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = j;
    pthread_mutex_unlock(&s->lock);
    if (j->next_merge == j->total_units)
        advance(s, j); /* nothing left to run: finish it now */
    if (j->dropped && j->inflight == 0)
        job_remove(s, j);
    return 0;
}

/* Loads queued and interrupted sweeps from the store and starts any not yet in memory. */
static void load_pending(sweeps_t *s)
{
    pending_walk_t w = {s, false};
    for (job_t *j = s->jobs; j; j = j->next)
        if (job_has_work(j))
            w.busy = true;
    fathom_error_t err;
    if (store_sweep_pending(s->srv->store, start_pending, &w, &err))
        log_msg(LOG_WARN, "cannot read pending sweeps: %s", err.message);
}

static void schedule_retry(sweeps_t *s)
{
    if (s->retry_open && !uv_is_active((uv_handle_t *)&s->retry))
        uv_timer_start(&s->retry, on_retry, RETRY_MS, 0);
}

/* A step ran out of memory RETRY_MS ago: merge, checkpoint or finish what waits, then queue
 * units and start sweeps again. */
static void on_retry(uv_timer_t *t)
{
    sweeps_t *s = t->data;
    if (__atomic_load_n(&s->stopping, __ATOMIC_RELAXED))
        return;
    for (job_t *j = s->jobs, *next; j; j = next) {
        next = j->next;
        if (!j->dropped && !job_cancelled(j))
            advance(s, j);
        if (j->dropped && j->inflight == 0)
            job_remove(s, j);
    }
    dispatch(s);
}

static void on_wake(uv_async_t *a)
{
    sweeps_t *s = a->data;
    if (__atomic_load_n(&s->stopping, __ATOMIC_RELAXED))
        return;
    /* Jobs a user cancelled while idle between units go now; others once their units return. */
    for (job_t *j = s->jobs, *next; j; j = next) {
        next = j->next;
        if (job_cancelled(j) && !j->dropped) {
            j->dropped = true;
            if (j->inflight == 0)
                job_remove(s, j);
        }
    }
    dispatch(s);
}

/* Shared store: renews this replica's leases, drops jobs whose sweep is no longer ours, and
 * starts sweeps pending in the database. */
static void on_poll(uv_timer_t *t)
{
    sweeps_t *s = t->data;
    if (__atomic_load_n(&s->stopping, __ATOMIC_RELAXED))
        return;
    for (job_t *j = s->jobs, *next; j; j = next) {
        next = j->next;
        fathom_error_t err;
        if (!j->dropped && store_sweep_renew(s->srv->store, j->id, &err) &&
            err.code == FATHOM_E_NOT_FOUND) {
            log_event(LOG_INFO, "sweep no longer runs here (cancelled, or taken over)",
                      json_pack("{s:s,s:s}", "sweep", j->id, "reason", err.message));
            drop_job(j);
        }
        if (j->remote && !j->dropped && !job_cancelled(j))
            advance(s, j); /* units other replicas finished meanwhile */
        if (j->dropped && j->inflight == 0)
            job_remove(s, j);
    }
    /* Units run for other replicas: their leases renewed; idle helper jobs freed. */
    for (job_t *j = s->helps, *next; j; j = next) {
        next = j->next;
        for (int i = 0; i < j->nbusy; i++) {
            fathom_error_t err;
            store_unit_renew(s->srv->store, j->id, (long long)j->busy[i], &err);
        }
        if (j->inflight == 0 && !j->used)
            helper_unlink(s, j);
        else
            j->used = false;
    }
    dispatch(s);
}

sweeps_t *sweeps_create(server_t *srv, uv_loop_t *loop, fathom_error_t *err)
{
    sweeps_t *s = calloc(1, sizeof *s);
    if (!s) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    s->srv = srv;
    s->loop = loop;
    s->limits.max_grid_points = (uint64_t)srv->cfg.max_sweep_points;
    s->limits.max_search_executions = (uint64_t)srv->cfg.max_search_executions;
    pthread_mutex_init(&s->lock, NULL);
    if (uv_async_init(loop, &s->wake, on_wake)) {
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "cannot create the sweep wake-up handle");
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    s->wake.data = s;
    s->wake_open = true;
    uv_timer_init(loop, &s->retry);
    s->retry.data = s;
    s->retry_open = true;
    if (store_shared(srv->store)) {
        uv_timer_init(loop, &s->poll);
        s->poll.data = s;
        s->poll_open = true;
        uv_timer_start(&s->poll, on_poll, POLL_MS, POLL_MS);
    }
    uv_async_send(&s->wake); /* resume interrupted sweeps once the loop runs */
    return s;
}

void sweeps_begin_shutdown(sweeps_t *s)
{
    if (!s)
        return;
    __atomic_store_n(&s->stopping, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&s->lock);
    for (job_t *j = s->jobs; j; j = j->next)
        job_set_cancel(j);
    pthread_mutex_unlock(&s->lock);
    for (job_t *j = s->helps, *next; j; j = next) {
        next = j->next;
        job_set_cancel(j);
        if (j->inflight == 0)
            helper_unlink(s, j);
    }
    /* Jobs with nothing in flight would otherwise wait for a completion that never comes. */
    for (job_t *j = s->jobs, *next; j; j = next) {
        next = j->next;
        if (j->inflight == 0) {
            if (!j->dropped && j->next_merge > j->committed)
                checkpoint(s, j, &(fathom_error_t){0});
            job_remove(s, j);
        }
    }
}

void sweeps_shutdown(sweeps_t *s)
{
    if (s && s->wake_open) {
        uv_close((uv_handle_t *)&s->wake, NULL);
        s->wake_open = false;
    }
    if (s && s->retry_open) {
        uv_close((uv_handle_t *)&s->retry, NULL);
        s->retry_open = false;
    }
    if (s && s->poll_open) {
        uv_close((uv_handle_t *)&s->poll, NULL);
        s->poll_open = false;
    }
}

void sweeps_free(sweeps_t *s)
{
    if (!s)
        return;
    while (s->jobs) {
        job_t *j = s->jobs;
        s->jobs = j->next;
        job_free(j);
    }
    while (s->helps) {
        job_t *j = s->helps;
        s->helps = j->next;
        job_free(j);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* ------------------------------------------- hooks for the HTTP-thread views ---- */

server_t *sweeps__server(sweeps_t *s)
{
    return s->srv;
}

const sweep_limits_t *sweeps__limits(sweeps_t *s)
{
    return &s->limits;
}

bool sweeps__stopping(sweeps_t *s)
{
    return __atomic_load_n(&s->stopping, __ATOMIC_RELAXED) != 0;
}

void sweeps__wake(sweeps_t *s)
{
    uv_async_send(&s->wake);
}

void sweeps__cancel_job(sweeps_t *s, const char *id)
{
    pthread_mutex_lock(&s->lock);
    for (job_t *j = s->jobs; j; j = j->next)
        if (strcmp(j->id, id) == 0)
            job_set_cancel(j);
    pthread_mutex_unlock(&s->lock);
    uv_async_send(&s->wake);
}
