/* classify_blobs.c: three-class classification of 60 points in the plane
 * with a 2 -> 16 ReLU -> 3 network, cross-entropy and SGD (SPEC 6.6).
 *
 * It shows class labels as an i64 tensor, gad_cross_entropy on raw logits
 * (it applies log_softmax itself) and accuracy through gad_argmax.
 *
 * Success: 60/60 correct at step 40 and a loss below 0.2 at step 60. */
#include <stdio.h>
#include <stdlib.h>

#include "gad.h"

#define NPOINTS 60

static void check(int ok) {
    if (!ok || gad_last_error()) {
        const gad_error *e = gad_last_error();
        fprintf(stderr, "classify_blobs: %s\n", e ? e->text : "unexpected NULL");
        exit(1);
    }
}

/* randn(shape, seed) * scale as a leaf the caller owns. */
static gad_tensor *weight(int64_t in, int64_t out, uint64_t seed, double scale) {
    gad_scope_begin();
    gad_tensor *w =
        gad_keep(gad_mul_scalar(gad_randn((int64_t[]){in, out}, 2, seed), scale));
    gad_scope_end();
    return gad_requires_grad(w);
}

static gad_tensor *bias(int64_t out) {
    return gad_requires_grad(gad_zeros((int64_t[]){out}, 1, GAD_F32));
}

/* How many rows of logits have their first maximum at the label. */
static int correct(gad_tensor *logits, const int64_t *labels) {
    int64_t guess[NPOINTS];
    check(gad_read_i64(gad_argmax(logits, -1, 0), guess, NPOINTS) == GAD_OK);
    int k = 0;
    for (int i = 0; i < NPOINTS; i++) k += guess[i] == labels[i];
    return k;
}

int main(void) {
    /* Three blobs side by side, 20 points each: class c sits around x = c - 1;
     * n is a deterministic "noise" in [-0.5, 0.5). */
    float pts[NPOINTS * 2];
    int64_t labels[NPOINTS];
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 20; i++) {
            int r = c * 20 + i;
            float n = (float)((17 * i + 9 * c) % 11) / 11.0f - 0.5f;
            pts[2 * r] = (float)(c - 1) + 0.3f * n;
            pts[2 * r + 1] = n;
            labels[r] = c;
        }
    gad_tensor *x = gad_from_f32(pts, (int64_t[]){NPOINTS, 2}, 2);
    gad_tensor *y = gad_from_i64(labels, (int64_t[]){NPOINTS}, 1);

    gad_tensor *w1 = weight(2, 16, 1, 0.4), *b1 = bias(16);
    gad_tensor *w2 = weight(16, 3, 2, 0.4), *b2 = bias(3);
    gad_tensor *params[4] = {w1, b1, w2, b2};
    check(x && y && w1 && b1 && w2 && b2);

    gad_optim *sgd = gad_sgd_new(params, 4, &(gad_sgd_opts){.lr = 0.15});
    check(sgd != NULL);

    int acc_at_40 = -1;
    double loss_at_60 = -1;
    for (int step = 0; step < 80; step++) {
        gad_scope_begin();
        gad_tensor *h = gad_relu(gad_linear(x, w1, b1));
        gad_tensor *logits = gad_linear(h, w2, b2); /* [60, 3] */
        gad_tensor *loss = gad_cross_entropy(logits, y, GAD_REDUCE_MEAN);
        gad_tensor *grads[4];
        check(gad_grad(loss, params, 4, grads) == GAD_OK);
        if (step % 20 == 0) {
            /* Loss and accuracy of the parameters before this step's update. */
            double l = gad_item(loss);
            int k = correct(logits, labels);
            printf("step %d loss %.4f acc %d/%d\n", step, l, k, NPOINTS);
            if (step == 40) acc_at_40 = k;
            if (step == 60) loss_at_60 = l;
        }
        check(gad_optim_step(sgd, grads) == GAD_OK);
        gad_scope_end();
    }

    gad_optim_free(sgd);
    for (int i = 0; i < 4; i++) gad_release(params[i]);
    gad_release(x), gad_release(y);

    int ok = 1;
    if (acc_at_40 != NPOINTS) {
        fprintf(stderr,
                "classify_blobs: FAILED: accuracy at step 40 is %d/%d, not %d/%d\n",
                acc_at_40, NPOINTS, NPOINTS, NPOINTS);
        ok = 0;
    }
    if (!(loss_at_60 < 0.2)) {
        fprintf(stderr,
                "classify_blobs: FAILED: loss at step 60 is %.4f, not below 0.2\n",
                loss_at_60);
        ok = 0;
    }
    if (!ok) return 1;
    printf("ok: %d/%d at step 40, loss %.4f < 0.2 at step 60\n", acc_at_40, NPOINTS,
           loss_at_60);
    return 0;
}
