/* gpt_bench.c: gad's side of bench/gpt_torch.py, the gpt example's model
 * (examples/gpt/gpt_model.c, linked in) trained with AdamW at a constant
 * learning rate on data/kjv.txt.gz.
 *
 *   gpt-bench dump FILE  [size]   write the initial weights, the batches'
 *                                 offsets and the validation windows
 *                                 (safetensors) for the torch side
 *   gpt-bench time [size] [--steps N]   tokens/s: the median of N timed
 *                                 steps after 3 warm-up steps, and the
 *                                 median time of each phase (forward,
 *                                 backward, clip + AdamW)
 *   gpt-bench loss [size] [--steps N]   the validation loss after N steps
 *   gpt-bench suite [size] [--steps N]  time's tokens/s as the suite's W8
 *                                 line (bench/compare)
 *
 * size: --d D --layers L --batch B --seq T (the gpt example's defaults:
 * 256, 4, 16, 128), --threads N (2), --val-windows W (64). The model and
 * every batch are a function of these alone (seed 1), so gad and torch see
 * the same weights and bytes. One JSON line per figure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "data.h"
#include "gad.h"
#include "bench_util.h"
#include "model.h"
#include "util.h"

#define LR 1e-3

typedef struct bench {
    config c;
    dataset ds;
    model m;
    gad_optim *opt;
    int64_t *offsets; /* [steps, B] */
    int64_t steps;
} bench;


static double median(double *v, int64_t n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The offsets of every step's windows, as data.c's sample_batch draws them. */
static int make_offsets(bench *b) {
    const config *c = &b->c;
    b->offsets = alloc_array(b->steps * c->batch, sizeof *b->offsets);
    gad_rng *rng = gad_rng_new(1);
    if (!b->offsets || !rng) return fail("out of memory");
    for (int64_t s = 0; s < b->steps; s++) {
        gad_rng_seed(rng, mix64(mix64((uint64_t)c->seed ^ 0x6261746368ull) + (uint64_t)s));
        for (int64_t i = 0; i < c->batch; i++)
            b->offsets[s * c->batch + i] = gad_rng_int(rng, 0, b->ds.n_train - c->seq);
    }
    gad_rng_free(rng);
    return 0;
}

/* One training step; the phases' seconds into ph[3] when ph is not NULL. */
static int step(bench *b, int64_t s, double *ph) {
    const config *c = &b->c;
    int64_t B = c->batch, T = c->seq, n = B * T;
    int64_t *in = alloc_array(n, sizeof *in), *tg = alloc_array(n, sizeof *tg);
    if (!in || !tg) return free(in), free(tg), fail("out of memory");
    for (int64_t i = 0; i < B; i++)
        for (int64_t t = 0; t < T; t++) {
            int64_t o = b->offsets[s * B + i] + t;
            in[i * T + t] = b->ds.bytes[o];
            tg[i * T + t] = b->ds.bytes[o + 1];
        }
    int rc = 0;
    gad_tensor **g = calloc((size_t)b->m.np, sizeof *g);
    gad_scope_begin();
    double t0 = now_seconds();
    gad_tensor *loss = model_loss(&b->m, in, tg, B, T);
    double t1 = now_seconds();
    if (!loss || !g || gad_grad(loss, b->m.params, b->m.np, g) != GAD_OK) rc = -1;
    double t2 = now_seconds();
    if (rc == 0) gad_clip_grad_norm(g, b->m.np, c->clip);
    if (rc == 0 && gad_optim_step(b->opt, g) != GAD_OK) rc = -1;
    double t3 = now_seconds();
    gad_scope_end();
    if (ph) ph[0] = t1 - t0, ph[1] = t2 - t1, ph[2] = t3 - t2;
    free(g), free(in), free(tg);
    return rc == 0 ? 0 : fail_gad("the training step failed");
}

/* Write the weights (their names), "batch.offsets" and "val.offsets". */
static int dump(bench *b, const char *path) {
    const config *c = &b->c;
    int np = b->m.np, k = 0;
    const char **names = calloc((size_t)np + 2, sizeof *names);
    gad_tensor **ts = calloc((size_t)np + 2, sizeof *ts);
    int64_t *val = alloc_array(c->val_windows, sizeof *val);
    if (!names || !ts || !val) return free(names), free(ts), free(val), fail("out of memory");
    for (int64_t i = 0; i < c->val_windows; i++)
        val[i] = val_window_start(&b->ds, i, c->val_windows, c->seq);
    gad_scope_begin();
    for (; k < np; k++) names[k] = gad_params_name(b->m.ps, k), ts[k] = b->m.params[k];
    names[k] = "batch.offsets";
    ts[k++] = gad_from_i64(b->offsets, (int64_t[]){b->steps, c->batch}, 2);
    names[k] = "val.offsets";
    ts[k++] = gad_from_i64(val, (int64_t[]){c->val_windows}, 1);
    int rc = gad_save(path, names, ts, k) == GAD_OK ? 0 : fail_gad("cannot write the dump");
    gad_scope_end();
    free(names), free(ts), free(val);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: gpt-bench dump FILE|time|loss|suite [--d D --layers L --batch B "
                        "--seq T --steps N --threads N --val-windows W]\n");
        return 2;
    }
    const char *mode = argv[1], *path = NULL;
    int first = 2, suite = !strcmp(mode, "suite");
    if (suite) mode = "time";
    if (!strcmp(mode, "dump")) {
        if (argc < 3) return fail("dump needs a file"), 2;
        path = argv[2], first = 3;
    }
    bench b;
    memset(&b, 0, sizeof b);
    b.c = default_config();
    b.c.lr = LR, b.c.threads = 2, b.c.val_windows = 64;
    b.steps = !strcmp(mode, "time") ? 20 : 200;
    for (int i = first; i + 1 < argc; i += 2) {
        const char *o = argv[i];
        long long v = atoll(argv[i + 1]);
        if (!strcmp(o, "--d")) b.c.d = v;
        else if (!strcmp(o, "--layers")) b.c.layers = v;
        else if (!strcmp(o, "--batch")) b.c.batch = v;
        else if (!strcmp(o, "--seq")) b.c.seq = v;
        else if (!strcmp(o, "--steps")) b.steps = v;
        else if (!strcmp(o, "--threads")) b.c.threads = v;
        else if (!strcmp(o, "--val-windows")) b.c.val_windows = v;
        else return fail("unknown option %s", o), 2;
    }
    if (!strcmp(mode, "time")) b.steps += 3; /* the warm-up steps */
    gad_set_num_threads((int)b.c.threads);
    if (load_text(b.c.data, &b.ds) != 0 || make_offsets(&b) != 0 ||
        model_init(&b.m, b.c.d, b.c.layers, (uint64_t)b.c.seed) != 0 ||
        model_init_output_bias(&b.m, b.ds.bytes, b.ds.n_train) != 0)
        return 1;
    int rc = 0;
    if (path) {
        rc = dump(&b, path);
    } else {
        b.opt = model_optimizer(&b.m, &b.c);
        if (!b.opt) return fail_gad("optimizer"), 1;
        double *dt = alloc_array(b.steps, sizeof *dt), *ph[3];
        for (int p = 0; p < 3; p++) ph[p] = alloc_array(b.steps, sizeof *ph[p]);
        int64_t nt = 0;
        for (int64_t s = 0; s < b.steps && rc == 0; s++) {
            double t0 = now_seconds(), p3[3];
            rc = step(&b, s, p3);
            if (!strcmp(mode, "time") && s >= 3) {
                dt[nt] = now_seconds() - t0;
                for (int p = 0; p < 3; p++) ph[p][nt] = p3[p];
                nt++;
            }
        }
        const char *size = b.c.d == 128 && b.c.layers == 4 && b.c.seq == 64 ? "small" : "example";
        if (rc == 0 && suite) {
            double med = median(dt, nt), tok = (double)(b.c.batch * b.c.seq);
            printf("{\"workload\": \"W8\", \"metric\": \"gpt_train_tokens_per_s\", "
                   "\"median\": %.1f, \"min\": %.1f, \"max\": %.1f, \"unit\": \"tok/s\", "
                   "\"reps\": %lld, \"threads\": %lld, \"impl\": \"gad\"}\n",
                   tok / med, tok / dt[nt - 1], tok / dt[0], (long long)nt,
                   (long long)b.c.threads);
        } else if (rc == 0 && !strcmp(mode, "time")) {
            double med = median(dt, nt);
            printf("{\"impl\": \"gad\", \"size\": \"%s\", \"tokens_per_s\": %.1f, "
                   "\"step_ms\": %.3f, \"forward_ms\": %.3f, \"backward_ms\": %.3f, "
                   "\"optim_ms\": %.3f, \"steps\": %lld}\n",
                   size, (double)(b.c.batch * b.c.seq) / med, 1e3 * med,
                   1e3 * median(ph[0], nt), 1e3 * median(ph[1], nt), 1e3 * median(ph[2], nt),
                   (long long)nt);
        } else if (rc == 0) {
            double v = NAN;
            rc = evaluate(&b.m, &b.ds, b.c.val_windows, b.c.batch, b.c.seq, &v);
            printf("{\"impl\": \"gad\", \"size\": \"%s\", \"steps\": %lld, \"val_loss\": %.6f}\n",
                   size, (long long)b.steps, v);
        }
        free(dt);
        for (int p = 0; p < 3; p++) free(ph[p]);
        gad_optim_free(b.opt);
    }
    model_free(&b.m);
    free(b.ds.bytes);
    free(b.offsets);
    return rc == 0 ? 0 : 1;
}
