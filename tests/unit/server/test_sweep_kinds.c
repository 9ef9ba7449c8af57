/* test_sweep_kinds.c — the sweep scheduler through the sweep-kind table, with kinds made up
 * here; the optimal-execution row's checkpoint codec; the error object's one encoder; and a plan's
 * answer as its candidates finish.
 *
 * "count" is a whole kind in one screen (a row and its functions, registered with
 * sweep_kind_register): {"kind":"count","units":N,"fail":U} — unit u adds u + 1 to a sum (one
 * evaluation each); unit U, when given, refuses to run. It keeps a state, so the scheduler merges
 * it, checkpoints it through encode_state and reads it back through decode_state on a restart.
 * Units wait at a gate the test opens to a given unit, so a restart can be placed mid-run. The
 * server itself knows nothing of it: this is what adding a kind is. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#include "error_codec.h"
#include "log.h"
#include "metrics.h"
#include "presets.h"
#include "search_codec.h"
#include "server.h"
#include "store.h"
#include "sweep_kind.h"
#include "sweeps.h"

/* -------------------------------------------------------------------- the "count" kind ---- */

typedef struct {
    int64_t units, fail; /* fail: the unit that refuses, or -1 */
} count_run_t;

typedef struct {
    int64_t sum, merged;
} count_state_t;

/* The gate: units below `opened` run; the others wait (by index, not by arrival: two units
 * dispatched together may reach it in either order). */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static size_t opened = (size_t)1 << 30;
static atomic_int merges;

static void gate(size_t n)
{
    pthread_mutex_lock(&gate_lock);
    opened = n;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

/* Waits for the gate to open for `unit`, or for the cancel flag: 0 when the unit may run. */
static int pass_gate(size_t unit, volatile int *cancel)
{
    int rc = 0;
    pthread_mutex_lock(&gate_lock);
    while (unit >= opened && !(rc = __atomic_load_n(cancel, __ATOMIC_RELAXED))) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 10 * 1000 * 1000; /* the cancel flag is not a condition: look again */
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&gate_cond, &gate_lock, &until);
    }
    pthread_mutex_unlock(&gate_lock);
    return rc;
}

static json_t *count_normalize(const json_t *body, const codec_ctx_t *ctx,
                               const sweep_limits_t *limits, uint64_t *size, fathom_error_t *err)
{
    (void)ctx;
    (void)limits;
    json_int_t units = json_integer_value(json_object_get(body, "units"));
    if (units < 1 || units > 1000)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "units", "must be 1 to 1000"), NULL;
    *size = (uint64_t)units;
    return json_deep_copy(body);
}

static sweep_run_t *count_open(const json_t *spec, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    (void)err;
    count_run_t *r = malloc(sizeof *r);
    r->units = json_integer_value(json_object_get(spec, "units"));
    r->fail = json_is_integer(json_object_get(spec, "fail"))
                  ? json_integer_value(json_object_get(spec, "fail"))
                  : -1;
    return (sweep_run_t *)r;
}

static void count_close(sweep_run_t *run)
{
    free(run);
}

static size_t count_units(const sweep_run_t *run)
{
    return (size_t)((const count_run_t *)run)->units;
}

static int count_run_unit(const sweep_run_t *run, const codec_ctx_t *ctx, size_t unit,
                          volatile int *cancel, sweep_unit_t *out, fathom_error_t *err)
{
    (void)ctx;
    if ((int64_t)unit == ((const count_run_t *)run)->fail)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "fail", "unit %zu refuses", unit);
    if (pass_gate(unit, cancel))
        return fathom_error_set(err, FATHOM_E_CANCELLED, NULL, "cancelled");
    ((count_state_t *)out->state)->sum += (int64_t)unit + 1;
    out->evaluations++;
    return 0;
}

static sweep_state_t *count_state_new(const sweep_run_t *run, fathom_error_t *err)
{
    (void)run;
    (void)err;
    return (sweep_state_t *)calloc(1, sizeof(count_state_t));
}

static void count_state_free(sweep_state_t *st)
{
    free(st);
}

static void count_merge(const sweep_run_t *run, sweep_state_t *into, const sweep_state_t *from)
{
    (void)run;
    ((count_state_t *)into)->sum += ((const count_state_t *)from)->sum;
    ((count_state_t *)into)->merged++;
    atomic_fetch_add(&merges, 1);
}

static int count_encode(const sweep_run_t *run, const sweep_state_t *st, char **state,
                        char **sample, fathom_error_t *err)
{
    (void)run;
    (void)err;
    const count_state_t *c = (const count_state_t *)st;
    json_t *doc = json_pack("{s:i,s:I,s:I}", "version", 1, "sum", (json_int_t)c->sum, "merged",
                            (json_int_t)c->merged);
    *state = json_dumps(doc, JSON_COMPACT);
    *sample = strdup("[]");
    json_decref(doc);
    return 0;
}

static int count_decode(const sweep_run_t *run, const char *state, const char *sample,
                        sweep_state_t *st, fathom_error_t *err)
{
    (void)run;
    (void)sample;
    json_t *doc = json_loads(state, 0, NULL);
    int ok = json_integer_value(json_object_get(doc, "version")) == 1;
    count_state_t *c = (count_state_t *)st;
    c->sum = json_integer_value(json_object_get(doc, "sum"));
    c->merged = json_integer_value(json_object_get(doc, "merged"));
    json_decref(doc);
    return ok ? 0 : fathom_error_set(err, FATHOM_E_INVALID_JSON, NULL, "not a count state");
}

static json_t *count_result(const sweep_run_t *run, const sweep_state_t *st,
                            const sweep_points_t *pts, int flags, fathom_error_t *err)
{
    (void)pts;
    (void)flags;
    (void)err;
    const count_state_t *c = (const count_state_t *)st;
    return json_pack("{s:[],s:{s:I},s:I}", "best", "counts", "total",
                     (json_int_t)((const count_run_t *)run)->units, "sum", (json_int_t)c->sum);
}

static const sweep_kind_t count_kind = {
    .name = "count",
    .keeps = SWEEP_KEEPS_STATE,
    .normalize = count_normalize,
    .open = count_open,
    .close = count_close,
    .units = count_units,
    .run_unit = count_run_unit,
    .state_new = count_state_new,
    .state_free = count_state_free,
    .merge = count_merge,
    .encode_state = count_encode,
    .decode_state = count_decode,
    .result = count_result,
};

/* --------------------------------------------------------- a server without a socket ---- */

static codec_presets_t *presets;

typedef struct {
    char dir[64];
    server_t srv;
    uv_loop_t loop;
} harness_t;

static void sweeps_start(harness_t *h)
{
    fathom_error_t open_err;
    assert_int_equal(uv_loop_init(&h->loop), 0);
    h->srv.sweeps = sweeps_create(&h->srv, &h->loop, &open_err);
    assert_non_null(h->srv.sweeps);
}

static void sweeps_stop(harness_t *h)
{
    sweeps_begin_shutdown(h->srv.sweeps);
    sweeps_shutdown(h->srv.sweeps);
    uv_run(&h->loop, UV_RUN_DEFAULT);
    sweeps_free(h->srv.sweeps);
    assert_int_equal(uv_loop_close(&h->loop), 0);
}

static void harness_open(harness_t *h)
{
    char path[96];
    fathom_error_t open_err;
    memset(h, 0, sizeof *h);
    snprintf(h->dir, sizeof h->dir, "/tmp/fathom-kinds-XXXXXX");
    assert_non_null(mkdtemp(h->dir));
    snprintf(path, sizeof path, "%s/fathom.db", h->dir);
    h->srv.cfg.workers = 2;
    h->srv.cfg.max_queued_sweeps = 16;
    h->srv.cfg.max_sweep_points = 1000;
    h->srv.cfg.max_search_executions = 1000;
    h->srv.presets = presets;
    h->srv.store = store_open(path, "migrations", 4, &open_err);
    if (!h->srv.store)
        fail_msg("store_open: %s", open_err.message);
    h->srv.metrics = metrics_create();
    sweeps_start(h);
}

static void harness_close(harness_t *h)
{
    sweeps_stop(h);
    store_close(h->srv.store);
    metrics_free(h->srv.metrics);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", h->dir);
    assert_int_equal(system(cmd), 0);
}

static void submit(harness_t *h, const char *body_text, char id[65])
{
    json_t *body = json_loads(body_text, 0, NULL), *answer = NULL;
    fathom_error_t err;
    if (sweeps_submit(h->srv.sweeps, body, &answer, &err))
        fail_msg("submit: %s: %s", err.field, err.message);
    snprintf(id, 65, "%s", json_string_value(json_object_get(answer, "id")));
    assert_string_equal(json_string_value(json_object_get(answer, "kind")), "count");
    json_decref(answer);
    json_decref(body);
}

/* Runs the loop until the sweep's row leaves queued and running (a stuck sweep fails). */
static json_t *run_until_ended(harness_t *h, const char *id)
{
    time_t deadline = time(NULL) + 30;
    for (;;) {
        json_t *st = NULL;
        fathom_error_t err;
        assert_int_equal(sweeps_status(h->srv.sweeps, id, &st, &err), 0);
        const char *status = json_string_value(json_object_get(st, "status"));
        if (strcmp(status, "queued") && strcmp(status, "running"))
            return st;
        json_decref(st);
        if (time(NULL) > deadline)
            fail_msg("sweep %s stuck in %s", id, status);
        uv_run(&h->loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
}

static void test_a_made_up_kind_runs_through_the_scheduler(void **state)
{
    (void)state;
    harness_t h;
    harness_open(&h);
    gate((size_t)1 << 30);
    char id[65];
    submit(&h, "{\"kind\":\"count\",\"units\":5}", id);
    json_t *st = run_until_ended(&h, id);
    assert_string_equal(json_string_value(json_object_get(st, "status")), "done");
    /* 1 + 2 + 3 + 4 + 5, one evaluation a unit, every unit done; the kind's own member shown */
    assert_int_equal(json_integer_value(json_object_get(st, "sum")), 15);
    assert_int_equal(json_integer_value(json_object_get(st, "evaluations")), 5);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "progress"), "done")),
                     5);
    assert_true(json_is_null(json_object_get(st, "error")));
    json_decref(st);
    harness_close(&h);
}

/* Three of six units merged, then a shutdown (units waiting at the gate are cancelled, the
 * merged ones checkpointed), then a new scheduler on the same store: it resumes from the
 * checkpoint's state and evaluations and ends as an uninterrupted run would. */
static void test_a_restart_resumes_state_and_evaluations(void **state)
{
    (void)state;
    harness_t h;
    harness_open(&h);
    atomic_store(&merges, 0);
    gate(3);
    char id[65];
    submit(&h, "{\"kind\":\"count\",\"units\":6}", id);
    time_t deadline = time(NULL) + 30;
    while (atomic_load(&merges) < 3) {
        if (time(NULL) > deadline)
            fail_msg("3 units never merged");
        uv_run(&h.loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    sweeps_stop(&h);
    store_sweep_t row;
    fathom_error_t err;
    assert_int_equal(store_sweep_get(h.srv.store, id, false, &row, &err), 0);
    assert_int_equal(row.status, STORE_SWEEP_RUNNING);
    assert_int_equal(row.done, 3);
    assert_int_equal(row.evaluations, 3);
    store_sweep_close(&row);

    gate((size_t)1 << 30);
    sweeps_start(&h);
    json_t *st = run_until_ended(&h, id);
    assert_string_equal(json_string_value(json_object_get(st, "status")), "done");
    assert_int_equal(json_integer_value(json_object_get(st, "sum")), 21);
    assert_int_equal(json_integer_value(json_object_get(st, "evaluations")), 6);
    json_decref(st);
    harness_close(&h);
}

/* A unit that keeps failing fails its sweep, and the sweep's error is the error object. */
static void test_a_failed_sweep_carries_the_error_object(void **state)
{
    (void)state;
    harness_t h;
    harness_open(&h);
    gate((size_t)1 << 30);
    char id[65];
    submit(&h, "{\"kind\":\"count\",\"units\":4,\"fail\":2}", id);
    json_t *st = run_until_ended(&h, id);
    assert_string_equal(json_string_value(json_object_get(st, "status")), "failed");
    const json_t *e = json_object_get(st, "error");
    assert_true(json_is_object(e));
    assert_string_equal(json_string_value(json_object_get(e, "code")), "invalid_field");
    assert_string_equal(json_string_value(json_object_get(e, "field")), "fail");
    assert_string_equal(json_string_value(json_object_get(e, "message")), "unit 2 refuses");
    json_decref(st);
    harness_close(&h);
}

/* -------------------------------------------- the optimal-execution checkpoint codec ---- */

#define SEARCH_SPEC                                                                              \
    "{\"kind\":\"optimal_execution\",\"model\":\"gpt3-13B\",\"system\":\"a100_80g\","            \
    "\"num_procs\":64,\"max_batch_size\":64,\"options\":{\"top_n\":3}}"

typedef struct {
    json_t *spec;
    sweep_run_t *run;
    sweep_state_t *st;
} search_fixture_t;

static void search_open(search_fixture_t *f)
{
    const codec_ctx_t ctx = {presets};
    const sweep_limits_t limits = {1000, 100000000};
    fathom_error_t err;
    uint64_t size;
    const sweep_kind_t *k = NULL;
    json_t *body = json_loads(SEARCH_SPEC, 0, NULL);
    f->spec = codec_sweep_normalize(body, &ctx, &limits, &k, &size, &err);
    json_decref(body);
    assert_ptr_equal(k, &codec_search_kind);
    assert_non_null(f->run = k->open(f->spec, &ctx, &err));
    assert_non_null(f->st = k->state_new(f->run, &err));
}

static void search_close(search_fixture_t *f)
{
    codec_search_kind.state_free(f->st);
    codec_search_kind.close(f->run);
    json_decref(f->spec);
}

/* Refused, as a checkpoint this format did not write, with invalid_json. */
static void refused(const search_fixture_t *f, const char *state, const char *sample)
{
    fathom_error_t err;
    sweep_state_t *fresh = codec_search_kind.state_new(f->run, &err);
    fathom_error_clear(&err);
    if (codec_search_kind.decode_state(f->run, state, sample, fresh, &err) == 0)
        fail_msg("accepted a corrupt checkpoint: %s / %s", state, sample ? sample : "-");
    if (err.code != FATHOM_E_INVALID_JSON && err.code != FATHOM_E_INVALID_FIELD)
        fail_msg("%s: refused as %s (%s)", state, fathom_code_name(err.code), err.message);
    codec_search_kind.state_free(fresh);
}

static void test_search_checkpoint_round_trip_and_corrupt_input(void **state)
{
    (void)state;
    search_fixture_t f;
    search_open(&f);
    const sweep_kind_t *k = &codec_search_kind;
    sweep_unit_t out = {.state = f.st};
    fathom_error_t err;
    for (size_t u = 0; u < k->units(f.run); u++)
        assert_int_equal(k->run_unit(f.run, NULL, u, NULL, &out, &err), 0);
    char *state1, *sample1, *state2, *sample2;
    assert_int_equal(k->encode_state(f.run, f.st, &state1, &sample1, &err), 0);
    /* The checkpoint is the format's own, not the response: no statistics in it. */
    json_t *doc = json_loads(state1, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(doc, "format")), "fathom.search.state");
    assert_int_equal(json_integer_value(json_object_get(doc, "version")), 1);
    assert_null(json_object_get(json_array_get(json_object_get(doc, "best"), 0), "stats"));
    assert_true(json_array_size(json_object_get(doc, "best")) > 0);
    json_decref(doc);

    sweep_state_t *back = k->state_new(f.run, &err);
    assert_int_equal(k->decode_state(f.run, state1, sample1, back, &err), 0);
    assert_int_equal(k->encode_state(f.run, back, &state2, &sample2, &err), 0);
    assert_string_equal(state1, state2);
    assert_string_equal(sample1, sample2);
    /* ...and the answer made from it is the answer made from the original. */
    json_t *a = k->result(f.run, f.st, NULL, SWEEP_RESULT_FINAL | SWEEP_RESULT_SAMPLE, &err);
    json_t *b = k->result(f.run, back, NULL, SWEEP_RESULT_FINAL | SWEEP_RESULT_SAMPLE, &err);
    assert_true(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    k->state_free(back);

    refused(&f, "", NULL);
    refused(&f, "[1,2]", NULL);
    refused(&f, "{\"format\":\"fathom.search.state\",\"version\":2,\"counts\":{},\"best\":[]}",
            NULL);
    refused(&f, "{\"format\":\"other\",\"version\":1,\"counts\":{},\"best\":[]}", NULL);
    refused(&f, "{\"format\":\"fathom.search.state\",\"counts\":{},\"best\":[]}", NULL);
    const char *counts = "{\"total\":1,\"good\":1,\"bad\":0,\"pruned\":0,\"estimated\":1}";
    char text[1024];
#define V1(counts_, best_)                                                                       \
    (snprintf(text, sizeof text,                                                                 \
              "{\"format\":\"fathom.search.state\",\"version\":1,\"counts\":%s,\"best\":%s}",    \
              counts_, best_),                                                                   \
     text)
    refused(&f, V1("{\"total\":-1,\"good\":1,\"bad\":0,\"pruned\":0,\"estimated\":1}", "[]"), NULL);
    refused(&f, V1("{\"total\":\"1\",\"good\":1,\"bad\":0,\"pruned\":0,\"estimated\":1}", "[]"),
            NULL);
    refused(&f, V1("{\"total\":1,\"good\":1,\"bad\":0,\"pruned\":0}", "[]"), NULL);
    refused(&f, V1(counts, "{}"), NULL);
    refused(&f, V1(counts, "[{},{},{},{}]"), NULL);                   /* more than top_n */
    refused(&f, V1(counts, "[{\"unit\":0,\"index\":-1,\"execution\":{}}]"), NULL);
    refused(&f, V1(counts, "[{\"unit\":0,\"index\":0,\"execution\":{\"tensor_par\":\"x\"}}]"),
            NULL);
    refused(&f, V1(counts, "[]"), "[[1,2,3]]");                        /* a row without position */
    refused(&f, V1(counts, "[]"), "[[1,2,3,\"u\",0]]");
    refused(&f, V1(counts, "[]"), "{}");
#undef V1
    /* A checkpoint from before versions (the response's list with positions) still reads. */
    doc = json_loads(state1, 0, NULL);
    json_object_del(doc, "format");
    json_object_del(doc, "version");
    json_object_set_new(json_array_get(json_object_get(doc, "best"), 0), "stats", json_object());
    char *legacy = json_dumps(doc, JSON_COMPACT);
    back = k->state_new(f.run, &err);
    assert_int_equal(k->decode_state(f.run, legacy, NULL, back, &err), 0);
    k->state_free(back);
    free(legacy);
    json_decref(doc);
    free(state1);
    free(sample1);
    free(state2);
    free(sample2);
    search_close(&f);
}

/* ---------------------------------------------------------------- the error object ---- */

static json_t *encoded(fathom_code_t code, const char *field, const char *message)
{
    fathom_error_t e;
    fathom_error_set(&e, code, field, "%s", message);
    return codec_error_encode(&e);
}

static void test_error_object(void **state)
{
    (void)state;
    json_t *e = encoded(FATHOM_E_INVALID_FIELD, "execution.tensor_par", "must divide 8");
    char *text = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"code\":\"invalid_field\",\"field\":\"execution.tensor_par\","
                              "\"message\":\"must divide 8\"}");
    free(text);
    json_decref(e);
    /* A field error with no field names the body itself (""); other codes leave it out. */
    e = encoded(FATHOM_E_LIMIT_EXCEEDED, NULL, "too big");
    assert_string_equal(json_string_value(json_object_get(e, "field")), "");
    json_decref(e);
    e = encoded(FATHOM_E_NOT_FOUND, NULL, "no such sweep");
    assert_null(json_object_get(e, "field"));
    json_decref(e);
    /* An empty message says the code's name. */
    e = encoded(FATHOM_E_CANCELLED, NULL, "");
    assert_string_equal(json_string_value(json_object_get(e, "message")), "cancelled");
    json_decref(e);
    /* invalid_json with a position gives it. */
    fathom_error_t pos;
    fathom_error_set(&pos, FATHOM_E_INVALID_JSON, NULL, "unexpected end");
    pos.line = 3;
    pos.column = 7;
    e = codec_error_encode(&pos);
    assert_int_equal(json_integer_value(json_object_get(e, "line")), 3);
    assert_int_equal(json_integer_value(json_object_get(e, "column")), 7);
    json_decref(e);
    /* Bytes that are not UTF-8 are quoted as \xHH: "%FF" decoded, an overlong '/', a lone
     * continuation byte, a surrogate; valid UTF-8 (é, €) is kept. */
    e = encoded(FATHOM_E_NOT_FOUND, "a\xff", "no sweep \xff\xfe, \xc0\xaf, \x80, \xed\xa0\x80; é €");
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "no sweep \\xFF\\xFE, \\xC0\\xAF, \\x80, \\xED\\xA0\\x80; é €");
    assert_string_equal(json_string_value(json_object_get(e, "field")), "a\\xFF");
    json_decref(e);
    /* Read back: an object, or an older row's bare message. */
    fathom_error_t back;
    assert_int_equal(codec_error_decode("{\"code\":\"invalid_field\",\"field\":\"fail\","
                                        "\"message\":\"no\"}",
                                        &back),
                     0);
    assert_int_equal(back.code, FATHOM_E_INVALID_FIELD);
    assert_string_equal(back.field, "fail");
    assert_string_equal(back.message, "no");
    assert_int_equal(codec_error_decode("out of memory running a unit", &back), 0);
    assert_int_equal(back.code, FATHOM_E_INTERNAL);
    assert_string_equal(back.message, "out of memory running a unit");
}

/* ------------------------------------------- kinds made of all their points (a plan) ---- */

static json_t *summarize_count(const void *ctx, json_t *points)
{
    (void)ctx;
    return json_integer((json_int_t)json_array_size(points));
}

/* A plan's answer before and at its end (sweep_result_of_points), on 5 candidates of which 3 are
 * stored, 2 fitting: before the end the counts so far (3 stored: 2 good, 1 bad) and no block (a
 * status of a running plan used to show 0/0/0 until the end); at the end, with all 5 stored and
 * 3 fitting, the counts of all and the block made of every point. */
static void test_a_plan_counts_its_candidates_as_they_finish(void **state)
{
    (void)state;
    sweep_point_t points[5];
    const bool fits[5] = {true, false, true, true, false};
    for (int i = 0; i < 5; i++)
        points[i] = (sweep_point_t){.index = i, .fits = fits[i], .response = fits[i]
                                                                      ? "{\"fits\":true}"
                                                                      : "{\"fits\":false}"};
    sweep_point_list_t list = {points, 3};
    sweep_points_t pts = sweep_points_of_list(&list);
    fathom_error_t err;
    json_t *running = sweep_result_of_points(&pts, 5, 0, "fits", "plan", summarize_count, NULL,
                                             &err);
    assert_non_null(running);
    json_t *counts = json_object_get(running, "counts");
    assert_int_equal(json_integer_value(json_object_get(counts, "total")), 3);
    assert_int_equal(json_integer_value(json_object_get(counts, "good")), 2);
    assert_int_equal(json_integer_value(json_object_get(counts, "bad")), 1);
    assert_null(json_object_get(running, "plan"));
    json_decref(running);

    list.n = 5;
    json_t *done = sweep_result_of_points(&pts, 5, SWEEP_RESULT_FINAL, "fits", "plan",
                                          summarize_count, NULL, &err);
    assert_non_null(done);
    counts = json_object_get(done, "counts");
    assert_int_equal(json_integer_value(json_object_get(counts, "total")), 5);
    assert_int_equal(json_integer_value(json_object_get(counts, "good")), 3);
    assert_int_equal(json_integer_value(json_object_get(counts, "bad")), 2);
    assert_int_equal(json_integer_value(json_object_get(done, "plan")), 5);
    json_decref(done);
}

int main(void)
{
    log_set_level(LOG_ERROR);
    fathom_error_t err;
    presets = codec_presets_load("presets", &err);
    if (!presets) {
        fprintf(stderr, "presets: %s\n", err.message);
        return 1;
    }
    if (sweep_kind_register(&count_kind)) {
        fprintf(stderr, "cannot register the count kind\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_made_up_kind_runs_through_the_scheduler),
        cmocka_unit_test(test_a_restart_resumes_state_and_evaluations),
        cmocka_unit_test(test_a_failed_sweep_carries_the_error_object),
        cmocka_unit_test(test_search_checkpoint_round_trip_and_corrupt_input),
        cmocka_unit_test(test_error_object),
        cmocka_unit_test(test_a_plan_counts_its_candidates_as_they_finish),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    codec_presets_free(presets);
    return rc;
}
