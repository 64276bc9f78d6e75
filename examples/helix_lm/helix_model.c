/* helix_model.c: the HELIX byte language model (SPEC 4.5 and 6.13): the
 * parameters and their reference initialization, the forward pass and the
 * loss, evaluation on the validation windows, sampling, and checkpoints of
 * the model, the AdamW state and the configuration. */
#include "helix_model.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "signals.h"
#include "util.h"

/* ======================================================================== */
/* The model                                                                 */
/* ======================================================================== */

/* The parameters of one HELIX block, in gad_helix_weights order. */
static const char *const block_keys[9] = {"wa", "wb", "wo", "wf1", "wf2", "g1", "g2", "g3", "g4"};

void model_free(model *m) {
    if (m->params)
        for (int i = 0; i < m->np; i++) gad_release(m->params[i]);
    free(m->params);
    free(m->names);
    free(m->blocks);
    memset(m, 0, sizeof *m);
}

/* A new parameter: normal(0, std) values of the given shape (std 0 with
 * fill: constant), made a leaf. No scope may be open: the model owns it. */
static gad_tensor *new_param(gad_rng *rng, int64_t rows, int64_t cols, double std, double fill) {
    int64_t shape[2] = {rows, cols};
    int rank = cols > 0 ? 2 : 1;
    gad_tensor *t = std > 0 ? gad_rng_normal_tensor(rng, shape, rank, GAD_F32, 0.0, std)
                            : gad_full(shape, rank, GAD_F32, fill);
    return t ? gad_requires_grad(t) : NULL;
}

/* Build a model of width d and `layers` blocks with the reference
 * initialization (helix.py): embedding N(0, 0.02^2), every matrix
 * N(0, 1/fan_in), the gate-bias row of wa at +3 (sigmoid(3) = 0.95: the
 * recurrence keeps its state at first), gains 1. */
int model_init(model *m, int64_t d, int64_t layers, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->d = d;
    m->layers = layers;
    m->np = 3 + 9 * (int)layers;
    m->params = calloc((size_t)m->np, sizeof *m->params);
    m->names = calloc((size_t)m->np, sizeof *m->names);
    m->blocks = calloc((size_t)layers, sizeof *m->blocks);
    gad_rng *rng = gad_rng_new(mix64(seed ^ 0x696e6974ull));
    if (!m->params || !m->names || !m->blocks || !rng) {
        gad_rng_free(rng);
        model_free(m);
        return fail("out of memory building the model");
    }
    double s1 = 1.0 / sqrt((double)d), s2 = 1.0 / sqrt(2.0 * (double)d);
    int k = 0;
    snprintf(m->names[k], NAME_CAP, "emb");
    m->params[k++] = m->emb = new_param(rng, VOCAB, d, 0.02, 0);
    for (int64_t l = 0; l < layers; l++) {
        gad_helix_weights *w = &m->blocks[l];
        gad_tensor **slot[9] = {&w->wa, &w->wb, &w->wo, &w->wf1, &w->wf2,
                                &w->g1, &w->g2, &w->g3, &w->g4};
        *slot[0] = new_param(rng, d + 1, d, s1, 0);
        *slot[1] = new_param(rng, d, d, s1, 0);
        *slot[2] = new_param(rng, d, d, s1, 0);
        *slot[3] = new_param(rng, d, 2 * d, s1, 0);
        *slot[4] = new_param(rng, 2 * d, d, s2, 0);
        for (int g = 5; g < 9; g++) *slot[g] = new_param(rng, d, 0, 0, 1.0);
        if (w->wa) { /* the gate-bias row */
            float *p = gad_data_mut(w->wa);
            if (p) {
                for (int64_t j = 0; j < d; j++) p[d * d + j] = 3.0f;
            } else {
                gad_release(w->wa);
                w->wa = NULL;
            }
        }
        for (int i = 0; i < 9; i++) {
            snprintf(m->names[k], NAME_CAP, "b%d.%s", (int)l, block_keys[i]);
            m->params[k++] = *slot[i];
        }
    }
    snprintf(m->names[k], NAME_CAP, "gain");
    m->params[k++] = m->gain = new_param(rng, d, 0, 0, 1.0);
    snprintf(m->names[k], NAME_CAP, "wout");
    m->params[k++] = m->wout = new_param(rng, d, VOCAB, s1, 0);
    gad_rng_free(rng);
    for (int i = 0; i < m->np; i++)
        if (!m->params[i]) {
            fail_gad("cannot initialize the model");
            model_free(m);
            return -1;
        }
    return 0;
}

int64_t model_param_count(const model *m) {
    int64_t n = 0;
    for (int i = 0; i < m->np; i++) n += gad_numel(m->params[i]);
    return n;
}

/* Logits [B, T, 256] for input bytes idx [B, T] (i64), in the current
 * scope. NULL on an error (gad's record says which). */
gad_tensor *model_logits(const model *m, gad_tensor *idx) {
    gad_tensor *h = gad_embedding_fused(m->emb, idx);
    for (int64_t l = 0; l < m->layers; l++) h = gad_helix_block(h, &m->blocks[l], NORM_EPS);
    h = gad_mul(gad_rms_norm(h, NORM_EPS), m->gain);
    return gad_matmul(h, m->wout);
}

/* The mean cross-entropy (nats per byte) of predicting tg from in, both
 * B*T bytes, in the current scope: the one loss that training and
 * evaluation use. The cross-entropy is gad_masked_ce with unit weights (one
 * fused node; the same value as gad_cross_entropy's mean). */
gad_tensor *model_loss(const model *m, const int64_t *in, const int64_t *tg, int64_t B,
                       int64_t T) {
    gad_tensor *idx = gad_from_i64(in, (int64_t[]){B, T}, 2);
    gad_tensor *targets = gad_from_i64(tg, (int64_t[]){B * T}, 1);
    gad_tensor *ones = gad_ones((int64_t[]){B * T}, 1, GAD_F32);
    gad_tensor *logits = model_logits(m, idx);
    return gad_masked_ce(gad_view(logits, (int64_t[]){B * T, VOCAB}, 2), targets, ones);
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

/* Write prompt and then nbytes generated bytes to out. The model sees the
 * last `context` bytes (the training window: the blocks start each window
 * from a zero state, as in training), recomputed for every byte. An empty
 * prompt starts from a newline (not printed). Returns 0; 1 when a signal
 * (g_interrupted) stopped it early (the text still ends with a newline);
 * -1 on an error. */
int generate(const model *m, int64_t context, const char *prompt, int64_t nbytes,
             double temperature, int64_t top_k, uint64_t seed, FILE *out) {
    size_t plen = strlen(prompt);
    if (plen > MAX_PROMPT || nbytes < 0 || nbytes > MAX_BYTES)
        return fail("cannot sample %lld bytes after a prompt of %zu (the most: %d after %d)",
                    (long long)nbytes, plen, MAX_BYTES, MAX_PROMPT);
    int64_t cap = (int64_t)plen + nbytes + 1;
    int64_t *text = alloc_array(cap, sizeof *text);
    gad_rng *rng = gad_rng_new(mix64(seed ^ 0x73616d70ull));
    if (!text || !rng) {
        free(text);
        gad_rng_free(rng);
        return fail("out of memory sampling");
    }
    int64_t n = 0;
    if (plen == 0) text[n++] = '\n';
    for (size_t i = 0; i < plen; i++) text[n++] = (unsigned char)prompt[i];
    fputs(prompt, out);
    fflush(out);
    int rc = 0;
    float logits[VOCAB];
    gad_no_grad_begin();
    for (int64_t g = 0; g < nbytes && rc == 0; g++) {
        if (g_interrupted) {
            rc = 1;
            break;
        }
        int64_t len = n < context ? n : context;
        gad_scope_begin();
        gad_tensor *idx = gad_from_i64(text + n - len, (int64_t[]){1, len}, 2);
        gad_tensor *last = gad_select(gad_select(model_logits(m, idx), 0, 0), 0, len - 1);
        if (!last || gad_read_f32(last, logits, VOCAB) != GAD_OK) {
            rc = fail_gad("sampling failed");
        } else {
            int c = pick_byte(logits, temperature, top_k, rng);
            text[n++] = c;
            fputc(c, out);
            if (c == '\n' || g % 16 == 15) fflush(out);
        }
        gad_scope_end();
    }
    gad_no_grad_end();
    fputc('\n', out);
    fflush(out);
    free(text);
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

int save_checkpoint(const char *path, const model *m, gad_optim *opt, const config *c,
                    const run_state *rs) {
    int nopt = gad_optim_state(opt, NULL, NULL, 0);
    if (nopt < 0) return fail_gad("cannot read the optimizer state");
    int n = m->np + nopt + N_HP + 5;
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
        names[k] = m->names[i];
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
        names[k] = "run.seconds";
        ts[k++] = gad_scalar_f64(rs->seconds);
        names[k] = "run.threads";
        ts[k++] = gad_from_i64(&rs->threads, NULL, 0);
        int64_t world = rs->world > 0 ? rs->world : 1;
        names[k] = "run.world";
        ts[k++] = gad_from_i64(&world, NULL, 0);
        int64_t version = CKPT_VERSION;
        names[k] = "run.version";
        ts[k++] = gad_from_i64(&version, NULL, 0);
        if (gad_save(path, names, ts, k) != GAD_OK) rc = fail_gad("cannot save the checkpoint");
    }
    gad_scope_end();
    free(names);
    free(ts);
    free(buf);
    return rc;
}

/* Every value a checkpoint holds is checked against a range before it is
 * used or cast: the hp.* fields against their options' ranges (options[];
 * a run's --steps and its time budget may also be 0, not given), the run.*
 * fields against these. */
#define MAX_RUN_SECONDS 1e12
#define MAX_RUN_THREADS 1048576

/* Read the scalar `name` of the checkpoint, in [lo, hi]: an integer (is_int:
 * into *iv) is an i64, or a float of integral value; a real (into *dv) a
 * finite float. Else -1 after one line that names the value and its bound.
 * In a scope. */
static int ckpt_value(const gad_checkpoint *cp, const char *path, const char *name, int is_int,
                      double lo, double hi, int64_t *iv, double *dv) {
    gad_tensor *t = gad_checkpoint_get(cp, name);
    if (!t) {
        gad_clear_error();
        return fail("'%s' is not a helix_lm checkpoint: it has no '%s'", path, name);
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
    } else if (version != CKPT_VERSION) {
        rc = fail("'%s' is a checkpoint of version %lld; this program reads version %d", path,
                  (long long)version, CKPT_VERSION);
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
    rs->world = 1; /* optional: checkpoints from before distributed training lack it */
    if (rc == 0 && gad_checkpoint_get(cp, "run.world"))
        rc = ckpt_value(cp, path, "run.world", 1, 1, MAX_RUN_THREADS, &rs->world, NULL);
    gad_clear_error();
    gad_scope_end();
    if (rc == 0) rc = check_step_bytes(c->batch, c->seq, path);
    return rc;
}

/* The name and shape of parameter i (0 <= i < 3 + 9 * layers) of the model
 * that model_init builds of width d; returns its rank. */
static int param_spec(int i, int64_t d, int64_t layers, char name[NAME_CAP], int64_t shape[2]) {
    if (i == 0 || i == 2 + 9 * layers) {
        snprintf(name, NAME_CAP, i == 0 ? "emb" : "wout");
        shape[0] = i == 0 ? VOCAB : d;
        shape[1] = i == 0 ? d : VOCAB;
        return 2;
    }
    if (i == 1 + 9 * layers) {
        snprintf(name, NAME_CAP, "gain");
        shape[0] = d;
        return 1;
    }
    int j = (i - 1) % 9; /* wa wb wo wf1 wf2 g1..g4 */
    snprintf(name, NAME_CAP, "b%d.%s", (i - 1) / 9, block_keys[j]);
    if (j >= 5) {
        shape[0] = d;
        return 1;
    }
    const int64_t rows[5] = {d + 1, d, d, d, 2 * d}, cols[5] = {d, d, d, 2 * d, d};
    shape[0] = rows[j];
    shape[1] = cols[j];
    return 2;
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
    int np = 3 + 9 * (int)layers, rc = 0;
    for (int i = 0; i < np && rc == 0; i++) {
        char name[NAME_CAP], have[160], want[64];
        int64_t shape[2];
        int rank = param_spec(i, d, layers, name, shape);
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

/* Copy the checkpoint's parameters into the model (same names, shapes and
 * dtype, or an error naming the tensor). */
int ckpt_load_params(const gad_checkpoint *cp, const char *path, model *m) {
    int rc = 0;
    for (int i = 0; i < m->np && rc == 0; i++) {
        gad_scope_begin();
        gad_tensor *t = gad_checkpoint_get(cp, m->names[i]);
        gad_tensor *p = m->params[i];
        if (!t) {
            gad_clear_error();
            rc = fail("'%s' has no parameter '%s'", path, m->names[i]);
        } else if (gad_dtype(t) != GAD_F32 || gad_rank(t) != gad_rank(p) ||
                   memcmp(gad_shape(t), gad_shape(p), (size_t)gad_rank(p) * sizeof(int64_t))) {
            rc = fail("'%s': parameter '%s' has the wrong shape or dtype for this model", path,
                      m->names[i]);
        } else {
            float *dst = gad_data_mut(p);
            if (!dst || gad_read_f32(t, dst, (size_t)gad_numel(p)) != GAD_OK)
                rc = fail_gad("cannot load a parameter");
        }
        gad_scope_end();
    }
    return rc;
}

/* Restore the AdamW state from the "opt.*" tensors. */
int ckpt_load_optim(const gad_checkpoint *cp, const char *path, gad_optim *opt) {
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
            fail("cannot read the checkpoint: %s (train first: helix_lm train --out DIR)",
                 e->text);
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
    if (rc == 0) rc = ckpt_load_params(cp, path, m);
    gad_checkpoint_free(cp);
    if (rc != 0) model_free(m);
    return rc;
}
