/* autodiff.c: fit y = 2x + 1 by gradient descent. */
#include <math.h>
#include <stdio.h>

#include "gad.h"

int main(void) {
    const float xs[] = {0, 1, 2, 3}, ys[] = {1, 3, 5, 7};
    gad_tensor *x = gad_from_f32(xs, (int64_t[]){4}, 1);
    gad_tensor *y = gad_from_f32(ys, (int64_t[]){4}, 1);
    /* The parameters: leaves that require grad, made outside any scope. */
    gad_tensor *w = gad_requires_grad(gad_scalar_f32(0));
    gad_tensor *b = gad_requires_grad(gad_scalar_f32(0));
    gad_tensor *params[2] = {w, b};

    for (int step = 0; step <= 300; step++) {
        gad_scope_begin(); /* everything made in this step is freed at its end */
        gad_tensor *pred = gad_add(gad_mul(x, w), b);
        gad_tensor *loss = gad_mean_all(gad_square(gad_sub(pred, y)));
        gad_tensor *grads[2];
        if (gad_grad(loss, params, 2, grads) != GAD_OK) {
            fprintf(stderr, "%s\n", gad_last_error()->text);
            return 1;
        }
        for (int i = 0; i < 2; i++) {
            float *p = gad_data_mut(params[i]); /* update in place */
            p[0] -= 0.1f * (float)gad_item(grads[i]);
        }
        if (step % 100 == 0) printf("step %3d  loss %.3e\n", step, gad_item(loss));
        gad_scope_end();
    }
    double wv = gad_item(w), bv = gad_item(b);
    printf("w = %.4f  b = %.4f\n", wv, bv);
    gad_release(x), gad_release(y), gad_release(w), gad_release(b);
    return fabs(wv - 2) < 1e-3 && fabs(bv - 1) < 1e-3 ? 0 : 1;
}
