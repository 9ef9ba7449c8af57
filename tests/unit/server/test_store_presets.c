/* test_store_presets.c — the user presets' store calls (store.h), the contract any backend
 * keeps: get by key, create then replace (created says which, created_at kept), the cap on how
 * many exist (a replacement is not refused by it), list in name order per kind, delete, and
 * not_found for a missing one; all surviving a close and reopen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "test_util.h"

typedef struct {
    char names[8][128];
    int n;
} listing_t;

static int collect(void *ctx, const store_preset_t *p)
{
    listing_t *l = ctx;
    assert_null(p->body);
    if (l->n < 8)
        snprintf(l->names[l->n++], sizeof l->names[0], "%s", p->name);
    return 0;
}

static store_t *open_at(const char *path)
{
    fathom_error_t open_err;
    store_t *st = store_open(path, "migrations", 2, &open_err);
    if (!st)
        fail_msg("store_open: %s", open_err.message);
    return st;
}

static void presets_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/fathom-presets-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/fathom.db", dir);
    store_t *st = open_at(path);
    fathom_error_t err;
    bool created;
    store_preset_t p;

    assert_int_equal(store_preset_get(st, "systems", "b", &p, &err), -1);
    assert_int_equal(err.code, FATHOM_E_NOT_FOUND);
    assert_int_equal(store_preset_put(st, "systems", "b", "{\"v\":1}", 2, &created, &err), 0);
    assert_true(created);
    assert_int_equal(store_preset_put(st, "systems", "a", "{\"v\":2}", 2, &created, &err), 0);
    assert_int_equal(store_preset_put(st, "systems", "c", "{}", 2, &created, &err), -1);
    assert_int_equal(err.code, FATHOM_E_LIMIT_EXCEEDED);
    assert_false(created);
    assert_int_equal(store_preset_put(st, "models", "c", "{}", 2, &created, &err), 0);

    assert_int_equal(store_preset_get(st, "systems", "b", &p, &err), 0);
    char first_created[32];
    snprintf(first_created, sizeof first_created, "%s", p.created_at);
    store_preset_close(&p);
    assert_int_equal(store_preset_put(st, "systems", "b", "{\"v\":3}", 2, &created, &err), 0);
    assert_false(created); /* replaced, though the cap is reached */
    store_close(st);

    st = open_at(path);
    assert_int_equal(store_preset_get(st, "systems", "b", &p, &err), 0);
    assert_string_equal(p.body, "{\"v\":3}");
    assert_string_equal(p.name, "b");
    assert_string_equal(p.created_at, first_created);
    assert_true(strcmp(p.updated_at, p.created_at) >= 0);
    store_preset_close(&p);
    listing_t l = {0};
    assert_int_equal(store_preset_list(st, "systems", collect, &l, &err), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.names[0], "a");
    assert_string_equal(l.names[1], "b");

    assert_int_equal(store_preset_delete(st, "systems", "b", &err), 0);
    assert_int_equal(store_preset_delete(st, "systems", "b", &err), -1);
    assert_int_equal(err.code, FATHOM_E_NOT_FOUND);
    assert_int_equal(store_preset_get(st, "systems", "b", &p, &err), -1);
    assert_int_equal(err.code, FATHOM_E_NOT_FOUND);
    assert_int_equal(store_preset_get(st, "models", "c", &p, &err), 0);
    store_preset_close(&p);
    store_close(st);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(presets_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
