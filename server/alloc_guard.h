/* alloc_guard.h — notices when a JSON allocation fails on this thread.
 *
 * jansson reports running out of memory as a NULL somewhere deep in a document, and a codec
 * that builds a document from parts can turn that NULL into a wrong answer rather than an
 * error (a member missing, then "is required"). Work whose result is stored for good (a sweep's
 * points) must not trust such an answer: it asks the guard whether any allocation failed on its
 * thread while it ran, and if so runs again. fathomd installs the guard at start-up, before any
 * thread; tests install it around an allocator that fails on purpose. */
#ifndef FATHOM_ALLOC_GUARD_H
#define FATHOM_ALLOC_GUARD_H

#include <stdbool.h>
#include <stddef.h>

/* Makes jansson allocate through the guard, with `inner` (malloc when NULL) doing the work.
 * Call before any thread uses jansson. */
void alloc_guard_install(void *(*inner)(size_t));
/* Whether an allocation failed on this thread since the last call (and forgets it). */
bool alloc_guard_take(void);

#endif
