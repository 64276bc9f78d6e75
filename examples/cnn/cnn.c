/* cnn.c: a small residual convolutional network (issue 28), a tutorial.
 *
 * What it shows: convolutions (gad_conv2d), batch norm as a layer of a
 * parameter set (gad_batch_norm_params / gad_batch_norm_layer, with
 * PyTorch's names and its running statistics as buffers), ReLU, max and
 * global average pooling, residual additions, training with AdamW,
 * evaluation with the running statistics, and the conventions of
 * helix_lm: a progress line per epoch, metrics.csv, an SVG plot of the
 * losses and accuracies (loss.svg), and an atomic checkpoint
 * (checkpoint.safetensors: the parameters and the buffers) that is loaded
 * back into a fresh model at the end and must give the same accuracy.
 *
 * The network, for an input [N, Cin, H, W]:
 *     stem   conv3x3 Cin->16, BN, ReLU
 *     block1 conv3x3 16->16, BN, ReLU, conv3x3 16->16, BN, + stem, ReLU
 *     pool   max 2x2
 *     block2 conv3x3 16->32, BN, ReLU, conv3x3 32->32, BN,
 *            + (conv1x1 16->32, BN) of the block's input, ReLU
 *     head   global average pool, linear 32->classes
 *
 * Data:
 *   digits     data/digits.csv.gz, 1797 8x8 images, the split of
 *              examples/digits.c (a seeded sampler: 1437 train, 360 test).
 *   synthetic  CIFAR-shaped 3x32x32 images made here: 10 classes of
 *              oriented stripes (orientation = class), random frequency,
 *              phase, colours and noise, so that every class has the same
 *              mean colour and brightness and only spatial structure
 *              separates them. 5000 train, 1000 test.
 *
 * Usage: cnn [--quick] [--data digits|synthetic] [--epochs N] [--dir DIR]
 *            [--threads N] [--bench STEPS]
 *   --quick   a short run (ctest): digits, 4 epochs, asserts >= 95%.
 *   --bench   time STEPS training steps on the synthetic set (batch 32) and
 *             print one line "bench ms_median peak_rss_mb" (bench/cnn_torch.py),
 *             then the same as JSON lines, workload W9 (bench/compare).
 *
 * Success: digits, full run: test accuracy >= 98.5% (the note in
 * docs/SPEC.md gives the figure); --quick: >= 95%. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "gad.h"
#include "util.h" /* helix_lm's: fail, now_seconds, join_path, make_dirs, write_atomic */

/* The program name util.c's messages start with (a model of helix_lm's
 * program names itself the same way). */
const char lm_name[] = "cnn";

#define SEED 2024
#define C1 16
#define C2 32
#define BATCH 32

/* ------------------------------------------------------------------ data */

typedef struct dataset {
    gad_tensor *x_train, *y_train, *x_test, *y_test; /* [N, C, H, W] f32, [N] i64 */
    int64_t cin, classes;
} dataset;

static int gad_ok(const char *what) {
    const gad_error *e = gad_last_error();
    if (!e) return 0;
    return fail("%s: %s", what, e->text);
}

/* digits.c's data and split: pixels / 16 as [N, 1, 8, 8]. */
static int load_digits(const char *path, dataset *d) {
    enum { NROWS = 1797, NTRAIN = 1437, NPIX = 64 };
    gad_scope_begin();
    gad_tensor *t = gad_read_csv(path, NULL);
    if (t && (gad_dim(t, 0) != NROWS || gad_dim(t, 1) != NPIX + 1)) {
        gad_scope_end();
        return fail("%s is not the digits set", path);
    }
    gad_tensor *px = gad_slice(t, (gad_range[]){GAD_ALL, GAD_RANGE(0, NPIX)}, 2);
    gad_tensor *xs = gad_reshape(gad_mul_scalar(px, 1.0 / 16), (int64_t[]){NROWS, 1, 8, 8}, 4);
    gad_tensor *ys = gad_cast(gad_select(t, 1, NPIX), GAD_I64);
    gad_sampler *split = gad_sampler_new(NROWS, NTRAIN, SEED, NULL);
    gad_tensor *train = NULL, *test = NULL;
    if (split && gad_sampler_next(split, &train) == 1 && gad_sampler_next(split, &test) == 1) {
        d->x_train = gad_keep(gad_index_select(xs, 0, train));
        d->y_train = gad_keep(gad_index_select(ys, 0, train));
        d->x_test = gad_keep(gad_index_select(xs, 0, test));
        d->y_test = gad_keep(gad_index_select(ys, 0, test));
    }
    gad_sampler_free(split); /* train and test are the scope's */
    gad_scope_end();
    d->cin = 1;
    d->classes = 10;
    return gad_ok("loading digits");
}

/* xorshift64*: the synthetic set's own generator (fast, and the set is the
 * same on every machine) */
static uint64_t rnd_state;
static double rnd(void) {
    rnd_state ^= rnd_state >> 12;
    rnd_state ^= rnd_state << 25;
    rnd_state ^= rnd_state >> 27;
    return (double)((rnd_state * 2685821657736338717ull) >> 11) * 0x1.0p-53;
}

/* n images 3x32x32 of oriented stripes and their classes. */
static void make_stripes(int64_t n, float *x, int64_t *y) {
    const double pi = 3.14159265358979323846;
    for (int64_t i = 0; i < n; i++) {
        int cls = (int)(rnd() * 10) % 10;
        double th = cls * pi / 10 + (rnd() - 0.5) * 0.12; /* 18 degrees apart */
        double f = 2 * pi * (0.12 + 0.1 * rnd()), ph = 2 * pi * rnd();
        double c, s = sin(th);
        c = cos(th);
        double col[3], base[3];
        for (int k = 0; k < 3; k++) col[k] = 0.3 + 0.7 * rnd(), base[k] = 0.5 * rnd() - 0.25;
        for (int k = 0; k < 3; k++)
            for (int r = 0; r < 32; r++)
                for (int q = 0; q < 32; q++) {
                    double v = sin(f * (c * q + s * r) + ph);
                    x[((i * 3 + k) * 32 + r) * 32 + q] =
                        (float)(base[k] + col[k] * v + 0.35 * (rnd() - 0.5));
                }
        y[i] = cls;
    }
}

static int make_synthetic(dataset *d, int64_t ntrain, int64_t ntest) {
    rnd_state = 0x9E3779B97F4A7C15ull ^ SEED;
    int64_t n[2] = {ntrain, ntest};
    gad_tensor **xs[2] = {&d->x_train, &d->x_test}, **ys[2] = {&d->y_train, &d->y_test};
    for (int k = 0; k < 2; k++) {
        float *x = malloc((size_t)n[k] * 3 * 32 * 32 * sizeof *x);
        int64_t *y = malloc((size_t)n[k] * sizeof *y);
        if (!x || !y) {
            free(x), free(y);
            return fail("out of memory making the synthetic set");
        }
        make_stripes(n[k], x, y);
        *xs[k] = gad_from_f32(x, (int64_t[]){n[k], 3, 32, 32}, 4);
        *ys[k] = gad_from_i64(y, &n[k], 1);
        free(x), free(y);
    }
    d->cin = 3;
    d->classes = 10;
    return gad_ok("making the synthetic set");
}

/* ----------------------------------------------------------------- model */

/* A conv weight [cout, cin, k, k], He-normal (fan_in = cin k k), as a
 * parameter named name. */
static int add_conv(gad_params *ps, const char *name, int64_t cout, int64_t cin, int64_t k,
                    uint64_t seed) {
    gad_scope_begin();
    gad_tensor *w = gad_mul_scalar(gad_randn((int64_t[]){cout, cin, k, k}, 4, seed),
                                   sqrt(2.0 / (double)(cin * k * k)));
    gad_params_add(ps, name, gad_contiguous(w));
    gad_scope_end();
    return gad_ok(name);
}

static gad_params *model_new(int64_t cin, int64_t classes) {
    gad_params *ps = gad_params_new();
    static const struct {
        const char *conv, *bn;
        int64_t cout, cin, k;
    } convs[] = {{"stem.conv.weight", "stem.bn", C1, 0, 3},
                 {"block1.conv1.weight", "block1.bn1", C1, C1, 3},
                 {"block1.conv2.weight", "block1.bn2", C1, C1, 3},
                 {"block2.conv1.weight", "block2.bn1", C2, C1, 3},
                 {"block2.conv2.weight", "block2.bn2", C2, C2, 3},
                 {"block2.skip.weight", "block2.skip_bn", C2, C1, 1}};
    int rc = ps ? 0 : -1;
    for (int i = 0; rc == 0 && i < 6; i++) {
        int64_t in = convs[i].cin ? convs[i].cin : cin;
        rc = add_conv(ps, convs[i].conv, convs[i].cout, in, convs[i].k, 100 + (uint64_t)i);
        if (rc == 0 && gad_batch_norm_params(ps, convs[i].bn, convs[i].cout, GAD_F32, 1, 1) != GAD_OK)
            rc = gad_ok(convs[i].bn);
    }
    if (rc == 0) {
        gad_scope_begin();
        gad_params_add(ps, "head.weight",
                       gad_contiguous(gad_mul_scalar(gad_randn((int64_t[]){C2, classes}, 2, 200),
                                                     1.0 / sqrt((double)C2))));
        gad_params_add(ps, "head.bias", gad_zeros(&classes, 1, GAD_F32));
        gad_scope_end();
        rc = gad_ok("head");
    }
    if (rc) {
        gad_params_free(ps);
        return NULL;
    }
    return ps;
}

static const gad_conv_opts pad1 = {.padding = {1, 1}};

/* conv (3x3, padding 1, or 1x1) then batch norm, in training or evaluation */
static gad_tensor *conv_bn(gad_params *ps, gad_tensor *x, const char *conv, const char *bn,
                           int k, int training) {
    gad_tensor *y = gad_conv2d(x, gad_params_get(ps, conv), NULL, k == 3 ? &pad1 : NULL);
    return gad_batch_norm_layer(ps, bn, y, training, 0.1, 1e-5);
}

/* logits [N, classes] */
static gad_tensor *forward(gad_params *ps, gad_tensor *x, int training) {
    gad_tensor *h = gad_relu(conv_bn(ps, x, "stem.conv.weight", "stem.bn", 3, training));
    gad_tensor *r = gad_relu(conv_bn(ps, h, "block1.conv1.weight", "block1.bn1", 3, training));
    r = conv_bn(ps, r, "block1.conv2.weight", "block1.bn2", 3, training);
    h = gad_relu(gad_add(r, h));
    h = gad_max_pool2d(h, &(gad_pool_opts){.kernel = {2, 2}}, NULL);
    r = gad_relu(conv_bn(ps, h, "block2.conv1.weight", "block2.bn1", 3, training));
    r = conv_bn(ps, r, "block2.conv2.weight", "block2.bn2", 3, training);
    gad_tensor *skip = conv_bn(ps, h, "block2.skip.weight", "block2.skip_bn", 1, training);
    h = gad_relu(gad_add(r, skip));
    h = gad_reshape(gad_adaptive_avg_pool2d(h, 1, 1), (int64_t[]){gad_dim(x, 0), C2}, 2);
    return gad_linear(h, gad_params_get(ps, "head.weight"), gad_params_get(ps, "head.bias"));
}

/* Accuracy (%) and mean loss on x, y in evaluation mode (running
 * statistics), in chunks of 200. */
static int evaluate(gad_params *ps, gad_tensor *x, gad_tensor *y, double *acc, double *loss) {
    int64_t n = gad_dim(x, 0), right = 0;
    double lsum = 0;
    gad_no_grad_begin();
    for (int64_t s = 0; s < n; s += 200) {
        int64_t e = s + 200 < n ? s + 200 : n;
        gad_scope_begin();
        gad_range r[1] = {GAD_RANGE(s, e)};
        gad_tensor *logits = forward(ps, gad_slice(x, r, 1), 0);
        gad_tensor *yy = gad_slice(y, r, 1);
        gad_tensor *l = gad_cross_entropy(logits, yy, GAD_REDUCE_SUM);
        int64_t guess[200], truth[200];
        if (l && gad_read_i64(gad_argmax(logits, -1, 0), guess, 200) == GAD_OK &&
            gad_read_i64(yy, truth, 200) == GAD_OK) {
            lsum += gad_item(l);
            for (int64_t i = 0; i < e - s; i++) right += guess[i] == truth[i];
        }
        gad_scope_end();
    }
    gad_no_grad_end();
    *acc = 100.0 * (double)right / (double)n;
    *loss = lsum / (double)n;
    return gad_ok("evaluation");
}

/* ------------------------------------------------------- metrics and plot */

typedef struct epoch_row {
    int epoch;
    double seconds, train_loss, test_loss, test_acc;
} epoch_row;

typedef struct run_log {
    epoch_row *rows;
    int n;
} run_log;

static int write_metrics(FILE *f, const void *ctx) {
    const run_log *lg = ctx;
    fprintf(f, "epoch,seconds,train_loss,test_loss,test_acc\n");
    for (int i = 0; i < lg->n; i++)
        fprintf(f, "%d,%.3f,%.6f,%.6f,%.3f\n", lg->rows[i].epoch, lg->rows[i].seconds,
                lg->rows[i].train_loss, lg->rows[i].test_loss, lg->rows[i].test_acc);
    return 0;
}

/* Losses (left axis, from 0) and test accuracy (right axis, 0..100%) by
 * epoch: three polylines on a 640x360 canvas. */
static int write_plot(FILE *f, const void *ctx) {
    const run_log *lg = ctx;
    const double W = 640, H = 360, L = 60, R = 60, T = 30, B = 40;
    double lmax = 1e-9;
    for (int i = 0; i < lg->n; i++)
        lmax = fmax(lmax, fmax(lg->rows[i].train_loss, lg->rows[i].test_loss));
    int last = lg->n > 1 ? lg->rows[lg->n - 1].epoch : 2;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
               "stroke=\"#888\"/>\n", L, T, W - L - R, H - T - B);
    fprintf(f, "<text x=\"%.0f\" y=\"20\">cnn: loss (left, 0..%.3g) and test accuracy "
               "(right, 0..100%%) by epoch</text>\n", L, lmax);
    static const char *colors[3] = {"#1f77b4", "#ff7f0e", "#2ca02c"};
    static const char *names[3] = {"train loss", "test loss", "test accuracy"};
    for (int k = 0; k < 3; k++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colors[k]);
        for (int i = 0; i < lg->n; i++) {
            const epoch_row *r = &lg->rows[i];
            double v = k == 0 ? r->train_loss / lmax : k == 1 ? r->test_loss / lmax : r->test_acc / 100;
            double px = L + (W - L - R) * (r->epoch - 1) / (double)(last > 1 ? last - 1 : 1);
            double py = H - B - (H - T - B) * fmin(fmax(v, 0), 1);
            fprintf(f, "%.1f,%.1f ", px, py);
        }
        fprintf(f, "\"/>\n<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s</text>\n", L + 10 + 120 * k,
                H - 10, colors[k], names[k]);
    }
    fprintf(f, "</svg>\n");
    return 0;
}

/* ------------------------------------------------------------- training */

static double peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

static double current_rss_mb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return (double)res * 4096.0 / (1024.0 * 1024.0);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One training step on rows of the training set: forward in training
 * mode (batch statistics, running ones updated), backward, AdamW. */
static double train_step(gad_params *ps, gad_optim *opt, const dataset *d, gad_tensor *rows) {
    gad_scope_begin();
    gad_tensor *x = gad_index_select(d->x_train, 0, rows);
    gad_tensor *y = gad_index_select(d->y_train, 0, rows);
    gad_tensor *loss = gad_cross_entropy(forward(ps, x, 1), y, GAD_REDUCE_MEAN);
    gad_tensor *grads[64];
    double l = NAN;
    if (gad_params_count(ps) <= 64 && gad_params_grad(ps, loss, grads) == GAD_OK &&
        gad_optim_step(opt, grads) == GAD_OK)
        l = gad_item(loss);
    gad_scope_end();
    return l;
}

/* --bench: the training step on the synthetic set, batch 32; prints the
 * median step time and the peak RSS above the RSS before the model. */
static int bench(int steps) {
    dataset d = {0};
    if (make_synthetic(&d, 512, 32)) return 1;
    double base = current_rss_mb();
    gad_params *ps = model_new(d.cin, d.classes);
    gad_optim *opt = ps ? gad_adamw_new_params(ps, NULL, 0, &(gad_adamw_opts){.lr = 1e-3}) : NULL;
    if (!opt) return gad_ok("model") ? 1 : 1;
    gad_sampler *batches = gad_sampler_new(512, BATCH, SEED + 1, NULL);
    double *ms = malloc((size_t)steps * sizeof *ms);
    int warm = 3;
    for (int s = 0; ms && s < steps + warm; s++) {
        gad_tensor *rows;
        if (gad_sampler_next(batches, &rows) != 1) {
            s--;
            continue; /* the end of an epoch: the sampler starts the next */
        }
        double t0 = now_seconds();
        double l = train_step(ps, opt, &d, rows);
        double dt = now_seconds() - t0;
        gad_release(rows);
        if (!isfinite(l)) return gad_ok("bench step") ? 1 : 1;
        if (s >= warm) ms[s - warm] = 1e3 * dt;
    }
    qsort(ms, (size_t)steps, sizeof *ms, cmp_double);
    double rss = peak_rss_mb() - base;
    printf("bench %.3f %.1f\n", ms[steps / 2], rss);
    /* the same as bench/compare's workload W9 */
    printf("{\"workload\": \"W9\", \"metric\": \"cnn_train_step_ms\", \"median\": %.4f, "
           "\"min\": %.4f, \"max\": %.4f, \"unit\": \"ms\", \"reps\": %d, \"threads\": %d, "
           "\"impl\": \"gad\"}\n",
           ms[steps / 2], ms[0], ms[steps - 1], steps, gad_num_threads());
    printf("{\"workload\": \"W9\", \"metric\": \"peak_rss_above_start_MiB\", \"median\": %.2f, "
           "\"min\": %.2f, \"max\": %.2f, \"unit\": \"MiB\", \"reps\": 1, \"threads\": %d, "
           "\"impl\": \"gad\"}\n",
           rss, rss, rss, gad_num_threads());
    free(ms);
    gad_sampler_free(batches);
    gad_optim_free(opt);
    gad_params_free(ps);
    return 0;
}

int main(int argc, char **argv) {
    const char *data = "digits", *dir = "cnn_run";
    int quick = 0, epochs = -1, threads = 0, bench_steps = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bench") && i + 1 < argc) bench_steps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: cnn [--quick] [--data digits|synthetic] [--epochs N] "
                            "[--dir DIR] [--threads N] [--bench STEPS]\n");
            return 2;
        }
    }
    if (threads > 0) gad_set_num_threads(threads);
    if (bench_steps > 0) return bench(bench_steps);
    int digits = strcmp(data, "synthetic") != 0;
    if (epochs <= 0) epochs = quick ? 4 : digits ? 15 : 10;
    if (quick && !strcmp(dir, "cnn_run")) dir = "cnn_run_quick";
    double goal = !digits ? 0 : quick ? 95.0 : 98.5;

    dataset d = {0};
    if (digits ? load_digits(GAD_DATA_DIR "/digits.csv.gz", &d) : make_synthetic(&d, 5000, 1000))
        return 1;
    if (make_dirs(dir)) return 1;
    char p_ckpt[4096], p_csv[4096], p_svg[4096];
    join_path(p_ckpt, sizeof p_ckpt, dir, "checkpoint.safetensors");
    join_path(p_csv, sizeof p_csv, dir, "metrics.csv");
    join_path(p_svg, sizeof p_svg, dir, "loss.svg");

    gad_params *ps = model_new(d.cin, d.classes);
    if (!ps) return 1;
    /* AdamW with a cosine schedule; no weight decay on batch norm's weight
     * and bias nor the head's bias */
    gad_param_group nodecay[2] = {{.match = "*bn*", .no_weight_decay = 1},
                                  {.match = "*.bias", .no_weight_decay = 1}};
    double lr0 = 3e-3;
    gad_optim *opt = gad_adamw_new_params(ps, nodecay, 2, &(gad_adamw_opts){.lr = lr0});
    if (!opt) return gad_ok("optimizer") ? 1 : 1;
    int64_t ntrain = gad_dim(d.x_train, 0);
    gad_sampler *batches = gad_sampler_new(ntrain, BATCH, SEED + 1, NULL);
    int64_t steps_per_epoch = (ntrain + BATCH - 1) / BATCH, total = steps_per_epoch * epochs;
    printf("cnn: %s, %lld train / %lld test images [%lld,%lld,%lld], %lld parameters, "
           "%d epochs of %lld steps, %d threads\n",
           digits ? "digits" : "synthetic stripes", (long long)ntrain,
           (long long)gad_dim(d.x_test, 0), (long long)gad_dim(d.x_train, 1),
           (long long)gad_dim(d.x_train, 2), (long long)gad_dim(d.x_train, 3),
           (long long)gad_params_numel(ps), epochs, (long long)steps_per_epoch,
           gad_num_threads());

    run_log lg = {calloc((size_t)epochs, sizeof(epoch_row)), 0};
    double t0 = now_seconds(), acc = 0, tloss = 0;
    int64_t step = 0;
    for (int epoch = 1; epoch <= epochs && lg.rows; epoch++) {
        double lsum = 0;
        int nb = 0;
        gad_tensor *rows;
        while (gad_sampler_next(batches, &rows) == 1) {
            double lr = 0.5 * lr0 * (1 + cos(3.14159265358979 * (double)step / (double)total));
            gad_optim_set_lr(opt, lr);
            double l = train_step(ps, opt, &d, rows);
            gad_release(rows);
            if (!isfinite(l)) return gad_ok("training step") ? 1 : 1;
            lsum += l, nb++, step++;
        }
        if (evaluate(ps, d.x_test, d.y_test, &acc, &tloss)) return 1;
        epoch_row r = {epoch, now_seconds() - t0, lsum / nb, tloss, acc};
        lg.rows[lg.n++] = r;
        printf("epoch %2d/%d  train loss %.4f  test loss %.4f  test acc %.2f%%  %.1f s\n", epoch,
               epochs, r.train_loss, r.test_loss, r.test_acc, r.seconds);
        fflush(stdout);
        /* each epoch: the model (parameters and buffers) and the logs, each
         * file written whole or not at all */
        if (gad_params_save(ps, p_ckpt) != GAD_OK) return gad_ok("checkpoint") ? 1 : 1;
        if (write_atomic(p_csv, write_metrics, &lg) || write_atomic(p_svg, write_plot, &lg))
            return 1;
    }

    /* The checkpoint into a fresh model (strict: every name, dtype and
     * shape, the buffers included) must give the same accuracy. */
    gad_params *again = model_new(d.cin, d.classes);
    double acc2 = -1, loss2;
    gad_params_load_info info;
    if (!again || gad_params_load(again, p_ckpt, 1, &info) != GAD_OK ||
        evaluate(again, d.x_test, d.y_test, &acc2, &loss2))
        return gad_ok("reloading the checkpoint") ? 1 : 1;
    printf("checkpoint %s: %d tensors (%d buffers) reloaded, test acc %.2f%%\n", p_ckpt,
           info.loaded, gad_params_buffer_count(again), acc2);
    printf("test accuracy %.2f%% after %d epochs in %.1f s; metrics in %s, plot in %s\n", acc,
           epochs, now_seconds() - t0, p_csv, p_svg);

    gad_params_free(again);
    gad_sampler_free(batches);
    gad_optim_free(opt);
    gad_params_free(ps);
    free(lg.rows);
    gad_tensor *ts[4] = {d.x_train, d.y_train, d.x_test, d.y_test};
    for (int i = 0; i < 4; i++) gad_release(ts[i]);
    if (acc2 != acc) return fail("the reloaded model gives %.2f%%, not %.2f%%", acc2, acc) ? 1 : 1;
    if (acc < goal) return fail("FAILED: test accuracy %.2f%% is below %.1f%%", acc, goal) ? 1 : 1;
    if (goal > 0) printf("ok: test accuracy >= %.1f%%\n", goal);
    return 0;
}
