/* init.c: weight initializers (Glorot & Bengio 2010; He et al. 2015).
 *
 * Each returns a new f32 tensor [fan_in, fan_out] drawn from the generator,
 * owned as rule 2 of gad.h says; it is a constant until the caller marks it
 * with gad_requires_grad. Written on the public API only (DESIGN §1). */
#include "gad.h"

#include <math.h>

/* Draw [fan_in, fan_out] f32 values: uniform in [-bound, bound) when
 * `normal` is 0, else normal(0, bound). bound is scale * gain. */
static gad_tensor *draw(const char *op, gad_rng *rng, int64_t fan_in,
                        int64_t fan_out, double gain, double scale, int normal) {
    if (!rng) return gad_error_set(GAD_ERR_DOMAIN, op, "generator is NULL");
    if (fan_in <= 0 || fan_out <= 0)
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "fan_in %lld and fan_out %lld must be > 0",
                             (long long)fan_in, (long long)fan_out);
    if (fan_in > INT64_MAX / 8 / fan_out) /* gad's element limit */
        return gad_error_set(GAD_ERR_SHAPE, op,
                             "[%lld,%lld] has too many elements",
                             (long long)fan_in, (long long)fan_out);
    if (!(gain >= 0) || isinf(gain))
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "gain %g must be finite and >= 0", gain);
    const int64_t shape[2] = {fan_in, fan_out};
    double bound = gain * scale;
    return normal ? gad_rng_normal_tensor(rng, shape, 2, GAD_F32, 0.0, bound)
                  : gad_rng_uniform_tensor(rng, shape, 2, GAD_F32, -bound, bound);
}

gad_tensor *gad_init_xavier_uniform(gad_rng *rng, int64_t fan_in,
                                    int64_t fan_out, double gain) {
    double s = sqrt(6.0 / ((double)fan_in + (double)fan_out));
    return draw("init_xavier_uniform", rng, fan_in, fan_out, gain, s, 0);
}

gad_tensor *gad_init_xavier_normal(gad_rng *rng, int64_t fan_in,
                                   int64_t fan_out, double gain) {
    double s = sqrt(2.0 / ((double)fan_in + (double)fan_out));
    return draw("init_xavier_normal", rng, fan_in, fan_out, gain, s, 1);
}

gad_tensor *gad_init_kaiming_uniform(gad_rng *rng, int64_t fan_in,
                                     int64_t fan_out, double gain) {
    double s = sqrt(3.0) / sqrt((double)fan_in);
    return draw("init_kaiming_uniform", rng, fan_in, fan_out, gain, s, 0);
}

gad_tensor *gad_init_kaiming_normal(gad_rng *rng, int64_t fan_in,
                                    int64_t fan_out, double gain) {
    double s = 1.0 / sqrt((double)fan_in);
    return draw("init_kaiming_normal", rng, fan_in, fan_out, gain, s, 1);
}
