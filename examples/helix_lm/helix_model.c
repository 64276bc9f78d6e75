/* helix_model.c: the HELIX byte language model (docs/helix.md), the
 * architecture part of model.h: the parameters and their reference
 * initialization, the forward pass, and the recurrent state sampling
 * carries. model.c does the rest. */
#include "helix_model.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char lm_name[] = "helix_lm";
const char lm_default_out[] = "helix_run";
const char lm_model_help[] =
    "The model: bytes -> embedding [256,D] -> L HELIX blocks -> rms_norm*gain ->\n"
    "logits [D,256] -> mean cross-entropy of the next byte; AdamW with warm-up and\n"
    "cosine decay, gradient clipping. The last 5% of the text is held out.\n";

void lm_config_defaults(config *c) { (void)c; /* config.c's are HELIX's */ }

/* version 1 had no output bias: its model is this one with bout = 0 */
int model_param_total(int64_t layers, int v) { return (v == 1 ? 3 : 4) + 9 * (int)layers; }

/* The parameters of one HELIX block, in gad_helix_weights order. */
static const char *const block_keys[9] = {"wa", "wb", "wo", "wf1", "wf2", "g1", "g2", "g3", "g4"};

/* The name and shape of parameter i (0 <= i < 4 + 9 * layers) of the model
 * that model_init builds of width d; returns its rank. */
int model_param_spec(int i, int64_t d, int64_t layers, char name[NAME_CAP], int64_t shape[2]) {
    if (i == 3 + 9 * layers) {
        snprintf(name, NAME_CAP, "bout");
        shape[0] = VOCAB;
        return 1;
    }
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

/* Build a model of width d and `layers` blocks with the reference
 * initialization: embedding N(0, 0.02^2), every matrix N(0, 1/fan_in), the
 * gate-bias row of wa at +3 (sigmoid(3) = 0.95: the recurrence keeps its
 * state at first), gains 1, and the output bias bout 0 (a run from scratch
 * then sets it from the data: model_init_output_bias). The parameters form
 * a named set (m->ps) in param_spec's order, which is also the order of the
 * random draws. */

/* Point m's fields at the tensors of m->ps (param_spec's order). */
void model_bind(model *m) {
    gad_helix_weights *blocks = m->blocks;
    m->params = gad_params_tensors(m->ps);
    m->emb = m->params[0];
    for (int64_t l = 0; l < m->layers; l++) {
        gad_helix_weights *w = &blocks[l];
        gad_tensor **slot[9] = {&w->wa, &w->wb, &w->wo, &w->wf1, &w->wf2,
                                &w->g1, &w->g2, &w->g3, &w->g4};
        for (int j = 0; j < 9; j++) *slot[j] = m->params[1 + 9 * l + j];
    }
    m->gain = m->params[1 + 9 * m->layers];
    m->wout = m->params[2 + 9 * m->layers];
    m->bout = m->params[3 + 9 * m->layers];
}

int model_init(model *m, int64_t d, int64_t layers, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->d = d;
    m->layers = layers;
    m->np = 4 + 9 * (int)layers;
    m->ps = gad_params_new();
    m->blocks = calloc((size_t)layers, sizeof(gad_helix_weights));
    gad_rng *rng = gad_rng_new(mix64(seed ^ 0x696e6974ull));
    if (!m->ps || !m->blocks || !rng) {
        gad_rng_free(rng);
        model_free(m);
        return fail("out of memory building the model");
    }
    const double s1 = 1.0 / sqrt((double)d), s2 = 1.0 / sqrt(2.0 * (double)d);
    int rc = 0;
    gad_device was = gad_set_default_device(GAD_CPU); /* built on the host: model_to_device */
    gad_scope_begin(); /* the set keeps what it holds */
    for (int i = 0; i < m->np && rc == 0; i++) {
        char name[NAME_CAP];
        int64_t shape[2];
        int rank = model_param_spec(i, d, layers, name, shape), j = (i - 1) % 9;
        int block = i >= 1 && i < 1 + 9 * (int)layers;
        double std = i == 0 ? 0.02 : rank == 1 ? 0 : block && j == 4 ? s2 : s1;
        double fill = !strcmp(name, "bout") ? 0.0 : 1.0; /* gains 1, bias 0 */
        gad_tensor *t = std > 0 ? gad_rng_normal_tensor(rng, shape, rank, GAD_F32, 0.0, std)
                                : gad_full(shape, rank, GAD_F32, fill);
        if (t && block && j == 0) { /* the gate-bias row of wa */
            float *p = gad_data_mut(t);
            if (p)
                for (int64_t k = 0; k < d; k++) p[d * d + k] = 3.0f;
            else
                t = NULL;
        }
        if (!t || !gad_params_add(m->ps, name, t)) rc = fail_gad("cannot initialize the model");
    }
    gad_scope_end();
    gad_set_default_device(was);
    gad_rng_free(rng);
    if (rc != 0) {
        model_free(m);
        return -1;
    }
    model_bind(m);
    return 0;
}

gad_tensor *model_logits(const model *m, gad_tensor *idx) {
    gad_tensor *h = gad_embedding_fused(m->emb, idx);
    for (int64_t l = 0; l < m->layers; l++) h = gad_helix_block(h, &((const gad_helix_weights *)m->blocks)[l], NORM_EPS);
    h = gad_mul(gad_rms_norm(h, NORM_EPS), m->gain);
    return gad_add(gad_matmul(h, m->wout), m->bout);
}

/* ------------------------------------------------------------------------ */
/* The recurrent state: a HELIX block whose scan starts from a carried state */
/* ------------------------------------------------------------------------ */
/* A HELIX block's only state across time is its scan's h (every other part
 * works on one position at a time), so the model can take its input a
 * piece at a time: each block's scan starts from the h its last piece
 * ended with instead of from 0, and the logits are those of one forward
 * pass over everything so far. These are the block's equations
 * (docs/helix.md) as ordinary ops, with the first step of the scan
 * h_0 = a_0 h_prev + b_0 made explicit:
 *
 *   xn = rms_norm(x) g1               a = sigmoid(xn Wa[:D] + Wa[D])
 *   b  = xn Wb                        h_t = a_t h_{t-1} + b_t
 *   out1 = x + silu(h g2) Wo          xn2 = rms_norm(out1) g3
 *   y = out1 + (silu(xn2 Wf1) Wf2) g4
 *
 * x [1, P, D]; h0 [1, 1, D] or NULL (the zero state); the scan state after
 * the last position goes to *h_last (a [1, 1, D] copy). In the current
 * scope. */
static gad_tensor *block_carry(gad_tensor *x, const gad_helix_weights *w, gad_tensor *h0,
                               gad_tensor **h_last) {
    int64_t P = gad_shape(x)[1], D = gad_shape(x)[2];
    gad_tensor *xn = gad_mul(gad_rms_norm(x, NORM_EPS), w->g1);
    gad_tensor *wa = gad_slice(w->wa, (gad_range[]){GAD_RANGE(0, D)}, 1);
    gad_tensor *a = gad_sigmoid(gad_add(gad_matmul(xn, wa), gad_select(w->wa, 0, D)));
    gad_tensor *b = gad_matmul(xn, w->wb);
    if (h0) { /* b_0 + a_0 h_prev: the scan's first step from the carried state */
        gad_range first[2] = {GAD_ALL, GAD_RANGE(0, 1)}, rest[2] = {GAD_ALL, GAD_RANGE(1, P)};
        gad_tensor *b0 = gad_add(gad_slice(b, first, 2), gad_mul(gad_slice(a, first, 2), h0));
        b = P > 1 ? gad_cat((gad_tensor *[]){b0, gad_slice(b, rest, 2)}, 2, 1) : b0;
    }
    gad_tensor *h = gad_gated_scan(a, b);
    *h_last = gad_clone(gad_slice(h, (gad_range[]){GAD_ALL, GAD_RANGE(P - 1, P)}, 2));
    gad_tensor *out1 = gad_add(x, gad_matmul(gad_silu(gad_mul(h, w->g2)), w->wo));
    gad_tensor *xn2 = gad_mul(gad_rms_norm(out1, NORM_EPS), w->g3);
    gad_tensor *f2 = gad_matmul(gad_silu(gad_matmul(xn2, w->wf1)), w->wf2);
    return gad_add(out1, gad_mul(f2, w->g4));
}

int model_state_init(model_state *s, const model *m) {
    memset(s, 0, sizeof *s);
    s->layers = m->layers;
    s->h = calloc((size_t)m->layers, sizeof *s->h);
    return s->h ? 0 : fail("out of memory for the recurrent state");
}

void model_state_free(model_state *s) {
    for (int64_t l = 0; s->h && l < s->layers; l++) gad_release(s->h[l]);
    free(s->h);
    s->h = NULL;
}

gad_tensor *model_logits_carry(const model *m, const int64_t *bytes, int64_t P,
                               model_state *s) {
    if (P < 1 || s->layers != m->layers) return NULL;
    gad_tensor **next = calloc((size_t)m->layers, sizeof *next);
    if (!next) return NULL;
    gad_tensor *h = gad_embedding_fused(m->emb, gad_from_i64(bytes, (int64_t[]){1, P}, 2));
    for (int64_t l = 0; l < m->layers && h; l++) h = block_carry(h, &((const gad_helix_weights *)m->blocks)[l], s->h[l], &next[l]);
    gad_tensor *logits =
        gad_add(gad_matmul(gad_mul(gad_rms_norm(h, NORM_EPS), m->gain), m->wout), m->bout);
    int ok = logits != NULL;
    for (int64_t l = 0; l < m->layers; l++) ok = ok && next[l];
    for (int64_t l = 0; ok && l < m->layers; l++) { /* the state moves on only on success */
        gad_release(s->h[l]);
        s->h[l] = gad_retain(next[l]);
    }
    free(next);
    return ok ? logits : NULL;
}


/* ------------------------------------------------------------------------ */
/* Export in PyTorch's conventions (issue 29; examples/helix_lm/torch_helix.py) */
/* ------------------------------------------------------------------------ */
/* The state_dict of torch_helix.py's HelixLM: nn.Linear weights are [out,
 * in], so every matrix is written transposed; wa splits into the gate
 * Linear's weight (its first D rows, transposed) and bias (its last row).
 * Names: emb.weight; blocks.<l>.{norm1.weight, gate.weight, gate.bias,
 * inp.weight, scan_gain, out.weight, norm2.weight, ff1.weight, ff2.weight,
 * ff_gain}; norm.weight; head.weight, head.bias. The configuration goes in
 * __metadata__ as strings. */
int model_export(const model *m, const char *const *meta, int n_meta, const char *path) {
    int64_t d = m->d;
    int n = 4 + 10 * (int)m->layers, k = 0;
    char (*names)[NAME_CAP] = calloc((size_t)n, NAME_CAP);
    const char **np = calloc((size_t)n, sizeof *np);
    gad_tensor **ts = calloc((size_t)n, sizeof *ts);
    if (!names || !np || !ts) {
        free(names), free(np), free(ts);
        return fail("out of memory exporting the model");
    }
    gad_scope_begin();
#define PUT(t, ...) (snprintf(names[k], NAME_CAP, __VA_ARGS__), np[k] = names[k], ts[k++] = (t))
    PUT(m->emb, "emb.weight");
    for (int64_t l = 0; l < m->layers; l++) {
        const gad_helix_weights *w = &((const gad_helix_weights *)m->blocks)[l];
        gad_tensor *wa = gad_slice(w->wa, (gad_range[]){GAD_RANGE(0, d)}, 1);
        PUT(w->g1, "blocks.%lld.norm1.weight", (long long)l);
        PUT(wa ? gad_transpose(wa) : NULL, "blocks.%lld.gate.weight", (long long)l);
        PUT(gad_select(w->wa, 0, d), "blocks.%lld.gate.bias", (long long)l);
        PUT(gad_transpose(w->wb), "blocks.%lld.inp.weight", (long long)l);
        PUT(w->g2, "blocks.%lld.scan_gain", (long long)l);
        PUT(gad_transpose(w->wo), "blocks.%lld.out.weight", (long long)l);
        PUT(w->g3, "blocks.%lld.norm2.weight", (long long)l);
        PUT(gad_transpose(w->wf1), "blocks.%lld.ff1.weight", (long long)l);
        PUT(gad_transpose(w->wf2), "blocks.%lld.ff2.weight", (long long)l);
        PUT(w->g4, "blocks.%lld.ff_gain", (long long)l);
    }
    PUT(m->gain, "norm.weight");
    PUT(gad_transpose(m->wout), "head.weight");
    PUT(m->bout, "head.bias");
#undef PUT
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        if (!ts[i]) rc = fail_gad("cannot export the model");
    if (rc == 0 && gad_save_meta(path, np, ts, n, meta, n_meta) != GAD_OK)
        rc = fail_gad("cannot write the export");
    gad_scope_end();
    free(names), free(np), free(ts);
    return rc;
}
