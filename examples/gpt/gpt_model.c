/* gpt_model.c: a byte-level GPT, the architecture part of the gpt example.
 *
 *   gpt train  [options]   train (or --resume) and write a checkpoint,
 *                          metrics.csv and loss.svg to --out (gpt_run)
 *   gpt sample [options]   generate text from a checkpoint
 *   gpt eval   [options]   print a checkpoint's validation loss
 *   gpt --quick            a self-test of a few seconds (ctest runs it)
 *
 * The model is a pre-norm decoder-only transformer (Radford et al. 2019,
 * "Language Models are Unsupervised Multitask Learners", with the norm
 * before each sublayer) over bytes:
 *
 *   h = emb[x]                                  emb [256, D]
 *   for each of the L blocks:
 *     a = rms_norm(h) g1                        q, k, v = a Wqkv, H heads
 *     h = h + attn(rope(q), rope(k), v) Wo      causal
 *     f = rms_norm(h) g2
 *     h = h + silu(f W1) W2                     W1 [D, 4D], W2 [4D, D]
 *   logits = (rms_norm(h) gain) emb^T + bout    the output tied to emb
 *
 * RoPE is the rotary position embedding of Su et al. 2021 ("RoFormer"), in
 * the split-halves layout, base 10000. The heads are of 32 dims when D is a
 * multiple of 32 (D=128: 4 heads), else one head of D (the self-test's
 * tiny models); D must be even (rope rotates pairs).
 *
 * Everything else (the options, the data, the training loop, its metrics,
 * plot, checkpoints, resume, several processes under mpirun, evaluation and
 * sampling) is helix_lm's program, shared file for file: this file provides
 * what examples/helix_lm/model.h asks of an architecture. So `gpt --help`,
 * its options and its files are helix_lm's, and the run directory by
 * default is gpt_run. */
#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char lm_name[] = "gpt";
const char lm_default_out[] = "gpt_run";
const char lm_model_help[] =
    "The model: bytes -> embedding [256,D] -> L pre-norm transformer blocks\n"
    "(rms_norm, causal attention with RoPE, heads of 32 dims; rms_norm, silu MLP\n"
    "of 4D) -> rms_norm*gain -> logits = h emb^T + bout -> mean cross-entropy of\n"
    "the next byte; AdamW with warm-up and cosine decay, gradient clipping. The\n"
    "last 5% of the text is held out.\n";

/* helix_lm's defaults (config.c) but the learning rate and its floor:
 * lower, as is usual for a transformer of this size (set by judgement, not
 * tuned). */
void lm_config_defaults(config *c) {
    c->lr = 3e-3;
    c->min_lr = 1e-4;
}

#define ROPE_BASE 10000.0
#define HEAD_DIM 32

/* The parameters of one block, in model_param_spec's order. */
enum { G1, WQKV, WO, G2, W1, W2, NBLOCK };
static const char *const block_keys[NBLOCK] = {"g1", "wqkv", "wo", "g2", "w1", "w2"};

typedef struct block {
    gad_tensor *w[NBLOCK];
} block;

static int64_t heads_of(int64_t d) { return d % HEAD_DIM == 0 ? d / HEAD_DIM : 1; }

int model_param_total(int64_t layers, int v) {
    (void)v;
    return 3 + NBLOCK * (int)layers;
}

/* emb, b<l>.<g1|wqkv|wo|g2|w1|w2>..., gain, bout */
int model_param_spec(int i, int64_t d, int64_t layers, char name[NAME_CAP], int64_t shape[2]) {
    int64_t last = NBLOCK * layers;
    if (i == 0) {
        snprintf(name, NAME_CAP, "emb");
        shape[0] = VOCAB, shape[1] = d;
        return 2;
    }
    if (i == 1 + last || i == 2 + last) {
        snprintf(name, NAME_CAP, i == 1 + last ? "gain" : "bout");
        shape[0] = i == 1 + last ? d : VOCAB;
        return 1;
    }
    int j = (i - 1) % NBLOCK;
    snprintf(name, NAME_CAP, "b%d.%s", (i - 1) / NBLOCK, block_keys[j]);
    const int64_t rows[NBLOCK] = {d, d, d, d, d, 4 * d}, cols[NBLOCK] = {0, 3 * d, d, 0, 4 * d, d};
    shape[0] = rows[j];
    shape[1] = cols[j];
    return cols[j] ? 2 : 1;
}

void model_bind(model *m) {
    block *blocks = m->blocks;
    m->params = gad_params_tensors(m->ps);
    m->emb = m->params[0];
    for (int64_t l = 0; l < m->layers; l++)
        for (int j = 0; j < NBLOCK; j++) blocks[l].w[j] = m->params[1 + NBLOCK * l + j];
    m->gain = m->params[1 + NBLOCK * m->layers];
    m->wout = NULL; /* tied: emb^T */
    m->bout = m->params[2 + NBLOCK * m->layers];
}

/* The initialization: embedding N(0, 0.02^2), every matrix N(0, 1/fan_in)
 * but the two that write into the residual stream (wo, w2), scaled down
 * by 1/sqrt(2L) as GPT-2 does so that the stream's variance does not grow
 * with depth, gains 1 and bout 0 (model_init_output_bias sets it from the
 * data for a run from scratch). The draws follow model_param_spec's
 * order. */
int model_init(model *m, int64_t d, int64_t layers, uint64_t seed) {
    memset(m, 0, sizeof *m);
    if (d % 2 != 0) return fail("--d %lld: the model's width must be even (rope rotates pairs)",
                                (long long)d);
    m->d = d;
    m->layers = layers;
    m->np = model_param_total(layers, 0);
    m->ps = gad_params_new();
    m->blocks = calloc((size_t)layers, sizeof(block));
    gad_rng *rng = gad_rng_new(mix64(seed ^ 0x67707469ull));
    if (!m->ps || !m->blocks || !rng) {
        gad_rng_free(rng);
        model_free(m);
        return fail("out of memory building the model");
    }
    const double resid = 1.0 / sqrt(2.0 * (double)layers);
    int rc = 0;
    gad_device was = gad_set_default_device(GAD_CPU); /* built on the host: model_to_device */
    gad_scope_begin(); /* the set keeps what it holds */
    for (int i = 0; i < m->np && rc == 0; i++) {
        char name[NAME_CAP];
        int64_t shape[2];
        int rank = model_param_spec(i, d, layers, name, shape), j = (i - 1) % NBLOCK;
        int block_param = i >= 1 && i < 1 + NBLOCK * (int)layers;
        double std = i == 0      ? 1.0 / sqrt((double)d)
                     : rank == 1 ? 0
                                 : (block_param && (j == WO || j == W2) ? resid : 1.0) /
                                       sqrt((double)shape[0]);
        double fill = !strcmp(name, "bout") ? 0.0 : 1.0;
        gad_tensor *t = std > 0 ? gad_rng_normal_tensor(rng, shape, rank, GAD_F32, 0.0, std)
                                : gad_full(shape, rank, GAD_F32, fill);
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

/* ------------------------------------------------------------------------ */
/* Attention and positions                                                   */
/* ------------------------------------------------------------------------ */
/* Each one node of gad's: gad_rope rotates the pairs (x[i], x[i + hd/2])
 * of the position 0..T-1 on axis -2, and gad_scaled_dot_product_attention
 * is causal softmax(q k^T / sqrt(hd)) v computed blockwise (FlashAttention-2),
 * without a [T, T] matrix per head (composed of matmul, a -inf mask and
 * softmax instead, the tape would keep the scores and the probabilities of
 * every head). */

static gad_tensor *rope(gad_tensor *x) { return gad_rope(x, NULL, ROPE_BASE, 0); }

static gad_tensor *attention(gad_tensor *q, gad_tensor *k, gad_tensor *v) {
    return gad_scaled_dot_product_attention(q, k, v, NULL, 1, 0.0, 0.0, NULL);
}

/* One block on h [B, T, D]. */
static gad_tensor *block_forward(gad_tensor *h, const block *w, int64_t heads) {
    int64_t B = gad_shape(h)[0], T = gad_shape(h)[1], D = gad_shape(h)[2], hd = D / heads;
    gad_tensor *a = gad_mul(gad_rms_norm(h, NORM_EPS), w->w[G1]);
    /* [B, T, 3D] -> [B, T, 3, H, hd] -> [3, B, H, T, hd] */
    gad_tensor *qkv = gad_view(gad_matmul(a, w->w[WQKV]), (int64_t[]){B, T, 3, heads, hd}, 5);
    qkv = gad_permute(qkv, (int[]){2, 0, 3, 1, 4}, 5);
    gad_tensor *q = rope(gad_select(qkv, 0, 0)), *k = rope(gad_select(qkv, 0, 1));
    gad_tensor *o = attention(q, k, gad_select(qkv, 0, 2));
    o = gad_reshape(gad_permute(o, (int[]){0, 2, 1, 3}, 4), (int64_t[]){B, T, D}, 3);
    h = gad_add(h, gad_matmul(o, w->w[WO]));
    gad_tensor *f = gad_mul(gad_rms_norm(h, NORM_EPS), w->w[G2]);
    return gad_add(h, gad_matmul(gad_silu(gad_matmul(f, w->w[W1])), w->w[W2]));
}

gad_tensor *model_logits(const model *m, gad_tensor *idx) {
    if (!idx || gad_rank(idx) != 2) return NULL;
    int64_t heads = heads_of(m->d);
    const block *blocks = m->blocks;
    gad_tensor *h = gad_embedding_fused(m->emb, idx);
    for (int64_t l = 0; l < m->layers; l++) h = block_forward(h, &blocks[l], heads);
    h = gad_mul(gad_rms_norm(h, NORM_EPS), m->gain);
    return gad_add(gad_matmul(h, gad_transpose(m->emb)), m->bout);
}

/* ------------------------------------------------------------------------ */
/* Reading a piece at a time (sampling)                                      */
/* ------------------------------------------------------------------------ */
/* A transformer's state is the text so far: each piece runs the model over
 * the last m->ctx bytes (the training window, for a model loaded from a
 * checkpoint; all of them when ctx is 0), or over the piece alone when it
 * is longer, and gives the logits of the piece's positions. (A key/value
 * cache would save the recomputation; a byte model's windows are short.) */

int model_state_init(model_state *s, const model *m) {
    memset(s, 0, sizeof *s);
    s->layers = m->layers;
    s->cap = 256;
    s->bytes = malloc((size_t)s->cap * sizeof *s->bytes);
    return s->bytes ? 0 : fail("out of memory for the sampling state");
}

void model_state_free(model_state *s) {
    free(s->bytes);
    memset(s, 0, sizeof *s);
}

gad_tensor *model_logits_carry(const model *m, const int64_t *bytes, int64_t P,
                               model_state *s) {
    if (P < 1 || s->layers != m->layers) return NULL;
    if (s->n + P > s->cap) {
        int64_t cap = s->cap;
        while (cap < s->n + P) cap *= 2;
        int64_t *nb = realloc(s->bytes, (size_t)cap * sizeof *nb);
        if (!nb) return NULL;
        s->bytes = nb, s->cap = cap;
    }
    memcpy(s->bytes + s->n, bytes, (size_t)P * sizeof *bytes);
    int64_t n = s->n + P, w = m->ctx > 0 && m->ctx < n ? (m->ctx > P ? m->ctx : P) : n;
    gad_tensor *lg = model_logits(m, gad_from_i64(s->bytes + n - w, (int64_t[]){1, w}, 2));
    if (lg && w > P) lg = gad_slice(lg, (gad_range[]){GAD_ALL, GAD_RANGE(w - P, w)}, 2);
    if (lg) s->n = n; /* the state moves on only on success */
    return lg;
}

/* `export` writes helix_lm's PyTorch module (examples/helix_lm/torch_helix.py);
 * the transformer has none yet. */
int model_export(const model *m, const char *const *meta, int n_meta, const char *path) {
    (void)m, (void)meta, (void)n_meta, (void)path;
    return fail("export: the gpt example has no PyTorch module to export to");
}
