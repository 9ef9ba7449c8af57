/* plan_select.c — the days/dollars Pareto front of a plan's candidates and the two answers a
 * planner asks for: the cheapest run that meets a deadline, the fastest that fits a budget. */
#include "plan.h"

static bool dominates(const plan_choice_t *a, const plan_choice_t *b)
{
    return a->days <= b->days && a->dollars <= b->dollars &&
           (a->days < b->days || a->dollars < b->dollars);
}

void plan_pareto(const plan_choice_t *c, size_t n, bool *on_front)
{
    for (size_t i = 0; i < n; i++) {
        on_front[i] = c[i].usable;
        for (size_t j = 0; on_front[i] && j < n; j++)
            if (j != i && c[j].usable && dominates(&c[j], &c[i]))
                on_front[i] = false;
    }
}

long plan_cheapest_within(const plan_choice_t *c, size_t n, double deadline_days)
{
    long best = -1;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].usable || (deadline_days > 0 && c[i].days > deadline_days))
            continue;
        if (best < 0 || c[i].dollars < c[best].dollars ||
            (c[i].dollars == c[best].dollars && c[i].days < c[best].days))
            best = (long)i;
    }
    return best;
}

long plan_fastest_within(const plan_choice_t *c, size_t n, double budget_dollars)
{
    long best = -1;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].usable || (budget_dollars > 0 && c[i].dollars > budget_dollars))
            continue;
        if (best < 0 || c[i].days < c[best].days ||
            (c[i].days == c[best].days && c[i].dollars < c[best].dollars))
            best = (long)i;
    }
    return best;
}
