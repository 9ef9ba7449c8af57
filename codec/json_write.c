/* json_write.c — numbers and objects as every encoder writes them (json_write.h). */
#include "json_write.h"

#include <math.h>

json_t *jw_num(double x)
{
    if (!isfinite(x))
        return json_null();
    if (x == floor(x) && fabs(x) < 9007199254740992.0)
        return json_integer((json_int_t)x);
    return json_real(x);
}

json_t *jw_finish(json_t *v, bool ok)
{
    if (!ok) {
        json_decref(v);
        return NULL;
    }
    return v;
}
