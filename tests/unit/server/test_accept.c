/* test_accept.c — content negotiation (accept.h) on headers clients send, each answer worked
 * from RFC 9110 §12.5.1's rules: the most specific matching range sets an offer's weight, q=0
 * refuses, the highest weight wins, and the default (JSON) stands where the header says nothing
 * usable. */
#include "accept.h"
#include "test_util.h"

static const char *const forms[] = {"application/json", "text/csv"};
#define JSON 0
#define CSV 1

static int choose(const char *accept)
{
    return accept_choose(accept, forms, 2);
}

static void no_preference_is_the_default(void **state)
{
    (void)state;
    assert_int_equal(choose(NULL), JSON);
    assert_int_equal(choose(""), JSON);
    assert_int_equal(choose("*/*"), JSON);
    assert_int_equal(choose("image/png"), JSON); /* accepts neither: ignored, as §12.5.1 allows */
}

static void a_named_type_is_chosen(void **state)
{
    (void)state;
    assert_int_equal(choose("text/csv"), CSV);
    assert_int_equal(choose("TEXT/CSV"), CSV); /* media types are case-insensitive */
    assert_int_equal(choose("application/json"), JSON);
    assert_int_equal(choose(" text/csv ; charset=utf-8 "), CSV);
    assert_int_equal(choose("text/csv;header=present;q=0.8"), CSV);
    assert_int_equal(choose("text/csv; foo=\"a;b,c\""), CSV); /* a quoted value's ; and , */
}

static void equal_weights_go_to_the_first_named(void **state)
{
    (void)state;
    assert_int_equal(choose("text/csv, application/json"), CSV);
    assert_int_equal(choose("application/json, text/csv"), JSON);
    /* named beats a wildcard at the same weight, wherever the wildcard stands */
    assert_int_equal(choose("*/*, text/csv"), CSV);
    /* a browser's navigation header: both reach */
    assert_int_equal(choose("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
                     JSON);
}

static void weights_decide(void **state)
{
    (void)state;
    /* JSON named first but at 0.5; CSV at the implicit 1 */
    assert_int_equal(choose("application/json;q=0.5, text/csv"), CSV);
    assert_int_equal(choose("text/csv;q=0.1, application/json;q=0.2"), JSON);
    assert_int_equal(choose("text/csv;q=0.333, */*;q=0.332"), CSV);
    assert_int_equal(choose("text/*;q=0.9, application/json;q=0.8"), CSV); /* type wildcard */
    assert_int_equal(choose("text/csv;Q=1.000, application/json;q=0.999"), CSV);
}

static void zero_refuses(void **state)
{
    (void)state;
    /* the old substring test sent CSV to a client that refused it */
    assert_int_equal(choose("text/csv;q=0"), JSON);
    assert_int_equal(choose("text/csv;q=0, application/json;q=0.1"), JSON);
    /* the most specific range wins: CSV refused although text's wildcard accepts it */
    assert_int_equal(choose("text/*, text/csv;q=0"), JSON);
    assert_int_equal(choose("application/json;q=0, text/csv;q=0.01"), CSV);
    assert_int_equal(choose("*/*;q=0, text/csv"), CSV);
}

static void a_header_that_does_not_parse_is_ignored(void **state)
{
    (void)state;
    assert_int_equal(choose("text/csv;q=2"), JSON);       /* above 1 */
    assert_int_equal(choose("text/csv;q=0.1234"), JSON);  /* four decimals */
    assert_int_equal(choose("text/csv;q=1.5"), JSON);     /* 1 allows only zeros */
    assert_int_equal(choose("text/csv;q="), JSON);
    assert_int_equal(choose("text/csv;q"), JSON);
    assert_int_equal(choose("text/csv garbage"), JSON);
    assert_int_equal(choose("text/csv;foo=\"open"), JSON);
    /* not a range: matched by nothing, the rest still read */
    assert_int_equal(choose("csv, text/csv"), CSV);
    assert_int_equal(choose(",,text/csv,"), CSV); /* empty list elements (§5.6.1) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_preference_is_the_default),
        cmocka_unit_test(a_named_type_is_chosen),
        cmocka_unit_test(equal_weights_go_to_the_first_named),
        cmocka_unit_test(weights_decide),
        cmocka_unit_test(zero_refuses),
        cmocka_unit_test(a_header_that_does_not_parse_is_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
