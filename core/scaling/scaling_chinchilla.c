/* scaling_chinchilla.c — the Chinchilla parametric law (Hoffmann et al. 2022, approach 3):
 * L(N, D) = E + A/N^α + B/D^β with training compute C ≈ 6·N·D.
 *
 * The compute-optimal split has a closed form, so no numerical minimizer is needed: minimizing
 * L(N, C/(6N)) over N gives N* = G·(C/6)^(β/(α+β)) with G = (αA / (βB))^(1/(α+β)), and
 * D* = (C/6)/N*. */
#include "scaling.h"

#include <math.h>

const scaling_chinchilla_t scaling_chinchilla_hoffmann2022 = {1.69, 406.4, 410.7, 0.34, 0.28};

scaling_chinchilla_point_t scaling_chinchilla_loss(const scaling_chinchilla_t *law, double params,
                                                   double tokens)
{
    scaling_chinchilla_point_t p = {6.0 * params * tokens, params, tokens,
                                    law->E + law->A / pow(params, law->alpha) +
                                        law->B / pow(tokens, law->beta)};
    return p;
}

scaling_chinchilla_point_t scaling_chinchilla_optimal(const scaling_chinchilla_t *law,
                                                      double flos)
{
    double sum = law->alpha + law->beta;
    double g = pow(law->alpha * law->A / (law->beta * law->B), 1.0 / sum);
    double n = g * pow(flos / 6.0, law->beta / sum);
    scaling_chinchilla_point_t p = scaling_chinchilla_loss(law, n, flos / 6.0 / n);
    p.flos = flos; /* exact, not 6·N·D recomputed */
    return p;
}
