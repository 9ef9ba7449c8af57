/* scaling_chinchilla.c — the Chinchilla parametric law L(N, D) = E + A/N^α + B/D^β with training
 * compute C ≈ 6·N·D, and Fathom's one Chinchilla rule: the compute-optimal split of that law.
 *
 * The fit is Epoch AI's replication of Hoffmann et al. 2022's approach 3 (Besiroglu, Erdil,
 * Barnett, You 2024, "Chinchilla Scaling: A replication attempt", arXiv:2404.10102, their
 * estimates refitted on the data of Hoffmann et al.'s Figure 4): E = 1.8172, A = 482.01,
 * B = 2085.43, α = 0.3478, β = 0.3658. Its optimum scales N and D almost equally
 * (a = β/(α+β) = 0.5126) at about 20 tokens per parameter — 21.6 at 1e21 FLOPs, 18.3 at
 * Chinchilla's 5.76e23 — as Hoffmann et al.'s approaches 1 and 2 and the Chinchilla model itself
 * (70 B parameters on 1.4 T tokens) do. Hoffmann et al.'s published approach-3 estimates
 * (1.69, 406.4, 410.7, 0.34, 0.28) are not used: their optimum drifts to ≈100 tokens per
 * parameter at 1e24 FLOPs, which Besiroglu et al. trace to an optimizer stopped early and to
 * rounding, and which disagrees with the paper's own approaches 1 and 2.
 *
 * The compute-optimal split has a closed form: minimizing L(N, C/(6N)) over N gives
 * N* = G·(C/6)^a with G = (αA / (βB))^(1/(α+β)) and a = β/(α+β), and D* = (C/6)/N*. The same
 * formula read backwards gives the compute-optimal tokens of a model of N parameters:
 * C/6 = (N/G)^(1/a), D = (C/6)/N. */
#include "scaling.h"

#include <math.h>

const scaling_chinchilla_t scaling_chinchilla_law = {1.8172, 482.01, 2085.43, 0.3478, 0.3658};

scaling_chinchilla_point_t scaling_chinchilla_loss(const scaling_chinchilla_t *law, double params,
                                                   double tokens)
{
    scaling_chinchilla_point_t p = {6.0 * params * tokens, params, tokens,
                                    law->E + law->A / pow(params, law->alpha) +
                                        law->B / pow(tokens, law->beta)};
    return p;
}

/* G and a of the closed form (header). */
static double optimum_g(const scaling_chinchilla_t *law)
{
    return pow(law->alpha * law->A / (law->beta * law->B), 1.0 / (law->alpha + law->beta));
}

static double optimum_a(const scaling_chinchilla_t *law)
{
    return law->beta / (law->alpha + law->beta);
}

scaling_chinchilla_point_t scaling_chinchilla_optimal(const scaling_chinchilla_t *law,
                                                      double flos)
{
    const double n = optimum_g(law) * pow(flos / 6.0, optimum_a(law));
    scaling_chinchilla_point_t p = scaling_chinchilla_loss(law, n, flos / 6.0 / n);
    p.flos = flos; /* exact, not 6·N·D recomputed */
    return p;
}

scaling_chinchilla_point_t scaling_chinchilla_optimal_for_params(const scaling_chinchilla_t *law,
                                                                 double params)
{
    const double c6 = pow(params / optimum_g(law), 1.0 / optimum_a(law));
    return scaling_chinchilla_loss(law, params, c6 / params);
}
