/* digits.c: classify real handwritten digits (SPEC 6.12).
 *
 * The UCI "Optical Recognition of Handwritten Digits" set: 1797 images of
 * 8x8 pixels (0..16) with their labels 0..9, one per line of a gzipped CSV
 * (gad_read_csv reads it, plain or gzip). A seeded sampler splits it into
 * 1437 training and 360 test images. A 64 -> 128 ReLU -> 10 network is
 * trained with cross-entropy and AdamW on shuffled minibatches (another
 * sampler), on one thread.
 *
 * It shows a complete small supervised-learning program: loading data,
 * a train/test split, minibatches picked by index (gad_index_select, the
 * labels as integers), a named parameter set and an optimizer over it with
 * a parameter group (no weight decay on the biases), several epochs, and
 * evaluation with gradients off (gad_no_grad_begin).
 *
 * Usage: digits [--quick] [path/to/digits.csv.gz]
 * (--quick is accepted and ignored: the full run takes well under a second.)
 *
 * Success: test accuracy >= 96% within 10 s of wall time on one core. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gad.h"

#define NROWS 1797
#define NTRAIN 1437
#define NTEST (NROWS - NTRAIN)
#define NPIX 64
#define NHIDDEN 128
#define NCLASS 10
#define BATCH 32
#define EPOCHS 20
#define SEED 2024

static void check(int ok) {
    if (!ok || gad_last_error()) {
        const gad_error *e = gad_last_error();
        fprintf(stderr, "digits: %s\n", e ? e->text : "unexpected NULL");
        exit(1);
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The CSV as pixels x [N, 64] scaled to [0, 1] and labels y [N] (i64),
 * both kept by the caller. 0, or -1 with a message. */
static int load_digits(const char *path, gad_tensor **x, gad_tensor **y) {
    gad_scope_begin();
    gad_tensor *t = gad_read_csv(path, NULL); /* [N, 65] f32: 64 pixels, a label */
    if (t && (gad_dim(t, 0) != NROWS || gad_dim(t, 1) != NPIX + 1)) {
        fprintf(stderr, "digits: %s is [%lld, %lld], expected [%d, %d]\n", path,
                (long long)gad_dim(t, 0), (long long)gad_dim(t, 1), NROWS, NPIX + 1);
        gad_scope_end();
        return -1;
    }
    gad_tensor *px = gad_slice(t, (gad_range[]){GAD_ALL, GAD_RANGE(0, NPIX)}, 2);
    *x = gad_keep(gad_contiguous(gad_mul_scalar(px, 1.0 / 16)));
    *y = gad_keep(gad_cast(gad_select(t, 1, NPIX), GAD_I64)); /* whole numbers */
    gad_scope_end();
    if (!*x || !*y) {
        fprintf(stderr, "digits: %s\n", gad_last_error() ? gad_last_error()->text : "?");
        return -1;
    }
    return 0;
}

/* randn(shape, seed) * scale. */
static gad_tensor *weight(int64_t in, int64_t out, uint64_t seed, double scale) {
    return gad_mul_scalar(gad_randn((int64_t[]){in, out}, 2, seed), scale);
}

static gad_tensor *bias(int64_t out) { return gad_zeros((int64_t[]){out}, 1, GAD_F32); }

int main(int argc, char **argv) {
    const char *path = GAD_DATA_DIR "/digits.csv.gz";
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--quick") != 0) path = argv[i];

    gad_set_num_threads(1); /* the criterion is for one core */
    double t0 = now();      /* the whole run is timed, loading included */

    gad_tensor *xs, *ys; /* all images [1797, 64] and labels [1797] */
    if (load_digits(path, &xs, &ys) != 0) return 1;

    /* A fixed split: one epoch of a seeded sampler over the row numbers in
     * batches of 1437, whose first batch is the training set and whose
     * second (360 rows) the test set. Rows are picked with index_select:
     * the labels stay integers. */
    gad_sampler *split = gad_sampler_new(NROWS, NTRAIN, SEED, NULL);
    gad_tensor *train_rows = NULL, *test_rows = NULL;
    check(split && gad_sampler_next(split, &train_rows) == 1 &&
          gad_sampler_next(split, &test_rows) == 1);
    gad_tensor *x_train = gad_index_select(xs, 0, train_rows);
    gad_tensor *y_train = gad_index_select(ys, 0, train_rows);
    gad_tensor *x_test = gad_index_select(xs, 0, test_rows);
    gad_tensor *y_test = gad_index_select(ys, 0, test_rows);
    check(x_train && y_train && x_test && y_test);
    gad_sampler_free(split);

    /* 64 -> 128 ReLU -> 10, He-scaled normal weights, zero biases, in a
     * set that owns them once the scope ends. AdamW decays the weights
     * (its default 0.01) but not the biases ("*.b"). */
    gad_params *ps = gad_params_new();
    gad_scope_begin();
    gad_tensor *w1 = gad_params_add(ps, "l1.w", weight(NPIX, NHIDDEN, 1, sqrt(2.0 / NPIX)));
    gad_tensor *b1 = gad_params_add(ps, "l1.b", bias(NHIDDEN));
    gad_tensor *w2 = gad_params_add(ps, "l2.w", weight(NHIDDEN, NCLASS, 2, sqrt(1.0 / NHIDDEN)));
    gad_tensor *b2 = gad_params_add(ps, "l2.b", bias(NCLASS));
    gad_scope_end();
    check(w1 && b1 && w2 && b2);
    gad_param_group biases = {.match = "*.b", .no_weight_decay = 1};
    gad_optim *adamw = gad_adamw_new_params(ps, &biases, 1, &(gad_adamw_opts){.lr = 3e-3});
    check(adamw != NULL);

    /* Minibatches of 32 training rows, a new order every epoch (the last
     * batch of each epoch has the 29 rows left). */
    gad_sampler *batches = gad_sampler_new(NTRAIN, BATCH, SEED + 1, NULL);
    check(batches != NULL);
    for (int epoch = 0; epoch < EPOCHS; epoch++) {
        double loss_sum = 0;
        int nbatch = 0;
        gad_tensor *rows;
        int more;
        while ((more = gad_sampler_next(batches, &rows)) == 1) {
            gad_scope_begin();
            gad_tensor *x = gad_index_select(x_train, 0, rows);
            gad_tensor *y = gad_index_select(y_train, 0, rows);
            gad_tensor *h = gad_relu(gad_linear(x, w1, b1));
            gad_tensor *loss =
                gad_cross_entropy(gad_linear(h, w2, b2), y, GAD_REDUCE_MEAN);
            gad_tensor *grads[4];
            check(gad_params_grad(ps, loss, grads) == GAD_OK);
            check(gad_optim_step(adamw, grads) == GAD_OK);
            loss_sum += gad_item(loss);
            nbatch++;
            gad_scope_end();
            gad_release(rows); /* made outside any scope: ours */
        }
        check(more == 0);
        if (epoch % 5 == 4 || epoch == 0)
            printf("epoch %2d  train loss %.4f\n", epoch + 1, loss_sum / nbatch);
    }
    gad_sampler_free(batches);

    /* Evaluate on the held-out images; no tape is needed for that. */
    gad_no_grad_begin();
    gad_scope_begin();
    gad_tensor *logits = gad_linear(gad_relu(gad_linear(x_test, w1, b1)), w2, b2);
    int64_t guess[NTEST], truth[NTEST];
    check(gad_read_i64(gad_argmax(logits, -1, 0), guess, NTEST) == GAD_OK &&
          gad_read_i64(y_test, truth, NTEST) == GAD_OK);
    int right = 0;
    for (int i = 0; i < NTEST; i++) right += guess[i] == truth[i];
    gad_scope_end();
    gad_no_grad_end();
    double secs = now() - t0;

    double acc = 100.0 * right / NTEST;
    printf("test accuracy %.2f%% (%d/%d) in %.2f s on %d thread\n", acc, right, NTEST,
           secs, gad_num_threads());

    gad_optim_free(adamw);
    gad_params_free(ps);
    gad_tensor *data[8] = {xs, ys, train_rows, test_rows, x_train, y_train, x_test, y_test};
    for (int i = 0; i < 8; i++) gad_release(data[i]);

    int ok = 1;
    if (!(acc >= 96.0)) {
        fprintf(stderr, "digits: FAILED: test accuracy %.2f%% is below 96%%\n", acc);
        ok = 0;
    }
    if (!(secs < 10.0)) {
        fprintf(stderr, "digits: FAILED: %.2f s is not under 10 s\n", secs);
        ok = 0;
    }
    if (!ok) return 1;
    printf("ok: test accuracy >= 96%% in under 10 s\n");
    return 0;
}
