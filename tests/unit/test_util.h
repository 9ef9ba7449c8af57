/* test_util.h — assertions for numbers that print both values, shared by the unit tests. */
#ifndef FATHOM_TEST_UTIL_H
#define FATHOM_TEST_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <cmocka.h>

/* |got − want| ≤ rel·|want| (or ≤ rel when want is 0). */
#define assert_close(got, want, rel)                                                         \
    do {                                                                                     \
        double g_ = (double)(got), w_ = (double)(want), r_ = (double)(rel);                  \
        double tol_ = w_ == 0.0 ? r_ : r_ * fabs(w_);                                        \
        if (!(fabs(g_ - w_) <= tol_))                                                        \
            fail_msg("%s = %.17g, expected %.17g (relative tolerance %g)", #got, g_, w_, r_); \
    } while (0)

#endif
