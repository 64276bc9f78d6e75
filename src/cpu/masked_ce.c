/* masked_ce.c: the CPU's masked cross-entropy family: its kernels, stamped
 * for f32 and f64 from masked_ce_tmpl.h, the wrappers from the seam's
 * tensors to their raw arrays, and its sub-table (backend/masked_ce.h),
 * which the CPU's table points to. */
#include "backend/masked_ce.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"
#include "cpu/vmath.h"

#include <tgmath.h>

#define GAD_STAMP "masked_ce_tmpl.h"
#include "cpu/stamp.h"

#define F32(t) ((t)->dtype == GAD_F32)
#define P(t) gad__ptr(t)

/* Weight i of a packed float mask, as a double. */
static double weight_at(const gad_tensor *m, int64_t i) {
    if (gad__is_half(m->dtype)) return gad__half_get(m->dtype, (const uint16_t *)P(m) + i);
    return F32(m) ? ((const float *)P(m))[i] : ((const double *)P(m))[i];
}

/* A rank-0 float result: v rounded to t's dtype (a half one through f32,
 * as the f32 op's result rounded once). */
static void put_scalar(gad_tensor *t, double v) {
    if (gad__is_half(t->dtype)) gad__half_put(t->dtype, P(t), (float)v);
    else if (F32(t)) *(float *)P(t) = (float)v;
    else *(double *)P(t) = v;
}

static int cpu_mce_prep(const char *op, const gad_tensor *targets, const gad_tensor *mask,
                        int64_t V, gad_tensor *safe, gad_tensor *count, gad_tensor *nscale) {
    gad_tensor *mp = gad__contig(op, mask);
    if (!mp) return -1;
    gad__pack(targets, P(safe));
    int64_t *t = P(safe), N = safe->numel;
    double cnt = 0;
    int rc = 0;
    for (int64_t i = 0; i < N; i++) {
        double m = weight_at(mp, i);
        cnt += fabs(m);
        if (m == 0) {
            t[i] = 0;
        } else if (!rc && (t[i] < 0 || t[i] >= V)) {
            gad__err(GAD_ERR_INDEX, op, "target %lld of row %lld out of bounds for %lld classes",
                     (long long)t[i], (long long)i, (long long)V);
            rc = -1;
        }
    }
    gad_release(mp);
    *(double *)P(count) = cnt;
    put_scalar(nscale, cnt == 0 ? 0 : -1.0 / cnt);
    return rc;
}

/* f16/bf16 logits (issue 29): the f32 kernels on f32 copies (cpu.h's
 * half set) of the logits, mask and probs; probs and the loss rounded
 * once, and the backward reads the rounded probs. */
static int cpu_mce_fwd(const char *op, const gad_tensor *logits, const gad_tensor *safe,
                       const gad_tensor *mask, gad_tensor *probs, gad_tensor *loss) {
    int64_t N = logits->shape[0], V = logits->shape[1];
    double l;
    int rc;
    if (gad__is_half(logits->dtype)) {
        const gad_tensor *t[3] = {logits, mask, probs};
        gad_half_set s;
        if (gad__half_set_new(op, &s, 3, t, (const bool[]){1, 1, 0})) return -1;
        rc = gad__mce_fwd_f32(s.p[0], P(safe), s.p[1], s.p[2], N, V, &l);
        if (!rc) gad__half_set_out(&s, 2, probs);
        gad__half_set_free(&s);
    } else {
        rc = F32(logits) ? gad__mce_fwd_f32(P(logits), P(safe), P(mask), P(probs), N, V, &l)
                         : gad__mce_fwd_f64(P(logits), P(safe), P(mask), P(probs), N, V, &l);
    }
    if (rc) return (gad__err(GAD_ERR_MEMORY, op, "cannot allocate"), -1);
    put_scalar(loss, l);
    return 0;
}

static int cpu_mce_bwd(const gad_tensor *probs, const gad_tensor *safe, const gad_tensor *mask,
                       const gad_tensor *count, const gad_tensor *gy, gad_tensor *d) {
    int64_t N = probs->shape[0], V = probs->shape[1];
    double cnt = *(const double *)P(count);
    double g = gad__is_half(gy->dtype) ? gad__half_get(gy->dtype, P(gy))
               : F32(gy)               ? *(const float *)P(gy)
                                       : *(const double *)P(gy);
    double scale = cnt == 0 ? 0 : g / cnt;
    if (gad__is_half(d->dtype)) {
        const gad_tensor *t[3] = {probs, mask, d};
        gad_half_set s;
        if (gad__half_set_new("masked_ce", &s, 3, t, (const bool[]){1, 1, 0})) return -1;
        gad__mce_bwd_f32(s.p[0], P(safe), s.p[1], scale, s.p[2], N, V);
        gad__half_set_out(&s, 2, d);
        gad__half_set_free(&s);
    } else if (F32(d)) {
        gad__mce_bwd_f32(P(probs), P(safe), P(mask), scale, P(d), N, V);
    } else {
        gad__mce_bwd_f64(P(probs), P(safe), P(mask), scale, P(d), N, V);
    }
    return 0;
}

const gad_be_masked_ce gad__cpu_masked_ce = {
    .prep = cpu_mce_prep, .fwd = cpu_mce_fwd, .bwd = cpu_mce_bwd, .half = 1};
