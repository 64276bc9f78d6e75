/* model.c: what every architecture of model.h shares: moving the model to
 * a device, the output bias, the optimizer, the loss, evaluation on the
 * validation windows, sampling, and checkpoints of the model, the AdamW
 * state and the configuration. */
#include "model.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "signals.h"
#include "util.h"

/* ======================================================================== */
/* The model                                                                 */
/* ======================================================================== */

void model_free(model *m) {
    gad_params_free(m->ps);
    free(m->blocks);
    memset(m, 0, sizeof *m);
}

int model_to_device(model *m, gad_device dev) {
    if (gad_device_of(m->emb) == dev) return 0;
    gad_params *ps = gad_params_new();
    int rc = ps ? 0 : fail("out of memory moving the model");
    gad_scope_begin();
    gad_no_grad_begin();
    for (int i = 0; i < m->np && rc == 0; i++) {
        gad_tensor *t = gad_detach(gad_to_device(m->params[i], dev));
        if (!t || !gad_params_add(ps, gad_params_name(m->ps, i), t))
            rc = fail_gad("cannot move the model to the device");
    }
    gad_no_grad_end();
    gad_scope_end();
    if (rc != 0) {
        gad_params_free(ps);
        return -1;
    }
    gad_params_free(m->ps);
    m->ps = ps;
    model_bind(m);
    return 0;
}

/* The output bias of a model about to be trained: the log-frequencies of
 * the bytes of the training text (add-one smoothed, less their mean), so
 * that a fresh model predicts each byte with its frequency in the text
 * instead of with random odds. Its loss starts at about the entropy of the
 * bytes plus what the random logits of wout add (3.4 to 3.7 nats on the
 * King James Bible for the self-test's model, where it was 6.2 without a
 * bias: worse than the uniform guess, ln 256 = 5.545), and the random wout
 * keeps its full scale. The other cures of that start learned slower
 * (measured, one or two seeds): wout = 0 ended the self-test's 300 steps
 * 0.17 to 0.24 nats behind, a final gain of 0 the default model's 400
 * steps (warm-up 100) 0.035 behind; the bias instead ended them 0.03 to
 * 0.07 and 0.016 nats ahead (1.4866 against 1.5027). (Setting a
 * classifier's bias from the label frequencies is common practice.) */
int model_init_output_bias(model *m, const unsigned char *bytes, int64_t n) {
    double count[VOCAB] = {0}, logp[VOCAB], mean = 0;
    for (int64_t i = 0; i < n; i++) count[bytes[i]] += 1;
    for (int v = 0; v < VOCAB; v++) {
        logp[v] = log((count[v] + 1) / ((double)n + VOCAB));
        mean += logp[v] / VOCAB;
    }
    float *b = gad_data_mut(m->bout);
    if (!b) return fail_gad("cannot set the output bias");
    for (int v = 0; v < VOCAB; v++) b[v] = (float)(logp[v] - mean);
    return 0;
}

int64_t model_param_count(const model *m) { return gad_params_numel(m->ps); }

/* The parameters AdamW does not decay: the gains of the RMS norms and the
 * output bias, as GPT-2's and most transformer recipes do (decay pulls a
 * gain towards 0, not towards the 1 it starts at). The matrices and the
 * embedding are decayed by --wd. */
static const gad_param_group no_decay[] = {
    {.match = "b*.g*", .no_weight_decay = 1},
    {.match = "gain", .no_weight_decay = 1},
    {.match = "bout", .no_weight_decay = 1},
};

gad_optim *model_optimizer(const model *m, const config *c) {
    gad_adamw_opts ao = {.lr = c->lr, .beta1 = c->beta1, .beta2 = c->beta2, .eps = 1e-8,
                         .weight_decay = c->wd, .no_weight_decay = c->wd == 0};
    return gad_adamw_new_params(m->ps, no_decay, (int)(sizeof no_decay / sizeof no_decay[0]),
                                &ao);
}

/* The mean cross-entropy (nats per byte) of predicting tg from in, both
 * B*T bytes, in the current scope: the one loss that training and
 * evaluation use. The cross-entropy is gad_masked_ce with unit weights (one
 * fused node; the same value as gad_cross_entropy's mean). */
gad_tensor *model_loss_on(const model *m, gad_tensor *idx, gad_tensor *targets,
                          gad_tensor *ones) {
    gad_tensor *logits = model_logits(m, idx);
    return gad_masked_ce(gad_view(logits, (int64_t[]){gad_numel(targets), VOCAB}, 2), targets,
                         ones);
}

gad_tensor *model_loss(const model *m, const int64_t *in, const int64_t *tg, int64_t B,
                       int64_t T) {
    gad_tensor *idx = gad_from_i64(in, (int64_t[]){B, T}, 2);
    gad_tensor *targets = gad_from_i64(tg, (int64_t[]){B * T}, 1);
    gad_tensor *ones = gad_ones((int64_t[]){B * T}, 1, GAD_F32);
    return model_loss_on(m, idx, targets, ones);
}

/* ======================================================================== */
/* Evaluation: the mean loss over the fixed validation windows               */
/* ======================================================================== */

/* The most bytes an evaluation gives one forward pass: it checks for a
 * signal between passes. (The default batch, 16 x 128, is one pass.) */
#define EVAL_PASS_BYTES 4096

/* Evaluate nw windows of T bytes, B at a time (fewer when B x T is above
 * EVAL_PASS_BYTES), without recording a tape. Returns 0 and the mean loss
 * per byte in *out; 1 when a signal (g_interrupted) stopped it before the
 * end (*out is NaN); -1 on an error. */
int evaluate(const model *m, const dataset *ds, int64_t nw, int64_t B, int64_t T,
             double *out) {
    int64_t per_pass = T < EVAL_PASS_BYTES ? EVAL_PASS_BYTES / T : 1;
    if (B > per_pass) B = per_pass; /* the same windows, in smaller passes */
    int64_t BT = 0;
    int64_t *in = NULL, *tg = NULL;
    if (checked_mul(B, T, &BT) == 0) {
        in = alloc_array(BT, sizeof *in);
        tg = alloc_array(BT, sizeof *tg);
    }
    if (!in || !tg) {
        free(in), free(tg);
        return fail("out of memory evaluating");
    }
    double sum = 0;
    int rc = 0;
    gad_no_grad_begin();
    for (int64_t w0 = 0; w0 < nw && rc == 0; w0 += B) {
        if (g_interrupted) {
            rc = 1;
            break;
        }
        int64_t nb = nw - w0 < B ? nw - w0 : B;
        for (int64_t b = 0; b < nb; b++) {
            int64_t s = val_window_start(ds, w0 + b, nw, T);
            for (int64_t t = 0; t < T; t++) {
                in[b * T + t] = ds->bytes[s + t];
                tg[b * T + t] = ds->bytes[s + t + 1];
            }
        }
        gad_scope_begin();
        gad_tensor *loss = model_loss(m, in, tg, nb, T);
        if (loss)
            sum += gad_item(loss) * (double)nb;
        else
            rc = fail_gad("evaluation failed");
        gad_scope_end();
    }
    gad_no_grad_end();
    free(in);
    free(tg);
    *out = rc == 0 ? sum / (double)nw : NAN;
    return rc;
}

/* ======================================================================== */
/* Sampling                                                                  */
/* ======================================================================== */

/* Pick a byte from logits[256]: the likeliest when temperature is 0, else a
 * draw from softmax(logits / temperature) restricted to the top_k
 * likeliest (top_k 0: all). */
static int pick_byte(const float *logits, double temperature, int64_t top_k, gad_rng *rng) {
    int order[VOCAB];
    for (int i = 0; i < VOCAB; i++) order[i] = i;
    /* insertion sort, largest first (stable: ties keep the smaller byte) */
    for (int i = 1; i < VOCAB; i++) {
        int v = order[i], j = i;
        while (j > 0 && logits[order[j - 1]] < logits[v]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
    if (temperature <= 0 || top_k == 1) return order[0];
    int k = top_k > 0 && top_k < VOCAB ? (int)top_k : VOCAB;
    double p[VOCAB], total = 0, top = logits[order[0]];
    for (int i = 0; i < k; i++) {
        p[i] = exp(((double)logits[order[i]] - top) / temperature);
        total += p[i];
    }
    double u = gad_rng_uniform(rng) * total;
    for (int i = 0; i < k; i++) {
        u -= p[i];
        if (u < 0) return order[i];
    }
    return order[k - 1];
}

/* The most bytes of the prompt one forward pass takes: a long prompt goes
 * through in pieces, the state carried from one to the next. */
#define PREFILL_BYTES 512

/* Write prompt and then nbytes generated bytes to out. The prompt goes
 * through the model once (in pieces of PREFILL_BYTES), then every byte
 * drawn is one step of each block from its carried state: the model sees
 * everything from the start of the prompt, as one forward pass over the
 * whole text would (not a window of the training length). An empty prompt
 * starts from a newline (not printed). Returns 0; 1 when a signal
 * (g_interrupted) stopped it early (the text still ends with a newline);
 * -1 on an error. */
int generate(const model *m, const char *prompt, int64_t nbytes, double temperature,
             int64_t top_k, uint64_t seed, FILE *out) {
    size_t plen = strlen(prompt);
    if (plen > MAX_PROMPT || nbytes < 0 || nbytes > MAX_BYTES)
        return fail("cannot sample %lld bytes after a prompt of %zu (the most: %d after %d)",
                    (long long)nbytes, plen, MAX_BYTES, MAX_PROMPT);
    const unsigned char *p = (const unsigned char *)(plen ? prompt : "\n");
    int64_t np = plen ? (int64_t)plen : 1;
    gad_rng *rng = gad_rng_new(mix64(seed ^ 0x73616d70ull));
    model_state st;
    if (!rng || model_state_init(&st, m) != 0) {
        gad_rng_free(rng);
        return fail("out of memory sampling");
    }
    fputs(prompt, out);
    fflush(out);
    int rc = 0;
    float logits[VOCAB];
    int64_t chunk[PREFILL_BYTES];
    gad_no_grad_begin();
    /* the prompt: the logits after its last byte */
    for (int64_t off = 0; off < np && rc == 0; off += PREFILL_BYTES) {
        if (g_interrupted) {
            rc = 1;
            break;
        }
        int64_t n = np - off < PREFILL_BYTES ? np - off : PREFILL_BYTES;
        for (int64_t i = 0; i < n; i++) chunk[i] = p[off + i];
        gad_scope_begin();
        gad_tensor *lg = model_logits_carry(m, chunk, n, &st);
        gad_tensor *last = lg ? gad_select(gad_select(lg, 0, 0), 0, n - 1) : NULL;
        if (!last || gad_read_f32(last, logits, VOCAB) != GAD_OK) rc = fail_gad("sampling failed");
        gad_scope_end();
    }
    /* one byte drawn, then one step of the model on it */
    for (int64_t g = 0; g < nbytes && rc == 0; g++) {
        int c = pick_byte(logits, temperature, top_k, rng);
        fputc(c, out);
        if (c == '\n' || g % 16 == 15) fflush(out);
        if (g + 1 == nbytes) break;
        if (g_interrupted) {
            rc = 1;
            break;
        }
        int64_t byte = c;
        gad_scope_begin();
        gad_tensor *lg = model_logits_carry(m, &byte, 1, &st);
        if (!lg || gad_read_f32(lg, logits, VOCAB) != GAD_OK) rc = fail_gad("sampling failed");
        gad_scope_end();
    }
    gad_no_grad_end();
    fputc('\n', out);
    fflush(out);
    model_state_free(&st);
    gad_rng_free(rng);
    return rc;
}

/* ======================================================================== */
/* Checkpoints: parameters, AdamW state, step and configuration              */
/* ======================================================================== */
/* One safetensors file (gad_save writes it atomically). Names:
 *   emb, b<l>.<wa|wb|wo|wf1|wf2|g1..g4>, gain, wout   the parameters (f32)
 *   opt.step, opt.m.<i>, opt.v.<i>                    gad_optim_state, prefixed
 *   hp.<name>                                         the configuration (i64/f64 scalars)
 *   run.step, run.seconds                             progress */

#define OFF(f) offsetof(config, f)

const hp_field hp_fields[] = {
    {"d", OFF(d), 0},
    {"layers", OFF(layers), 0},
    {"batch", OFF(batch), 0},
    {"seq", OFF(seq), 0},
    {"val-windows", OFF(val_windows), 0},
    {"steps", OFF(steps), 0},
    {"warmup", OFF(warmup), 0},
    {"seed", OFF(seed), 0},
    {"eval-every", OFF(eval_every), 0},
    {"ckpt-every", OFF(ckpt_every), 0},
    {"time-budget", OFF(time_budget), 1},
    {"lr", OFF(lr), 1},
    {"min-lr", OFF(min_lr), 1},
    {"clip", OFF(clip), 1},
    {"wd", OFF(wd), 1},
    {"beta1", OFF(beta1), 1},
    {"beta2", OFF(beta2), 1},
};
_Static_assert(sizeof hp_fields / sizeof hp_fields[0] == N_HP, "N_HP counts hp_fields[]");

/* The configuration as __metadata__ strings beside the tensors that hold
 * it exactly (issue 29), for the tools that read safetensors headers: the
 * format, the architecture, every hp.* field by its option's name, the step
 * and the precision. Fills the pairs into meta (val: their storage);
 * returns the number of pairs. */
#define CKPT_META (N_HP + 5)
static int checkpoint_meta(const config *c, const run_state *rs, const char *meta[2 * CKPT_META],
                           char (*val)[32]) {
    int k = 0, v = 0;
    meta[k++] = "format";
    meta[k++] = "helix_lm checkpoint";
    meta[k++] = "model";
    meta[k++] = lm_name;
    snprintf(val[v], 32, "%d", CKPT_VERSION);
    meta[k++] = "version";
    meta[k++] = val[v++];
    for (int i = 0; i < N_HP; i++) {
        const void *f = (const char *)c + hp_fields[i].offset;
        if (hp_fields[i].is_real) snprintf(val[v], 32, "%.17g", *(const double *)f);
        else snprintf(val[v], 32, "%lld", (long long)*(const int64_t *)f);
        meta[k++] = hp_fields[i].name;
        meta[k++] = val[v++];
    }
    snprintf(val[v], 32, "%lld", (long long)rs->step);
    meta[k++] = "step";
    meta[k++] = val[v++];
    meta[k++] = "precision";
    const char *prec = precision_name(rs->precision > 0 ? rs->precision : GAD_F32);
    meta[k++] = prec ? prec : "f32";
    return k / 2;
}

int save_checkpoint(const char *path, const model *m, gad_optim *opt, const config *c,
                    const run_state *rs) {
    int nopt = gad_optim_state(opt, NULL, NULL, 0);
    if (nopt < 0) return fail_gad("cannot read the optimizer state");
    int n = m->np + nopt + N_HP + 12;
    const char **names = calloc((size_t)n, sizeof *names);
    gad_tensor **ts = calloc((size_t)n, sizeof *ts);
    char(*buf)[NAME_CAP] = calloc((size_t)(nopt + N_HP + 3), sizeof *buf);
    if (!names || !ts || !buf) {
        free(names), free(ts), free(buf);
        return fail("out of memory saving a checkpoint");
    }
    int rc = 0, k = 0, b = 0;
    gad_scope_begin();
    for (int i = 0; i < m->np; i++) {
        names[k] = gad_params_name(m->ps, i);
        ts[k++] = m->params[i];
    }
    if (gad_optim_state(opt, names + k, ts + k, nopt) != nopt) {
        rc = fail_gad("cannot read the optimizer state");
    } else {
        for (int i = 0; i < nopt; i++, k++, b++) {
            snprintf(buf[b], NAME_CAP, "opt.%s", names[k]);
            names[k] = buf[b];
        }
        for (int i = 0; i < N_HP; i++, k++, b++) {
            const void *f = (const char *)c + hp_fields[i].offset;
            snprintf(buf[b], NAME_CAP, "hp.%s", hp_fields[i].name);
            names[k] = buf[b];
            ts[k] = hp_fields[i].is_real ? gad_scalar_f64(*(const double *)f)
                                         : gad_from_i64((const int64_t *)f, NULL, 0);
        }
        names[k] = "run.step";
        ts[k++] = gad_from_i64(&rs->step, NULL, 0);
        names[k] = "run.seconds"; /* the clock saturates: what is written loads again */
        ts[k++] = gad_scalar_f64(fmin(rs->seconds, MAX_RUN_SECONDS));
        names[k] = "run.threads";
        ts[k++] = gad_from_i64(&rs->threads, NULL, 0);
        names[k] = "run.lr_anchor";
        ts[k++] = gad_from_i64(&rs->lr_anchor, NULL, 0);
        names[k] = "run.lr_anchor_lr";
        ts[k++] = gad_scalar_f64(rs->lr_anchor_lr);
        names[k] = "run.lr_total";
        ts[k++] = gad_from_i64(&rs->lr_total, NULL, 0);
        int64_t world = rs->world > 0 ? rs->world : 1;
        names[k] = "run.world";
        ts[k++] = gad_from_i64(&world, NULL, 0);
        int64_t prec = rs->precision > 0 ? rs->precision : GAD_F32;
        names[k] = "run.precision";
        ts[k++] = gad_from_i64(&prec, NULL, 0);
        if (prec == GAD_F16) {
            names[k] = "run.scale";
            ts[k++] = gad_scalar_f64(rs->scale);
            names[k] = "run.scale_good";
            ts[k++] = gad_from_i64(&rs->scale_good, NULL, 0);
            names[k] = "run.skipped";
            ts[k++] = gad_from_i64(&rs->skipped, NULL, 0);
        }
        int64_t version = CKPT_VERSION;
        names[k] = "run.version";
        ts[k++] = gad_from_i64(&version, NULL, 0);
        const char *meta[2 * CKPT_META];
        char val[CKPT_META][32];
        int n_meta = checkpoint_meta(c, rs, meta, val);
        if (gad_save_meta(path, names, ts, k, meta, n_meta) != GAD_OK)
            rc = fail_gad("cannot save the checkpoint");
    }
    gad_scope_end();
    free(names);
    free(ts);
    free(buf);
    return rc;
}

/* The checkpoint's run.version when it is an i64 of 1 or 2, else 0 (its
 * full check is ckpt_read_config's). */
static int ckpt_version(const gad_checkpoint *cp) {
    int64_t v = 0;
    gad_scope_begin();
    gad_tensor *t = gad_checkpoint_get(cp, "run.version");
    if (!t || gad_dtype(t) != GAD_I64 || gad_numel(t) != 1 || gad_read_i64(t, &v, 1) != GAD_OK)
        v = 0;
    gad_scope_end();
    gad_clear_error();
    return v == 1 || v == 2 ? (int)v : 0;
}

/* Every value a checkpoint holds is checked against a range before it is
 * used or cast: the hp.* fields against their options' ranges (options[];
 * a run's --steps and its time budget may also be 0, not given), the run.*
 * fields against these and config.h's. */
#define MAX_RUN_THREADS 1048576
#define MAX_LR_TOTAL 2.4e18 /* above INT64_MAX / 4, below INT64_MAX */

/* Read the scalar `name` of the checkpoint, in [lo, hi]: an integer (is_int:
 * into *iv) is an i64, or a float of integral value; a real (into *dv) a
 * finite float. Else -1 after one line that names the value and its bound.
 * In a scope. */
static int ckpt_value(const gad_checkpoint *cp, const char *path, const char *name, int is_int,
                      double lo, double hi, int64_t *iv, double *dv) {
    gad_tensor *t = gad_checkpoint_get(cp, name);
    if (!t) {
        gad_clear_error();
        return fail("'%s' is not a %s checkpoint: it has no '%s'", path, lm_name, name);
    }
    if (gad_numel(t) != 1)
        return fail("'%s': '%s' has %lld elements, not 1", path, name, (long long)gad_numel(t));
    if (is_int && gad_dtype(t) == GAD_I64) {
        int64_t x;
        if (gad_read_i64(t, &x, 1) != GAD_OK) return fail_gad(path);
        if ((double)x < lo || (double)x > hi)
            return fail("'%s' holds %s = %lld, outside its range [%.0f, %.0f]", path, name,
                        (long long)x, lo, hi);
        *iv = x;
        return 0;
    }
    double v;
    if (gad_read_f64(t, &v, 1) != GAD_OK) return fail_gad(path);
    if (!isfinite(v)) return fail("'%s' holds %s = %g, not a finite number", path, name, v);
    if (!(v >= lo && v <= hi))
        return fail(is_int ? "'%s' holds %s = %g, outside its range [%.0f, %.0f]"
                           : "'%s' holds %s = %g, outside its range [%g, %g]",
                    path, name, v, lo, hi);
    if (!is_int) {
        *dv = v;
    } else if (v != floor(v)) {
        return fail("'%s' holds %s = %g, not an integer", path, name, v);
    } else {
        *iv = (int64_t)v; /* integral and in range: the cast is exact */
    }
    return 0;
}

/* Read the configuration and progress of a checkpoint into c (every hp.*
 * field) and rs, each value checked against its range, and batch x seq
 * against MAX_STEP_BYTES. */
static int ckpt_read_config(const gad_checkpoint *cp, const char *path, config *c,
                            run_state *rs) {
    int rc = 0;
    int64_t version = 0;
    gad_scope_begin();
    if (ckpt_value(cp, path, "run.version", 1, -9e18, 9e18, &version, NULL) != 0) {
        rc = -1;
    } else if (version != CKPT_VERSION && version != 1) {
        rc = fail("'%s' is a checkpoint of version %lld; this program reads versions 1 to %d",
                  path, (long long)version, CKPT_VERSION);
    }
    for (int i = 0; i < N_HP && rc == 0; i++) {
        const char *field = hp_fields[i].name;
        int k = option_index(field);
        if (k < 0) {
            rc = fail("internal error: no option --%s", field);
            break;
        }
        double lo = options[k].lo, hi = options[k].hi;
        if (!strcmp(field, "steps") || !strcmp(field, "time-budget")) lo = 0;
        char name[NAME_CAP];
        snprintf(name, sizeof name, "hp.%s", field);
        void *f = (char *)c + hp_fields[i].offset;
        rc = hp_fields[i].is_real ? ckpt_value(cp, path, name, 0, lo, hi, NULL, (double *)f)
                                  : ckpt_value(cp, path, name, 1, lo, hi, (int64_t *)f, NULL);
    }
    if (rc == 0) rc = ckpt_value(cp, path, "run.step", 1, 0, MAX_STEPS, &rs->step, NULL);
    if (rc == 0)
        rc = ckpt_value(cp, path, "run.seconds", 0, 0, MAX_RUN_SECONDS, NULL, &rs->seconds);
    if (rc == 0)
        rc = ckpt_value(cp, path, "run.threads", 1, 0, MAX_RUN_THREADS, &rs->threads, NULL);
    rs->lr_anchor = 0, rs->lr_anchor_lr = 0, rs->lr_total = -1; /* version 1: none */
    if (rc == 0 && version >= 2) {
        rc = ckpt_value(cp, path, "run.lr_anchor", 1, 0, (double)rs->step, &rs->lr_anchor, NULL);
        if (rc == 0)
            rc = ckpt_value(cp, path, "run.lr_anchor_lr", 0, 0, 10, NULL, &rs->lr_anchor_lr);
        if (rc == 0) /* a time budget's end before its pace is known: INT64_MAX / 4 */
            rc = ckpt_value(cp, path, "run.lr_total", 1, 0, MAX_LR_TOTAL, &rs->lr_total, NULL);
    }
    rs->world = 1; /* optional: checkpoints from before distributed training lack it */
    if (rc == 0 && gad_checkpoint_get(cp, "run.world"))
        rc = ckpt_value(cp, path, "run.world", 1, 1, MAX_RUN_THREADS, &rs->world, NULL);
    /* optional: checkpoints from before --precision are f32 */
    rs->precision = GAD_F32, rs->scale = 0, rs->scale_good = 0, rs->skipped = 0;
    if (rc == 0 && gad_checkpoint_get(cp, "run.precision")) {
        rc = ckpt_value(cp, path, "run.precision", 1, 0, 64, &rs->precision, NULL);
        if (rc == 0 && !precision_name((int)rs->precision))
            rc = fail("'%s' holds run.precision = %lld, not f32, bf16 or f16", path,
                      (long long)rs->precision);
    }
    if (rc == 0 && rs->precision == GAD_F16) { /* the scaler's state */
        rc = ckpt_value(cp, path, "run.scale", 0, 1e-300, 1e300, NULL, &rs->scale);
        if (rc == 0)
            rc = ckpt_value(cp, path, "run.scale_good", 1, 0, MAX_STEPS, &rs->scale_good, NULL);
        if (rc == 0)
            rc = ckpt_value(cp, path, "run.skipped", 1, 0, (double)rs->step, &rs->skipped, NULL);
    }
    if (rc == 0) gad_clear_error(); /* the absent name's index error */
    gad_scope_end();
    if (rc == 0) rc = check_step_bytes(c->batch, c->seq, path);
    return rc;
}

/* "[a, b, ...]" into buf. */
static const char *shape_text(char *buf, size_t cap, const int64_t *shape, int rank) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

/* Compare the name, dtype and shape of every parameter in the checkpoint
 * with those of the model its configuration makes, before that model is
 * built: a small file cannot make the program allocate and initialize a
 * big model (the file must hold every tensor of it). */
static int ckpt_check_shapes(const gad_checkpoint *cp, const char *path, int64_t d,
                             int64_t layers) {
    int np = model_param_total(layers, ckpt_version(cp)), rc = 0;
    for (int i = 0; i < np && rc == 0; i++) {
        char name[NAME_CAP], have[160], want[64];
        int64_t shape[2];
        int rank = model_param_spec(i, d, layers, name, shape);
        gad_scope_begin();
        gad_tensor *t = gad_checkpoint_get(cp, name);
        if (!t) {
            gad_clear_error();
            rc = fail("'%s' has no parameter '%s'", path, name);
        } else if (gad_dtype(t) != GAD_F32) {
            rc = fail("'%s': parameter '%s' is not f32", path, name);
        } else if (gad_rank(t) != rank ||
                   memcmp(gad_shape(t), shape, (size_t)rank * sizeof(int64_t)) != 0) {
            rc = fail("'%s': parameter '%s' is %s but the configuration (d %lld, layers %lld) "
                      "makes it %s",
                      path, name, shape_text(have, sizeof have, gad_shape(t), gad_rank(t)),
                      (long long)d, (long long)layers, shape_text(want, sizeof want, shape, rank));
        }
        gad_scope_end();
    }
    return rc;
}

/* Copy the checkpoint's parameters into the model, in place (names,
 * shapes and dtypes as open_checkpoint checked them; the set checks them
 * again). The checkpoint's other tensors (opt.*, hp.*, run.*) are not the
 * model's. A checkpoint of version 1 has no output bias: it stays 0, which
 * is that model. */
int ckpt_load_params(const gad_checkpoint *cp, const char *path, model *m) {
    int absent = ckpt_version(cp) == 1; /* bout */
    if (absent) {
        float *b = gad_data_mut(m->bout);
        if (!b) return fail_gad("cannot load a parameter");
        memset(b, 0, VOCAB * sizeof *b);
    }
    gad_params_load_info info;
    if (gad_params_load_checkpoint(m->ps, cp, 0, &info) != GAD_OK) return fail_gad(path);
    if (info.missing != absent)
        return fail("'%s' lacks %d of the model's %d parameters", path, info.missing, m->np);
    return 0;
}

/* Restore the AdamW state from the "opt.*" tensors. */
int ckpt_load_optim(const gad_checkpoint *cp, const char *path, gad_optim *opt) {
    if (ckpt_version(cp) == 1)
        return fail("'%s' is a checkpoint of version 1 (a model without the output bias): "
                    "eval and sample read it, but train --resume cannot continue it",
                    path);
    int n = gad_checkpoint_count(cp), k = 0, rc = 0;
    const char **names = calloc((size_t)(n > 0 ? n : 1), sizeof *names);
    gad_tensor **ts = calloc((size_t)(n > 0 ? n : 1), sizeof *ts);
    if (!names || !ts) {
        free(names), free(ts);
        return fail("out of memory loading a checkpoint");
    }
    gad_scope_begin();
    for (int i = 0; i < n && rc == 0; i++) {
        const char *name = gad_checkpoint_name(cp, i);
        if (!name || strncmp(name, "opt.", 4) != 0) continue;
        names[k] = name + 4;
        ts[k] = gad_checkpoint_get(cp, name);
        if (!ts[k]) rc = fail_gad(path);
        k++;
    }
    if (rc == 0 && k == 0) rc = fail("'%s' holds no optimizer state", path);
    if (rc == 0 && gad_optim_load_state(opt, names, ts, k) != GAD_OK)
        rc = fail_gad("the checkpoint's optimizer state does not fit this model");
    gad_scope_end();
    free(names);
    free(ts);
    return rc;
}

/* Open a checkpoint, read its configuration and check its parameters'
 * shapes against it: the start of sample, eval and resume. */
gad_checkpoint *open_checkpoint(const char *path, config *c, run_state *rs) {
    gad_checkpoint *cp = gad_load(path);
    if (!cp) {
        const gad_error *e = gad_last_error();
        if (e && e->kind == GAD_ERR_IO)
            fail("cannot read the checkpoint: %s (train first: %s train --out DIR)",
                 e->text, lm_name);
        else
            fail_gad("the checkpoint is not valid");
        gad_clear_error();
        return NULL;
    }
    if (ckpt_read_config(cp, path, c, rs) != 0 ||
        ckpt_check_shapes(cp, path, c->d, c->layers) != 0) {
        gad_checkpoint_free(cp);
        return NULL;
    }
    return cp;
}

/* Load a model from --ckpt (or DIR/checkpoint.safetensors). */
int load_model(const config *c, config *saved, run_state *rs, model *m,
               char *path, size_t cap) {
    if (c->ckpt)
        snprintf(path, cap, "%s", c->ckpt);
    else
        join_path(path, cap, c->out, "checkpoint.safetensors");
    *saved = *c;
    gad_checkpoint *cp = open_checkpoint(path, saved, rs);
    if (!cp) return -1;
    int rc = model_init(m, saved->d, saved->layers, 0);
    if (rc == 0) m->ctx = saved->seq; /* sampling's window: the training one */
    if (rc == 0) rc = ckpt_load_params(cp, path, m);
    if (rc == 0) rc = model_to_device(m, gad_default_device());
    gad_checkpoint_free(cp);
    if (rc != 0) model_free(m);
    return rc;
}
