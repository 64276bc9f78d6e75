/* schedule.c: the learning-rate schedules (SPEC §5): warm-up + cosine.
 * Compiled with -ffp-contract=off, as the optimizers are (CMakeLists.txt):
 * the rate is the same bits on every build.
 *
 * A negative step or warmup counts as 0; with total <= warmup the cosine
 * phase is empty: min_lr from step warmup on. */
#include "gad.h"

#include <math.h>

double gad_lr_warmup_cosine(int64_t step, int64_t warmup, int64_t total,
                            double base_lr, double min_lr) {
    const double pi = 3.14159265358979323846;
    if (step < 0) step = 0;
    if (warmup < 0) warmup = 0;
    if (step < warmup) return base_lr * (double)(step + 1) / (double)warmup;
    if (step >= total) return min_lr;
    double frac = (double)(step - warmup) / (double)(total - warmup);
    return min_lr + 0.5 * (base_lr - min_lr) * (1.0 + cos(pi * frac));
}
