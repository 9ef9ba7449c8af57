/* llm_stats.c — names, units and generic access for the 96 statistics (llm_stats.h). */
#include <stddef.h>

#include "llm_stats.h"

static const char *const stat_names[] = {
#define XX(name, unit) #name,
    LLM_STATS_MAP(XX)
#undef XX
};

static const char *const stat_units[] = {
#define XX(name, unit) unit,
    LLM_STATS_MAP(XX)
#undef XX
};

static const size_t stat_offsets[] = {
#define XX(name, unit) offsetof(llm_stats_t, name),
    LLM_STATS_MAP(XX)
#undef XX
};

const char *llm_stat_name(llm_stat_t i)
{
    return (unsigned)i < LLM_STAT__COUNT ? stat_names[i] : "?";
}

const char *llm_stat_unit(llm_stat_t i)
{
    return (unsigned)i < LLM_STAT__COUNT ? stat_units[i] : "?";
}

double llm_stat_value(const llm_stats_t *s, llm_stat_t i)
{
    if ((unsigned)i >= LLM_STAT__COUNT)
        return 0;
    return *(const double *)((const char *)s + stat_offsets[i]);
}
