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
    return F32(m) ? ((const float *)P(m))[i] : ((const double *)P(m))[i];
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
    double ns = cnt == 0 ? 0 : -1.0 / cnt;
    if (F32(nscale)) *(float *)P(nscale) = (float)ns;
    else *(double *)P(nscale) = ns;
    return rc;
}

static int cpu_mce_fwd(const char *op, const gad_tensor *logits, const gad_tensor *safe,
                       const gad_tensor *mask, gad_tensor *probs, gad_tensor *loss) {
    int64_t N = logits->shape[0], V = logits->shape[1];
    double l;
    int rc = F32(logits) ? gad__mce_fwd_f32(P(logits), P(safe), P(mask), P(probs), N, V, &l)
                         : gad__mce_fwd_f64(P(logits), P(safe), P(mask), P(probs), N, V, &l);
    if (rc) return (gad__err(GAD_ERR_MEMORY, op, "cannot allocate"), -1);
    if (F32(loss)) *(float *)P(loss) = (float)l;
    else *(double *)P(loss) = l;
    return 0;
}

static void cpu_mce_bwd(const gad_tensor *probs, const gad_tensor *safe, const gad_tensor *mask,
                        const gad_tensor *count, const gad_tensor *gy, gad_tensor *d) {
    int64_t N = probs->shape[0], V = probs->shape[1];
    double cnt = *(const double *)P(count);
    double g = F32(gy) ? *(const float *)P(gy) : *(const double *)P(gy);
    double scale = cnt == 0 ? 0 : g / cnt;
    if (F32(d)) gad__mce_bwd_f32(P(probs), P(safe), P(mask), scale, P(d), N, V);
    else gad__mce_bwd_f64(P(probs), P(safe), P(mask), scale, P(d), N, V);
}

const gad_be_masked_ce gad__cpu_masked_ce = {
    .prep = cpu_mce_prep, .fwd = cpu_mce_fwd, .bwd = cpu_mce_bwd};
