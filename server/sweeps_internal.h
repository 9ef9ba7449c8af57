/* sweeps_internal.h — private to the sweeps module (sweeps.c, sweep_results.c). */
#ifndef FATHOM_SWEEPS_INTERNAL_H
#define FATHOM_SWEEPS_INTERNAL_H

#include "db.h"
#include "sweeps.h"

/* The database the module's sweeps live in. */
db_t *sweeps__db(sweeps_t *s);

#endif
