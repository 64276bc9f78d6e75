/* attention_toy.c: single-head self-attention over two tokens, trained by
 * SGD to map a fixed input to a fixed target (SPEC 6.3).
 *
 *     q, k, v = x wq, x wk, x wv
 *     att     = softmax(q k^T / 2, over the keys)      (1/2 = 1/sqrt(d), d = 4)
 *     y       = (att v) wo
 *
 * It shows gad_transpose, gad_softmax and gad_matmul on the tape: the
 * gradient flows back through the softmax into all four projections.
 *
 * Success: the loss decreases at every printed step. */
#include <stdio.h>
#include <stdlib.h>

#include "gad.h"

static void check(int ok) {
    if (!ok || gad_last_error()) {
        const gad_error *e = gad_last_error();
        fprintf(stderr, "attention_toy: %s\n", e ? e->text : "unexpected NULL");
        exit(1);
    }
}

/* A [4, 4] projection: randn(seed) * 0.3, made a leaf the caller owns. */
static gad_tensor *projection(uint64_t seed) {
    gad_scope_begin();
    gad_tensor *w = gad_keep(gad_mul_scalar(gad_randn((int64_t[]){4, 4}, 2, seed), 0.3));
    gad_scope_end();
    return gad_requires_grad(w);
}

int main(void) {
    const float xs[] = {0.2f, -0.1f, 0.4f, 0.3f, /* token 0 */
                        0.0f, -0.2f, 0.1f, 0.5f /* token 1 */};
    const float ts[] = {0.1f, 0.2f, -0.1f, 0.0f, 0.3f, -0.2f, 0.0f, 0.1f};
    gad_tensor *x = gad_from_f32(xs, (int64_t[]){2, 4}, 2);
    gad_tensor *target = gad_from_f32(ts, (int64_t[]){2, 4}, 2);

    gad_tensor *wq = projection(1), *wk = projection(2);
    gad_tensor *wv = projection(3), *wo = projection(4);
    gad_tensor *params[4] = {wq, wk, wv, wo};
    check(x && target && wq && wk && wv && wo);

    gad_optim *sgd = gad_sgd_new(params, 4, &(gad_sgd_opts){.lr = 0.05});
    check(sgd != NULL);

    double prev = 0;
    int ok = 1;
    for (int step = 0; step < 40; step++) {
        gad_scope_begin();
        /* No biases: gad_linear with b = NULL is x @ w. */
        gad_tensor *q = gad_linear(x, wq, NULL);
        gad_tensor *k = gad_linear(x, wk, NULL);
        gad_tensor *v = gad_linear(x, wv, NULL);
        /* scores[i][j]: how much token i attends to token j; each row of att
         * sums to 1. */
        gad_tensor *scores = gad_mul_scalar(gad_matmul(q, gad_transpose(k)), 0.5);
        gad_tensor *att = gad_softmax(scores, -1);
        gad_tensor *y = gad_linear(gad_matmul(att, v), wo, NULL);
        gad_tensor *loss = gad_mse_loss(y, target, GAD_REDUCE_MEAN);

        gad_tensor *grads[4];
        check(gad_grad(loss, params, 4, grads) == GAD_OK);
        double l = gad_item(loss);
        if (step % 10 == 0) {
            printf("step %d attn_mse %.5f\n", step, l);
            if (step > 0 && !(l < prev)) ok = 0;
            prev = l;
        }
        check(gad_optim_step(sgd, grads) == GAD_OK);
        gad_scope_end();
    }

    gad_optim_free(sgd);
    for (int i = 0; i < 4; i++) gad_release(params[i]);
    gad_release(x), gad_release(target);

    if (!ok) {
        fprintf(stderr, "attention_toy: FAILED: the loss did not decrease at every "
                        "printed step\n");
        return 1;
    }
    printf("ok: the loss decreased at every printed step (final %.5f)\n", prev);
    return 0;
}
