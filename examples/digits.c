/* digits.c: classify real handwritten digits (SPEC 6.12).
 *
 * The UCI "Optical Recognition of Handwritten Digits" set: 1797 images of
 * 8x8 pixels (0..16) with their labels 0..9, one per line of a gzipped CSV
 * (read with zlib). A fixed, seeded shuffle splits it into 1437 training
 * and 360 test images. A 64 -> 128 ReLU -> 10 network is trained with
 * cross-entropy and AdamW on shuffled minibatches, on one thread.
 *
 * It shows a complete small supervised-learning program: loading data,
 * a train/test split, minibatches, a named parameter set and an optimizer
 * over it with a parameter group (no weight decay on the biases), several
 * epochs, and evaluation with gradients off (gad_no_grad_begin).
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
#include <zlib.h>

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

/* Read NROWS lines of 64 pixels and a label. Pixels are scaled to [0, 1].
 * Returns 0 on success, -1 (with a message) on any problem. */
static int load_digits(const char *path, float *pixels, int64_t *labels) {
    gzFile f = gzopen(path, "rb");
    if (!f) {
        fprintf(stderr, "digits: cannot open %s\n", path);
        return -1;
    }
    char line[1024];
    int row = 0;
    while (gzgets(f, line, sizeof line)) {
        if (line[0] == '\n' || line[0] == '\0') continue;
        if (row == NROWS) {
            fprintf(stderr, "digits: %s has more than %d rows\n", path, NROWS);
            gzclose(f);
            return -1;
        }
        char *p = line;
        for (int k = 0; k <= NPIX; k++) {
            char *end;
            long v = strtol(p, &end, 10);
            int bad = end == p || (k < NPIX ? (v < 0 || v > 16 || *end != ',')
                                            : (v < 0 || v >= NCLASS));
            if (bad) {
                fprintf(stderr, "digits: %s: malformed row %d, field %d\n", path, row + 1,
                        k + 1);
                gzclose(f);
                return -1;
            }
            if (k < NPIX)
                pixels[row * NPIX + k] = (float)v / 16.0f;
            else
                labels[row] = v;
            p = end + 1;
        }
        row++;
    }
    gzclose(f);
    if (row != NROWS) {
        fprintf(stderr, "digits: %s has %d rows, expected %d\n", path, row, NROWS);
        return -1;
    }
    return 0;
}

/* Fisher-Yates shuffle of idx[0..n) with the seeded generator. */
static void shuffle(int *idx, int n, gad_rng *rng) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)gad_rng_int(rng, 0, i + 1);
        int t = idx[i];
        idx[i] = idx[j], idx[j] = t;
    }
}

/* Copy the rows rows[0..n) of pixels/labels into tensors x [n,64], y [n]. */
static void gather_rows(const float *pixels, const int64_t *labels, const int *rows,
                        int n, float *xbuf, int64_t *ybuf, gad_tensor **x,
                        gad_tensor **y) {
    for (int i = 0; i < n; i++) {
        memcpy(xbuf + (size_t)i * NPIX, pixels + (size_t)rows[i] * NPIX,
               NPIX * sizeof(float));
        ybuf[i] = labels[rows[i]];
    }
    *x = gad_from_f32(xbuf, (int64_t[]){n, NPIX}, 2);
    *y = gad_from_i64(ybuf, (int64_t[]){n}, 1);
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

    static float pixels[NROWS * NPIX], xbuf[NROWS * NPIX];
    static int64_t labels[NROWS], ybuf[NROWS];
    if (load_digits(path, pixels, labels) != 0) return 1;

    /* A fixed split: shuffle the row numbers with a seeded generator, then
     * the first 1437 are for training and the last 360 for testing. */
    gad_rng *rng = gad_rng_new(SEED);
    check(rng != NULL);
    int order[NROWS];
    for (int i = 0; i < NROWS; i++) order[i] = i;
    shuffle(order, NROWS, rng);
    int *train = order, *test = order + NTRAIN;

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

    for (int epoch = 0; epoch < EPOCHS; epoch++) {
        shuffle(train, NTRAIN, rng); /* a new minibatch order every epoch */
        double loss_sum = 0;
        int nbatch = 0;
        for (int start = 0; start < NTRAIN; start += BATCH) {
            int n = NTRAIN - start < BATCH ? NTRAIN - start : BATCH;
            gad_scope_begin();
            gad_tensor *x, *y;
            gather_rows(pixels, labels, train + start, n, xbuf, ybuf, &x, &y);
            gad_tensor *h = gad_relu(gad_linear(x, w1, b1));
            gad_tensor *loss =
                gad_cross_entropy(gad_linear(h, w2, b2), y, GAD_REDUCE_MEAN);
            gad_tensor *grads[4];
            check(gad_params_grad(ps, loss, grads) == GAD_OK);
            check(gad_optim_step(adamw, grads) == GAD_OK);
            loss_sum += gad_item(loss);
            nbatch++;
            gad_scope_end();
        }
        if (epoch % 5 == 4 || epoch == 0)
            printf("epoch %2d  train loss %.4f\n", epoch + 1, loss_sum / nbatch);
    }

    /* Evaluate on the held-out images; no tape is needed for that. */
    gad_no_grad_begin();
    gad_scope_begin();
    gad_tensor *x, *y;
    gather_rows(pixels, labels, test, NTEST, xbuf, ybuf, &x, &y);
    gad_tensor *logits = gad_linear(gad_relu(gad_linear(x, w1, b1)), w2, b2);
    int64_t guess[NTEST];
    check(gad_read_i64(gad_argmax(logits, -1, 0), guess, NTEST) == GAD_OK);
    int right = 0;
    for (int i = 0; i < NTEST; i++) right += guess[i] == ybuf[i];
    gad_scope_end();
    gad_no_grad_end();
    double secs = now() - t0;

    double acc = 100.0 * right / NTEST;
    printf("test accuracy %.2f%% (%d/%d) in %.2f s on %d thread\n", acc, right, NTEST,
           secs, gad_num_threads());

    gad_optim_free(adamw);
    gad_params_free(ps);
    gad_rng_free(rng);

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
