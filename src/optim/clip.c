/* clip.c: gradient clipping by global norm (gad_clip_grad_norm, SPEC §5).
 * Compiled with -ffp-contract=off, as the optimizers are (CMakeLists.txt):
 * the scale is the same bits on every build.
 *
 * Decisions the header leaves open: the gradients are left alone when the
 * norm is NaN or infinite (and it is returned); a tensor listed twice is
 * scaled once; gradients that are outputs of tracked ops are refused
 * (not-unique). f16 and bf16 gradients (the working copies of mixed
 * precision) count with their values widened to f32, exactly, and are
 * scaled in f32 and rounded once (PyTorch rounds each tensor's norm and
 * the coefficient to the gradient's dtype first); on the CPU only. */
#include "optim_int.h"

#include "ops/ops_int.h" /* the back-end table and gad__make_writable */

#include <math.h>

double gad_clip_grad_norm(gad_tensor *const *grads, int n, double max_norm) {
    const char *op = "clip_grad_norm";
    if (n < 0 || (n > 0 && !grads)) {
        gad_error_set(GAD_ERR_DOMAIN, op,
                      n < 0 ? "n = %d is negative" : "grads is NULL (n = %d)",
                      n);
        return NAN;
    }
    if (gad__any_released(op, n, (const gad_tensor *const *)grads)) return NAN;
    if (!(max_norm >= 0)) {
        gad_error_set(GAD_ERR_DOMAIN, op, "max_norm = %g (must be >= 0)",
                      max_norm);
        return NAN;
    }
    for (int i = 0; i < n; i++) {
        gad_tensor *g = grads[i];
        if (!g) {
            gad_error_set(GAD_ERR_DOMAIN, op, "grads[%d] is NULL", i);
            return NAN;
        }
        if (GAD_LACKS(op, g, sumsq) || GAD_LACKS(op, g, scale)) return NAN;
        int half = gad_dtype(g) == GAD_F16 || gad_dtype(g) == GAD_BF16;
        if (!optim_is_float(gad_dtype(g)) && !half) {
            gad_error_set(GAD_ERR_DTYPE, op,
                          "grads[%d] is %s; gradients are f32, f64, f16 or bf16", i,
                          gad_dtype_name(gad_dtype(g)));
            return NAN;
        }
        if (half && g->dev != GAD_DEV_HOST) {
            gad_error_set(GAD_ERR_UNSUPPORTED, op,
                          "grads[%d] is %s on device %d; half gradients are clipped on the "
                          "CPU (gad_to_device, or f32 gradients)",
                          i, gad_dtype_name(gad_dtype(g)), g->dev);
            return NAN;
        }
        if (gad_is_tracked(g) && !gad_is_leaf(g)) {
            gad_error_set(GAD_ERR_NOT_UNIQUE, op,
                          "grads[%d] is the output of a tracked op (a "
                          "gradient made with GAD_CREATE_GRAPH): detach it "
                          "to clip it in place",
                          i);
            return NAN;
        }
    }
    double sumsq = 0;
    int ok = 1;
    gad_scope_begin();
    gad_no_grad_begin();
    for (int i = 0; i < n && ok; i++) {
        if (gad_numel(grads[i]) == 0) continue;
        gad_tensor *c = gad_contiguous(grads[i]);
        if (!c) {
            ok = 0;
            break;
        }
        sumsq += GAD_BE(c)->sumsq(c);
    }
    gad_no_grad_end();
    gad_scope_end();
    if (!ok) {
        gad__optim_fail_memory(op);
        return NAN;
    }
    double norm = sqrt(sumsq);
    /* A non-finite norm leaves the gradients alone: the caller sees it and
     * can skip the step. */
    if (!(norm > max_norm) || !isfinite(norm)) return norm;
    double coef = max_norm / (norm + 1e-6);
    /* Make every gradient writable first, so that a failed copy-on-write
     * leaves all gradients unscaled, and scale each distinct tensor once. */
    char *dup = gad_mem_alloc((size_t)(n > 0 ? n : 1));
    if (!dup || gad__find_duplicates(grads, n, dup) < 0) {
        gad_mem_free(dup);
        gad__optim_fail_memory(op);
        return NAN;
    }
    for (int i = 0; i < n && ok; i++) {
        if (dup[i] || gad_numel(grads[i]) == 0) continue;
        if (gad__make_writable(op, grads[i])) ok = 0;
    }
    if (ok)
        for (int i = 0; i < n; i++)
            if (!dup[i] && gad_numel(grads[i]) > 0) GAD_BE(grads[i])->scale(grads[i], coef);
    gad_mem_free(dup);
    if (!ok) {
        gad__optim_fail_memory(op);
        return NAN;
    }
    return norm;
}
