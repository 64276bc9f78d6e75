/* selftest.c: `helix_lm --quick`, a self-test of a few seconds: a tiny model
 * trained, stopped and resumed (bit for bit), evaluated and sampled. */
#include "selftest.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"
#include "gad.h"
#include "model.h"
#include "metrics.h"
#include "schedule.h"
#include "train.h"
#include "util.h"

/* Remove a run directory of the self-test. */
static void remove_run_dir(const char *dir) {
    const char *files[] = {"checkpoint.safetensors", "metrics.csv", "loss.svg"};
    char p[4200];
    for (int i = 0; i < 3; i++) remove(join_path(p, sizeof p, dir, files[i]));
    rmdir(dir);
}

static int same_double(double a, double b) {
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* softmax(logits[0..VOCAB)) into p, in double. */
static void softmax256(const float *logits, double *p) {
    double top = logits[0], sum = 0;
    for (int i = 1; i < VOCAB; i++) top = fmax(top, logits[i]);
    for (int i = 0; i < VOCAB; i++) sum += p[i] = exp((double)logits[i] - top);
    for (int i = 0; i < VOCAB; i++) p[i] /= sum;
}

/* Sampling's carried state against the forward pass: the model reads the
 * first n bytes of text in pieces (37 bytes from the zero state, 40 more
 * from the carried state, then one byte at a time, as sampling does), and
 * after every byte i its next-byte distribution must equal, within 1e-5 in
 * every probability, the one of model_logits run over text[0..i] whole
 * (the fused blocks, from the zero state). n is past the training window,
 * which the carried state is not limited to. Returns 0 or -1. */
static int check_carried_state(const model *m, const unsigned char *text, int64_t n,
                               double *worst) {
    model_state st;
    if (model_state_init(&st, m) != 0) return -1;
    int64_t *all = alloc_array(n, sizeof *all);
    float *carried = alloc_array(n * VOCAB, sizeof *carried), full[VOCAB];
    int rc = all && carried ? 0 : fail("quick: out of memory");
    for (int64_t i = 0; i < n && rc == 0; i++) all[i] = text[i];
    *worst = 0;
    gad_no_grad_begin();
    for (int64_t i = 0; i < n && rc == 0;) { /* the carried state, in pieces */
        int64_t len = i == 0 ? 37 : i == 37 ? 40 : 1;
        gad_scope_begin();
        gad_tensor *lg = model_logits_carry(m, all + i, len, &st);
        if (!lg || gad_read_f32(lg, carried + i * VOCAB, (size_t)(len * VOCAB)) != GAD_OK)
            rc = fail_gad("quick: the carried state");
        gad_scope_end();
        i += len;
    }
    for (int64_t i = 0; i < n && rc == 0; i++) { /* a forward pass over each prefix */
        gad_scope_begin();
        gad_tensor *idx = gad_from_i64(all, (int64_t[]){1, i + 1}, 2);
        gad_tensor *last = gad_select(gad_select(model_logits(m, idx), 0, 0), 0, i);
        if (!last || gad_read_f32(last, full, VOCAB) != GAD_OK) {
            rc = fail_gad("quick: the forward pass");
        } else {
            double p[VOCAB], q[VOCAB];
            softmax256(carried + i * VOCAB, p);
            softmax256(full, q);
            for (int v = 0; v < VOCAB; v++) *worst = fmax(*worst, fabs(p[v] - q[v]));
        }
        gad_scope_end();
    }
    gad_no_grad_end();
    model_state_free(&st);
    free(all);
    free(carried);
    if (rc == 0 && !(*worst <= 1e-5))
        rc = fail("quick: the carried state's next-byte distribution differs from the forward "
                  "pass's by %.3g (more than 1e-5)",
                  *worst);
    return rc;
}

/* The checkpoint's __metadata__ states the configuration it holds: the
 * format, the width, depth and precision, and the step (a header read, no
 * tensor). Returns 0 or -1 after a message. */
static int check_meta(const char *path, const config *saved, const run_state *rs) {
    gad_checkpoint *cp = gad_load_names(path, NULL, 0);
    if (!cp) return fail_gad("quick: cannot read the checkpoint's metadata");
    char d[32], layers[32], step[32];
    snprintf(d, sizeof d, "%lld", (long long)saved->d);
    snprintf(layers, sizeof layers, "%lld", (long long)saved->layers);
    snprintf(step, sizeof step, "%lld", (long long)rs->step);
    const char *want[][2] = {{"format", "helix_lm checkpoint"},
                             {"model", lm_name},
                             {"d", d},
                             {"layers", layers},
                             {"step", step},
                             {"precision", precision_name(rs->precision)}};
    int rc = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0] && rc == 0; i++) {
        const char *got = gad_checkpoint_meta(cp, want[i][0]);
        if (!got || !want[i][1] || strcmp(got, want[i][1]) != 0)
            rc = fail("quick: the checkpoint's __metadata__ \"%s\" is %s%s%s, not \"%s\"",
                      want[i][0], got ? "\"" : "", got ? got : "absent", got ? "\"" : "",
                      want[i][1] ? want[i][1] : "(none)");
    }
    if (rc == 0)
        printf("quick: the checkpoint's __metadata__ holds its configuration (%d pairs)\n",
               gad_checkpoint_meta_count(cp));
    gad_checkpoint_free(cp);
    return rc;
}

/* A tiny model trained for a few seconds, exercising everything: training
 * with checkpoints, CSV and SVG; a run stopped half-way and resumed, which
 * must match the uninterrupted one bit for bit; eval of the checkpoint,
 * which must give the last validation loss exactly; sampling. */
/* The optimizer's weight decay reaches the right parameters: one AdamW
 * step with zero gradients moves a parameter only by its decay, so every
 * matrix and the embedding must come out scaled by exactly 1 - lr * wd (in
 * f32) and every gain and the output bias unchanged. Returns 0 or -1. */
static int check_decay(const config *c) {
    model m;
    if (model_init(&m, 8, 2, 1) != 0) return -1;
    if (model_to_device(&m, gad_default_device()) != 0) {
        model_free(&m);
        return -1;
    }
    gad_optim *opt = model_optimizer(&m, c);
    int rc = opt ? 0 : fail_gad("quick: cannot create the optimizer"), decayed = 0, np = m.np;
    int64_t cap = 0;
    for (int i = 0; i < np; i++) cap = cap > gad_numel(m.params[i]) ? cap : gad_numel(m.params[i]);
    float *before = alloc_array(np * cap, sizeof *before), *after = alloc_array(cap, sizeof *after);
    if (rc == 0 && (!before || !after)) rc = fail("quick: out of memory");
    gad_scope_begin();
    gad_tensor **zero = rc == 0 ? alloc_array(m.np, sizeof *zero) : NULL;
    for (int i = 0; i < m.np && rc == 0; i++) {
        gad_tensor *p = m.params[i];
        zero[i] = gad_zeros(gad_shape(p), gad_rank(p), GAD_F32);
        if (!zero[i] || gad_read_f32(p, before + i * cap, (size_t)gad_numel(p)) != GAD_OK)
            rc = fail_gad("quick: the decay check");
    }
    if (rc == 0 && gad_optim_step(opt, zero) != GAD_OK) rc = fail_gad("quick: the decay check");
    const float keep = (float)(1.0 - c->lr * c->wd);
    for (int i = 0; i < m.np && rc == 0; i++) {
        gad_tensor *p = m.params[i];
        const char *name = gad_params_name(m.ps, i);
        int decays = gad_rank(p) == 2; /* the gains and bout are the vectors */
        if (gad_read_f32(p, after, (size_t)gad_numel(p)) != GAD_OK)
            rc = fail_gad("quick: the decay check");
        for (int64_t j = 0; j < gad_numel(p) && rc == 0; j++) {
            float b = before[i * cap + j], want = decays ? b * keep : b;
            if (fabsf(after[j] - want) > 1e-6f * fabsf(b) + 1e-30f)
                rc = fail("quick: AdamW with zero gradients made %s[%lld] %.9g from %.9g "
                          "(want %.9g: %s)",
                          name, (long long)j, after[j], b, want,
                          decays ? "decayed by lr x wd" : "no decay on gains and biases");
        }
        decayed += decays;
    }
    gad_scope_end();
    free(zero);
    free(before);
    free(after);
    gad_optim_free(opt);
    model_free(&m);
    if (rc == 0)
        printf("quick: weight decay %g: %d matrices decayed, %d gains and biases not\n", c->wd,
               decayed, np - decayed);
    return rc;
}

/* With a time budget the warm-up follows the pace, as the decay's end
 * does: a run of 180 s at one update a second (180 updates, below the
 * default warm-up of 300) still warms up, peaks and decays to near
 * --min-lr. The schedule is a pure function of the step and the time
 * used, so it is checked without training. Returns 0 or -1. */
static int check_pace_warmup(void) {
    const double peak = 4.5e-3, min_lr = 2e-4, budget = 180, per_step = 1.0;
    lr_schedule s = {peak, min_lr, 300, 0, 0, 1};
    double top = 0, last = 0, prev = 0;
    int64_t n = 0, rising_after_top = 0;
    for (int64_t step = 0; (double)(step + 1) * per_step <= budget; step++, n++) {
        int64_t total = schedule_total(0, budget, step, (double)step * per_step);
        double lr = schedule_lr(&s, step, total);
        if (lr > top) top = lr;
        else if (lr > prev && step > 20) rising_after_top++;
        prev = last = lr;
    }
    if (!(top > 0.9 * peak) || !(last < min_lr + 0.1 * (peak - min_lr)) || rising_after_top) {
        fail("quick: %lld updates in a %g s budget: the learning rate peaked at %g (of %g) and "
             "ended at %g (min %g): the warm-up does not follow the pace",
             (long long)n, budget, top, peak, last, min_lr);
        return -1;
    }
    printf("quick: a %g s budget at %g s an update: warm-up %lld of %lld updates, lr %g -> %g\n",
           budget, per_step, (long long)schedule_warmup(&s, n), (long long)n, top, last);
    return 0;
}

int cmd_quick(const config *base, const given_set *given) {
    /* one thread unless told: a tiny model gains nothing from more, and
     * ctest runs tests side by side */
    gad_set_num_threads(was_given(given, "threads") && base->threads > 0 ? (int)base->threads : 1);
    char root[] = "/tmp/lm_quick.XXXXXX"; /* mkdtemp's template */
    if (!mkdtemp(root)) return fail("cannot make a temporary directory: %s", strerror(errno)), 1;
    char dir_a[64], dir_b[64];
    snprintf(dir_a, sizeof dir_a, "%s/full", root);
    snprintf(dir_b, sizeof dir_b, "%s/resumed", root);
    config c = *base;
    c.d = 64;
    c.layers = 2;
    c.batch = 16;
    c.seq = 64;
    c.steps = 300;
    c.warmup = 20;
    c.lr = 1e-2;
    c.min_lr = 1e-3;
    c.eval_every = 50;
    c.ckpt_every = 100;
    c.val_windows = 64;
    c.time_budget = 0;
    c.bytes = 0;
    const int64_t k = 150; /* where the second run stops and resumes */
    given_set none;
    memset(&none, 0, sizeof none);
    train_result a, b1, b2;
    memset(&a, 0, sizeof a);
    memset(&b1, 0, sizeof b1);
    memset(&b2, 0, sizeof b2);
    int ok = 1;
    double t0 = now_seconds();
    printf("quick: D=%lld L=%lld B=%lld T=%lld, %lld steps, %d thread(s), %s\n", (long long)c.d,
           (long long)c.layers, (long long)c.batch, (long long)c.seq, (long long)c.steps,
           gad_num_threads(), c.precision);

    /* 1. the uninterrupted run learns: below 2.0 nats per byte (the
     * uniform guess is 5.545) */
    c.out = dir_a;
    if (train(&c, &none, 1, &a) != 0) ok = 0;
    if (ok) {
        printf("quick: %lld steps: validation loss %.4f -> %.4f nats/byte (%.1f s)\n",
               (long long)a.steps, a.mt.rows[0].val, a.val, now_seconds() - t0);
        if (a.steps != c.steps || !(a.val < 2.0)) {
            fail("quick: the validation loss %.4f is not below 2.0", a.val);
            ok = 0;
        }
        /* a fresh model predicts no worse than a uniform guess */
        if (a.mt.n == 0 || !(a.mt.rows[0].val <= LN_VOCAB + 1e-4)) {
            fail("quick: the initial validation loss %.6f is above ln 256 = %.6f",
                 a.mt.n ? a.mt.rows[0].val : NAN, LN_VOCAB);
            ok = 0;
        }
    }
    /* 2. a run stopped at step k and resumed gives the same losses */
    if (ok) {
        config cb = c;
        cb.out = dir_b;
        cb.stop_at = k;
        if (train(&cb, &none, 1, &b1) != 0 || !b1.interrupted || b1.steps != k) ok = 0;
        cb.stop_at = 0;
        cb.resume = 1;
        if (ok && train(&cb, &none, 1, &b2) != 0) ok = 0;
        if (ok) {
            int same = b2.mt.n == a.mt.n && b2.steps == a.steps;
            for (size_t i = 0; same && i < a.mt.n; i++) {
                const metric_row *x = &a.mt.rows[i], *y = &b2.mt.rows[i];
                if (x->step != y->step) same = 0;
                else if (x->step > k && (!same_double(x->train, y->train) ||
                                         !same_double(x->val, y->val) ||
                                         !same_double(x->lr, y->lr)))
                    same = 0;
            }
            printf("quick: stopped at step %lld and resumed: %s\n", (long long)k,
                   same ? "the same losses, bit for bit" : "DIFFERENT losses");
            if (!same) ok = 0;
        }
    }
    /* 3. eval of the checkpoint gives the last validation loss; sampling
     * writes the bytes asked for */
    if (ok) {
        config ce = c, saved;
        ce.out = dir_b;
        run_state rs;
        model m;
        char path[4200];
        dataset ds = {0};
        double v = NAN;
        if (load_model(&ce, &saved, &rs, &m, path, sizeof path) != 0) {
            ok = 0;
        } else {
            if (check_meta(path, &saved, &rs) != 0) ok = 0;
            if (load_text(c.data, &ds) != 0 ||
                evaluate(&m, &ds, saved.val_windows, saved.batch, saved.seq, &v) != 0)
                ok = 0;
            /* the carried state over 3 training windows of text (for the
             * whole of it: a transformer's sampling window lifted) */
            double worst = NAN;
            m.ctx = 0;
            int64_t n = 3 * saved.seq < ds.n ? 3 * saved.seq : ds.n;
            if (ok && check_carried_state(&m, ds.bytes, n, &worst) != 0) ok = 0;
            if (ok)
                printf("quick: the carried state over %lld bytes: every next-byte distribution "
                       "within %.2g of a forward pass over the whole prefix\n",
                       (long long)n, worst);
            free(ds.bytes);
            if (ok && !same_double(v, b2.val)) {
                fail("quick: eval gives %.9g, training ended at %.9g", v, b2.val);
                ok = 0;
            }
            char *buf = NULL;
            size_t len = 0;
            FILE *mem = ok ? open_memstream(&buf, &len) : NULL;
            if (ok && (!mem || generate(&m, "And God said", 60, 0.8, 40, 1, mem) != 0))
                ok = 0;
            if (mem) fclose(mem);
            if (ok && len != strlen("And God said") + 60 + 1) {
                fail("quick: sampling wrote %zu bytes, not %zu", len, strlen("And God said") + 61);
                ok = 0;
            }
            if (ok) printf("quick: sample: %.*s\n", (int)len - 1, buf);
            free(buf);
            model_free(&m);
        }
    }
    /* 4. the weight decay: matrices only */
    if (ok && check_decay(&c) != 0) ok = 0;
    if (ok && check_pace_warmup() != 0) ok = 0;
    /* 5. the CSV and the SVG are on disk */
    if (ok) {
        char p[4200];
        metrics mt = {0};
        if (read_csv(join_path(p, sizeof p, dir_a, "metrics.csv"), INT64_MAX, &mt) != 0 ||
            mt.n != a.mt.n) {
            fail("quick: %s holds %zu rows, not %zu", p, mt.n, a.mt.n);
            ok = 0;
        }
        free(mt.rows);
        FILE *f = fopen(join_path(p, sizeof p, dir_a, "loss.svg"), "r");
        char head[256] = "";
        if (!f || !fread(head, 1, sizeof head - 1, f) || !strstr(head, "<svg")) {
            fail("quick: %s is missing or not an SVG", p);
            ok = 0;
        }
        if (f) fclose(f);
    }
    free(a.mt.rows);
    free(b1.mt.rows);
    free(b2.mt.rows);
    if (ok) {
        remove_run_dir(dir_a);
        remove_run_dir(dir_b);
        rmdir(root);
        printf("quick: passed in %.1f s\n", now_seconds() - t0);
    } else {
        fprintf(stderr, "%s: quick: FAILED (files kept in %s)\n", prog, root);
    }
    return ok ? 0 : 1;
}

