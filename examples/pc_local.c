/* pc_local.c: the local energy of predictive coding, and why its weight
 * gradient must not flow through the inference loop (SPEC 6.8).
 *
 * In predictive coding a layer's activity x1 first relaxes towards the
 * prediction tanh(x0 w) (inference), and only then is the weight moved to
 * lower the local energy
 *
 *     E = sum (x1 - tanh(x0 w))^2,
 *
 * with x1 treated as a constant. Two gad tools express "constant":
 *   - gad_detach(w) gives w's values off the tape, so the inference loop
 *     records nothing;
 *   - gad_stop_gradient(x1) keeps x1 on the tape but sends it no gradient.
 *
 * With x1 starting at 0 and 16 steps of x1 <- x1 - 0.2 (x1 - pred), x1 is
 * (1 - 0.8^16) pred, so E has the closed form 0.8^32 sum pred^2, and
 *
 *     dE/dw[i][j] = -2 x0[i] (x1[j] - t[j]) (1 - t[j]^2),   t = tanh(x0 w).
 *
 * Success: E matches its closed form within 1e-5 relative, and dE/dw
 * matches the formula above (x1 held constant) within 1e-4, also when the
 * inference loop is run on the tape and only gad_stop_gradient blocks it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gad.h"

static void check(int ok) {
    if (!ok || gad_last_error()) {
        const gad_error *e = gad_last_error();
        fprintf(stderr, "pc_local: %s\n", e ? e->text : "unexpected NULL");
        exit(1);
    }
}

/* Relax x1 towards tanh(x0 @ w_inf) for `steps` steps, from x1 = 0. */
static gad_tensor *infer(gad_tensor *x0, gad_tensor *w_inf, int steps) {
    gad_tensor *x1 = gad_zeros((int64_t[]){1, 2}, 2, GAD_F32);
    for (int s = 0; s < steps; s++) {
        gad_tensor *pred = gad_tanh(gad_matmul(x0, w_inf));
        x1 = gad_sub(x1, gad_mul_scalar(gad_sub(x1, pred), 0.2));
    }
    return x1;
}

/* E = sum (stop_gradient(x1) - tanh(x0 @ w))^2. */
static gad_tensor *energy(gad_tensor *x0, gad_tensor *w, gad_tensor *x1) {
    gad_tensor *t = gad_tanh(gad_matmul(x0, w));
    return gad_sum_all(gad_square(gad_sub(gad_stop_gradient(x1), t)));
}

static double rel_diff(double a, double b) {
    double m = fmax(fabs(a), fabs(b));
    return m > 0 ? fabs(a - b) / m : 0;
}

int main(void) {
    const float x0v[] = {0.2f, -0.1f, 0.3f};
    gad_tensor *x0 = gad_from_f32(x0v, (int64_t[]){1, 3}, 2);
    gad_tensor *w = gad_requires_grad(gad_randn((int64_t[]){3, 2}, 2, 7));
    check(x0 && w);
    int ok = 1;

    gad_scope_begin();
    /* Inference with w detached: nothing of it is on the tape. */
    gad_tensor *x1 = infer(x0, gad_detach(w), 16);
    gad_tensor *E = energy(x0, w, x1);
    gad_tensor *gw;
    check(gad_grad(E, &w, 1, &gw) == GAD_OK);
    double e = gad_item(E);
    double g_l1 = gad_item(gad_sum_all(gad_abs(gw)));
    printf("energy %.9e |grad| %.9e\n", e, g_l1);

    /* The closed forms, in double from the same f32 inputs. */
    float wv[6], x1v[2], gv[6];
    check(gad_read_f32(w, wv, 6) == GAD_OK && gad_read_f32(x1, x1v, 2) == GAD_OK &&
          gad_read_f32(gw, gv, 6) == GAD_OK);
    double sum_pred2 = 0, expect_g[6];
    for (int j = 0; j < 2; j++) {
        double a = 0;
        for (int i = 0; i < 3; i++) a += (double)x0v[i] * wv[i * 2 + j];
        double t = tanh(a);
        sum_pred2 += t * t;
        for (int i = 0; i < 3; i++)
            expect_g[i * 2 + j] = -2 * x0v[i] * (x1v[j] - t) * (1 - t * t);
    }
    double e_closed = pow(0.8, 32) * sum_pred2;
    double e_err = rel_diff(e, e_closed);
    printf("closed form 0.8^32 * sum pred^2 = %.9e (relative difference %.2e)\n",
           e_closed, e_err);
    if (!(e_err <= 1e-5)) {
        fprintf(stderr,
                "pc_local: FAILED: E differs from its closed form by %.2e relative\n",
                e_err);
        ok = 0;
    }

    /* dE/dw against the formula with x1 constant. */
    double g_err = 0, g_scale = 0;
    for (int k = 0; k < 6; k++) {
        g_err = fmax(g_err, fabs(gv[k] - expect_g[k]));
        g_scale = fmax(g_scale, fabs(expect_g[k]));
    }
    g_err /= g_scale;
    printf("dE/dw vs the gradient with x1 held constant: max relative difference %.2e\n",
           g_err);
    /* x1 - t loses about 5 bits to cancellation in f32, hence 1e-4. A
     * gradient through the loop would be off by a factor 0.8^16 (about 0.03),
     * since dx1/dw = (1 - 0.8^16) dt/dw there. */
    if (!(g_err <= 1e-4)) {
        fprintf(stderr, "pc_local: FAILED: dE/dw is not the gradient with x1 constant\n");
        ok = 0;
    }

    /* Run inference again with w itself, so that x1 is on the tape and
     * depends on w: gad_stop_gradient alone must keep the loop out of dE/dw. */
    gad_tensor *x1_tape = infer(x0, w, 16);
    gad_tensor *E2 = energy(x0, w, x1_tape);
    gad_tensor *gw2;
    check(gad_grad(E2, &w, 1, &gw2) == GAD_OK);
    float gv2[6];
    check(gad_read_f32(gw2, gv2, 6) == GAD_OK);
    double g2_err = 0;
    for (int k = 0; k < 6; k++) g2_err = fmax(g2_err, fabs(gv2[k] - gv[k]));
    printf("with the loop on the tape, stop_gradient gives the same dE/dw "
           "(max difference %.2e)\n",
           g2_err);
    if (!(g2_err <= 1e-6 * g_scale)) {
        fprintf(stderr, "pc_local: FAILED: a gradient leaked through stop_gradient\n");
        ok = 0;
    }
    gad_scope_end();

    gad_release(w), gad_release(x0);
    if (!ok) return 1;
    printf("ok: E matches its closed form and dE/dw treats x1 as a constant\n");
    return 0;
}
