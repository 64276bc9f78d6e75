/* modules.c: layer objects with PyTorch's state_dict names and layouts
 * (issue 29 item 4; gad.h "Layers with PyTorch's names").
 *
 * Each module adds its tensors to a gad_params set under "<prefix>.<field>"
 * as torch.nn names them, keeps a reference to each, and composes the
 * functional ops (gad_linear, gad_conv2d, gad_batch_norm,
 * gad_scaled_dot_product_attention, ...) in its forward. Arguments are
 * checked up front so that an error names the layer type and its prefix.
 * Written on the public API only (DESIGN §1). */
#include "gad.h"
#include "ops/ops_int.h" /* GAD_COMPOSITE: errors of inner ops name the layer */
#include "params.h"      /* gad__params_find: a name's lookup that records no error */

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    M_SEQ,
    M_LINEAR,
    M_EMBEDDING,
    M_LAYER_NORM,
    M_RMS_NORM,
    M_MHA,
    M_ENCODER,
    M_CONV2D,
    M_BATCH_NORM,
    M_RELU,
    M_GELU,
    M_DROPOUT,
    M_FLATTEN,
    M_MAX_POOL,
    M_ADAPTIVE_AVG
};

/* Up to six named tensors per module (MultiheadAttention's four, batch
 * norm's five). */
enum { MAX_FIELDS = 6, NAME_CAP = 512 };

struct gad_module {
    int kind;
    const char *type; /* PyTorch's class name */
    char *prefix;
    int training;
    int failed; /* a Sequential given a NULL child */
    gad_rng *rng;
    const char *field[MAX_FIELDS];
    gad_tensor *t[MAX_FIELDS]; /* own references; NULL where absent */
    int nfield;
    gad_module **child;
    int nchild, cap;
    char scratch[NAME_CAP];
    /* hyper-parameters */
    int64_t in, out, heads, pad;
    int64_t nshape[GAD_MAX_RANK];
    int nrank, rank_lo, rank_hi, flag; /* flag: gelu tanh, norm_first, activation */
    double eps, momentum, p;
    gad_conv_opts conv;
    gad_pool_opts pool;
};

/* --------------------------------------------------------------- basics */

static gad_module *module_new(int kind, const char *type, const char *prefix) {
    gad_module *m = calloc(1, sizeof *m);
    if (m) m->prefix = strdup(prefix ? prefix : "");
    if (!m || !m->prefix) {
        free(m);
        return gad_error_set(GAD_ERR_MEMORY, type, "out of memory");
    }
    m->kind = kind;
    m->type = type;
    m->training = 1;
    return m;
}

void gad_module_free(gad_module *m) {
    if (!m) return;
    for (int i = 0; i < m->nchild; i++) gad_module_free(m->child[i]);
    for (int i = 0; i < m->nfield; i++) gad_release(m->t[i]);
    free(m->child);
    free(m->prefix);
    free(m);
}

static int add_child(gad_module *m, gad_module *c) {
    if (m->nchild == m->cap) {
        int cap = m->cap ? 2 * m->cap : 4;
        gad_module **p = realloc(m->child, (size_t)cap * sizeof *p);
        if (!p) {
            gad_error_set(GAD_ERR_MEMORY, m->type, "out of memory");
            return -1;
        }
        m->child = p;
        m->cap = cap;
    }
    m->child[m->nchild++] = c;
    return 0;
}

/* prefix + "." + name (name alone at the top level) into buf. */
static int join(char *buf, const char *prefix, const char *name, const char *type) {
    int k = snprintf(buf, NAME_CAP, "%s%s%s", prefix, *prefix ? "." : "", name);
    if (k >= 0 && k < NAME_CAP) return 0;
    gad_error_set(GAD_ERR_DOMAIN, type,
                  "a name of %zu bytes is longer than %d bytes (\"%.40s...\")",
                  strlen(prefix) + 1 + strlen(name), NAME_CAP - 1, prefix);
    return -1;
}

const char *gad_nn_prefix(gad_module *m, const char *name) {
    if (!m || !name) return gad_error_set(GAD_ERR_DOMAIN, "nn_prefix", "NULL argument");
    return join(m->scratch, m->prefix, name, m->type) ? NULL : m->scratch;
}

static int check_ctx(const gad_nn_ctx *c, const char *type, const char *prefix) {
    if (!c || !c->ps || !prefix) {
        gad_error_set(GAD_ERR_DOMAIN, type, "the %s is NULL",
                      !c ? "context" : !c->ps ? "parameter set" : "prefix");
        return -1;
    }
    if (c->dtype != GAD_F32 && c->dtype != GAD_F64) {
        gad_error_set(GAD_ERR_DTYPE, type, "\"%s\": parameters must be f32 or f64, got %s", prefix,
                      gad_dtype_name(c->dtype));
        return -1;
    }
    return 0;
}

/* The fields a module will add, checked free in the set before anything
 * is added, so that an error adds nothing. */
static int names_free(const gad_nn_ctx *c, gad_module *m, const char *const *fields, int n) {
    char name[NAME_CAP];
    for (int i = 0; i < n; i++) {
        if (join(name, m->prefix, fields[i], m->type)) return -1;
        if (gad__params_find(c->ps, name)) {
            gad_error_set(GAD_ERR_DOMAIN, m->type, "the name \"%s\" is already in the set", name);
            return -1;
        }
    }
    return 0;
}

/* Add t (a new tensor from a constructor) as field: a parameter, or a
 * buffer when buffer is set. The module keeps a reference. */
static int add_field(const gad_nn_ctx *c, gad_module *m, const char *field, gad_tensor *t,
                     int buffer) {
    char name[NAME_CAP];
    if (!t || join(name, m->prefix, field, m->type)) return -1;
    gad_tensor *r = buffer ? gad_params_add_buffer(c->ps, name, t) : gad_params_add(c->ps, name, t);
    if (!r) return -1;
    m->field[m->nfield] = field;
    m->t[m->nfield++] = gad_retain(r);
    return 0;
}

static gad_tensor *field_of(const gad_module *m, const char *field) {
    for (int i = 0; i < m->nfield; i++)
        if (!strcmp(m->field[i], field)) return m->t[i];
    return NULL;
}

/* U(-bound, bound) of shape in dtype, or zeros without a generator or
 * with an empty fan (PyTorch skips the init of an empty tensor). */
static gad_tensor *uniform(const gad_nn_ctx *c, const int64_t *shape, int rank, double bound) {
    if (!c->rng || !(bound > 0) || !isfinite(bound)) return gad_zeros(shape, rank, c->dtype);
    return gad_rng_uniform_tensor(c->rng, shape, rank, c->dtype, -bound, bound);
}

/* Finish a constructor: on an error (st != 0) free m, and keep the set
 * unchanged where the error came before any add (names_free did that). */
static gad_module *finish(gad_module *m, int st) {
    if (!st) return m;
    gad_module_free(m);
    return NULL;
}

gad_module *gad_module_train(gad_module *m, int on) {
    if (!m) return gad_error_set(GAD_ERR_DOMAIN, "module_train", "the module is NULL");
    m->training = on != 0;
    for (int i = 0; i < m->nchild; i++) gad_module_train(m->child[i], on);
    return m;
}

int gad_module_training(const gad_module *m) { return m ? m->training : -1; }
const char *gad_module_type(const gad_module *m) { return m ? m->type : "?"; }
const char *gad_module_prefix(const gad_module *m) { return m ? m->prefix : NULL; }

gad_tensor *gad_module_tensor(const gad_module *m, const char *field) {
    if (!m || !field) return gad_error_set(GAD_ERR_DOMAIN, "module_tensor", "NULL argument");
    gad_tensor *t = field_of(m, field);
    if (!t)
        return gad_error_set(GAD_ERR_INDEX, "module_tensor", "%s \"%s\" has no tensor \"%s\"",
                             m->type, m->prefix, field);
    return t;
}

int gad_module_child_count(const gad_module *m) {
    if (!m) {
        gad_error_set(GAD_ERR_DOMAIN, "module_child_count", "the module is NULL");
        return -1;
    }
    return m->nchild;
}

gad_module *gad_module_child(const gad_module *m, int i) {
    if (!m) return gad_error_set(GAD_ERR_DOMAIN, "module_child", "the module is NULL");
    if (i < 0 || i >= m->nchild)
        return gad_error_set(GAD_ERR_INDEX, "module_child", "%s \"%s\" has %d children, asked %d",
                             m->type, m->prefix, m->nchild, i);
    return m->child[i];
}

/* ----------------------------------------------------------- containers */

gad_module *gad_nn_sequential(const gad_nn_ctx *c, const char *prefix) {
    if (check_ctx(c, "Sequential", prefix)) return NULL;
    return module_new(M_SEQ, "Sequential", prefix);
}

const char *gad_nn_seq_next(gad_module *seq) {
    if (!seq) return gad_error_set(GAD_ERR_DOMAIN, "nn_seq_next", "the container is NULL");
    char idx[24];
    snprintf(idx, sizeof idx, "%d", seq->nchild);
    return gad_nn_prefix(seq, idx);
}

gad_module *gad_nn_seq_add(gad_module *seq, gad_module *child) {
    if (!seq) {
        gad_module_free(child);
        return gad_error_set(GAD_ERR_DOMAIN, "nn_seq_add", "the container is NULL");
    }
    if (seq->kind != M_SEQ) {
        gad_module_free(child);
        return gad_error_set(GAD_ERR_DOMAIN, "nn_seq_add", "%s \"%s\" is not a Sequential",
                             seq->type, seq->prefix);
    }
    if (!child) {
        seq->failed = 1;
        if (!gad_last_error())
            gad_error_set(GAD_ERR_DOMAIN, "nn_seq_add", "Sequential \"%s\": the child is NULL",
                          seq->prefix);
        return NULL;
    }
    if (add_child(seq, child)) {
        seq->failed = 1;
        gad_module_free(child);
        return NULL;
    }
    child->training = seq->training;
    return child;
}

/* ---------------------------------------------------------------- Linear */

gad_module *gad_nn_linear(const gad_nn_ctx *c, const char *prefix, int64_t in, int64_t out,
                          int bias) {
    const char *type = "Linear";
    if (check_ctx(c, type, prefix)) return NULL;
    if (in < 0 || out < 0)
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": in_features = %lld and out_features = "
                             "%lld must be >= 0", prefix, (long long)in, (long long)out);
    gad_module *m = module_new(M_LINEAR, type, prefix);
    if (!m) return NULL;
    m->in = in;
    m->out = out;
    static const char *const f[2] = {"weight", "bias"};
    if (names_free(c, m, f, bias ? 2 : 1)) return finish(m, -1);
    /* kaiming_uniform(a = sqrt(5)) on [out, in] is U(+-1/sqrt(in)); the
     * bias is U(+-1/sqrt(in)) too (nn.Linear.reset_parameters) */
    double bound = in > 0 ? 1.0 / sqrt((double)in) : 0.0;
    int st = 0;
    gad_scope_begin();
    st = add_field(c, m, "weight", uniform(c, (int64_t[]){out, in}, 2, bound), 0);
    if (!st && bias) st = add_field(c, m, "bias", uniform(c, &out, 1, bound), 0);
    gad_scope_end();
    return finish(m, st);
}

gad_module *gad_nn_linear_tied(const gad_nn_ctx *c, const char *prefix, gad_tensor *weight,
                               int bias) {
    const char *type = "Linear";
    if (check_ctx(c, type, prefix)) return NULL;
    if (!weight) return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": the weight is NULL", prefix);
    if (gad_rank(weight) != 2 || gad_dtype(weight) != c->dtype) {
        char sw[GAD_SHAPE_FORMAT_CAP];
        return gad_error_set(GAD_ERR_SHAPE, type, "\"%s\": the tied weight %s %s must be [out, "
                             "in] of the context's dtype %s", prefix,
                             gad_dtype_name(gad_dtype(weight)),
                             gad_shape_format(sw, sizeof sw, gad_shape(weight), gad_rank(weight)),
                             gad_dtype_name(c->dtype));
    }
    gad_module *m = module_new(M_LINEAR, type, prefix);
    if (!m) return NULL;
    m->out = gad_shape(weight)[0];
    m->in = gad_shape(weight)[1];
    static const char *const f[2] = {"weight", "bias"};
    if (names_free(c, m, f, bias ? 2 : 1)) return finish(m, -1);
    char name[NAME_CAP];
    if (join(name, m->prefix, "weight", type) || !gad_params_add_tied(c->ps, name, weight))
        return finish(m, -1);
    m->field[0] = "weight";
    m->t[0] = gad_retain(weight);
    m->nfield = 1;
    double bound = m->in > 0 ? 1.0 / sqrt((double)m->in) : 0.0;
    int st = 0;
    gad_scope_begin();
    if (bias) st = add_field(c, m, "bias", uniform(c, &m->out, 1, bound), 0);
    gad_scope_end();
    return finish(m, st);
}

static gad_tensor *linear_fwd(gad_module *m, gad_tensor *x) {
    int r = gad_rank(x);
    if (r < 1 || gad_shape(x)[r - 1] != m->in) {
        char sx[GAD_SHAPE_FORMAT_CAP];
        return gad_error_set(GAD_ERR_SHAPE, m->type, "\"%s\": x %s must be [..., %lld]", m->prefix,
                             gad_shape_format(sx, sizeof sx, gad_shape(x), r), (long long)m->in);
    }
    /* x @ weight^T: the GEMM reads the transposed view in place */
    return gad_linear(x, gad_transpose(m->t[0]), field_of(m, "bias"));
}

/* ------------------------------------------------------------- Embedding */

gad_module *gad_nn_embedding(const gad_nn_ctx *c, const char *prefix, int64_t num, int64_t dim,
                             int64_t padding_idx) {
    const char *type = "Embedding";
    if (check_ctx(c, type, prefix)) return NULL;
    if (num < 0 || dim < 0)
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": num_embeddings = %lld and "
                             "embedding_dim = %lld must be >= 0", prefix, (long long)num,
                             (long long)dim);
    if (padding_idx != GAD_NN_NO_PADDING && (padding_idx >= num || padding_idx < -num))
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": padding_idx = %lld must be within "
                             "num_embeddings = %lld", prefix, (long long)padding_idx,
                             (long long)num);
    gad_module *m = module_new(M_EMBEDDING, type, prefix);
    if (!m) return NULL;
    m->in = num;
    m->out = dim;
    m->pad = padding_idx == GAD_NN_NO_PADDING ? -1 : padding_idx < 0 ? padding_idx + num
                                                                      : padding_idx;
    static const char *const f[1] = {"weight"};
    if (names_free(c, m, f, 1)) return finish(m, -1);
    int st = 0;
    gad_scope_begin();
    int64_t shape[2] = {num, dim};
    gad_tensor *w = c->rng ? gad_rng_normal_tensor(c->rng, shape, 2, c->dtype, 0.0, 1.0)
                           : gad_zeros(shape, 2, c->dtype);
    if (w && m->pad >= 0 && dim > 0) {
        /* PyTorch zeroes the padding row at init */
        gad_tensor *mask = gad_eq_scalar(gad_arange(0, (double)num, 1, GAD_I64), (double)m->pad);
        w = gad_masked_fill(w, gad_unsqueeze(mask, 1), 0.0);
    }
    st = add_field(c, m, "weight", w, 0);
    gad_scope_end();
    return finish(m, st);
}

static gad_tensor *embedding_fwd(gad_module *m, gad_tensor *idx) {
    if (gad_dtype(idx) != GAD_I64)
        return gad_error_set(GAD_ERR_DTYPE, m->type, "\"%s\": indices must be i64, got %s",
                             m->prefix, gad_dtype_name(gad_dtype(idx)));
    gad_tensor *w = m->t[0];
    gad_tensor *y = gad_embedding(w, idx);
    if (!y || m->pad < 0) return y;
    /* the padding row's value, with no gradient (PyTorch's padding_idx) */
    gad_tensor *held = gad_embedding(gad_detach(w), idx);
    return gad_where(gad_unsqueeze(gad_eq_scalar(idx, (double)m->pad), -1), held, y);
}

/* ----------------------------------------------------- LayerNorm, RMSNorm */

static gad_module *norm_new(const gad_nn_ctx *c, int kind, const char *type, const char *prefix,
                            const int64_t *shape, int n, double eps, int affine, int bias) {
    if (check_ctx(c, type, prefix)) return NULL;
    if (!shape || n < 1 || n > GAD_MAX_RANK)
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": normalized_shape needs 1 to %d dims, "
                             "got %d", prefix, GAD_MAX_RANK, shape ? n : 0);
    for (int i = 0; i < n; i++)
        if (shape[i] < 0)
            return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": normalized_shape[%d] = %lld is "
                                 "negative", prefix, i, (long long)shape[i]);
    if (!(eps >= 0) || !isfinite(eps)) {
        if (!(kind == M_RMS_NORM && isnan(eps)))
            return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": eps = %g must be finite and >= 0",
                                 prefix, eps);
    }
    gad_module *m = module_new(kind, type, prefix);
    if (!m) return NULL;
    memcpy(m->nshape, shape, (size_t)n * sizeof *shape);
    m->nrank = n;
    m->eps = eps;
    static const char *const f[2] = {"weight", "bias"};
    int nf = affine ? (bias ? 2 : 1) : 0;
    if (names_free(c, m, f, nf)) return finish(m, -1);
    int st = 0;
    gad_scope_begin();
    if (nf >= 1) st = add_field(c, m, "weight", gad_ones(shape, n, c->dtype), 0);
    if (!st && nf == 2) st = add_field(c, m, "bias", gad_zeros(shape, n, c->dtype), 0);
    gad_scope_end();
    return finish(m, st);
}

gad_module *gad_nn_layer_norm(const gad_nn_ctx *c, const char *prefix, const int64_t *shape,
                              int n, double eps, int elementwise_affine, int bias) {
    return norm_new(c, M_LAYER_NORM, "LayerNorm", prefix, shape, n, eps, elementwise_affine, bias);
}

gad_module *gad_nn_rms_norm(const gad_nn_ctx *c, const char *prefix, const int64_t *shape, int n,
                            double eps, int elementwise_affine) {
    return norm_new(c, M_RMS_NORM, "RMSNorm", prefix, shape, n, eps, elementwise_affine, 0);
}

/* x [..., *shape] -> [..., prod(shape)] and the affine tensors flattened:
 * the functional norms work over the last axis. */
static gad_tensor *norm_fwd(gad_module *m, gad_tensor *x) {
    int r = gad_rank(x), n = m->nrank;
    const int64_t *xs = gad_shape(x);
    int ok = r >= n;
    for (int i = 0; ok && i < n; i++) ok = xs[r - n + i] == m->nshape[i];
    if (!ok) {
        char sx[GAD_SHAPE_FORMAT_CAP], sn[GAD_SHAPE_FORMAT_CAP];
        return gad_error_set(GAD_ERR_SHAPE, m->type, "\"%s\": x %s must end in normalized_shape %s",
                             m->prefix, gad_shape_format(sx, sizeof sx, xs, r),
                             gad_shape_format(sn, sizeof sn, m->nshape, n));
    }
    if (gad_dtype(x) != GAD_F32 && gad_dtype(x) != GAD_F64)
        return gad_error_set(GAD_ERR_DTYPE, m->type, "\"%s\": x must be f32 or f64, got %s",
                             m->prefix, gad_dtype_name(gad_dtype(x)));
    int64_t flat[GAD_MAX_RANK], d = 1;
    for (int i = 0; i < n; i++) d *= m->nshape[i];
    for (int i = 0; i < r - n; i++) flat[i] = xs[i];
    flat[r - n] = d;
    gad_tensor *w = field_of(m, "weight"), *b = field_of(m, "bias");
    gad_tensor *x2 = n == 1 ? x : gad_reshape(x, flat, r - n + 1);
    gad_tensor *w2 = w && n > 1 ? gad_reshape(w, &d, 1) : w;
    gad_tensor *b2 = b && n > 1 ? gad_reshape(b, &d, 1) : b;
    gad_tensor *y;
    if (m->kind == M_LAYER_NORM) {
        y = gad_layer_norm(x2, w2, b2, m->eps);
    } else {
        double eps = isnan(m->eps) ? (gad_dtype(x) == GAD_F32 ? (double)FLT_EPSILON : DBL_EPSILON)
                                   : m->eps;
        y = gad_rms_norm(x2, eps);
        if (w2) y = gad_mul(y, w2);
    }
    return n == 1 ? y : gad_reshape(y, xs, r);
}

/* ---------------------------------------------------- MultiheadAttention */

gad_module *gad_nn_multihead_attention(const gad_nn_ctx *c, const char *prefix,
                                       int64_t embed_dim, int64_t num_heads, double dropout,
                                       int bias) {
    const char *type = "MultiheadAttention";
    if (check_ctx(c, type, prefix)) return NULL;
    if (embed_dim <= 0 || num_heads <= 0)
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": embed_dim = %lld and num_heads = %lld "
                             "must be > 0", prefix, (long long)embed_dim, (long long)num_heads);
    if (embed_dim % num_heads)
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": embed_dim = %lld is not divisible by "
                             "num_heads = %lld", prefix, (long long)embed_dim,
                             (long long)num_heads);
    if (!(dropout >= 0 && dropout <= 1))
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": dropout = %g must be in [0, 1]", prefix,
                             dropout);
    gad_module *m = module_new(M_MHA, type, prefix);
    if (!m) return NULL;
    m->in = embed_dim;
    m->heads = num_heads;
    m->p = dropout;
    m->rng = c->rng;
    static const char *const f[4] = {"in_proj_weight", "out_proj.weight", "in_proj_bias",
                                     "out_proj.bias"};
    if (names_free(c, m, f, bias ? 4 : 2)) return finish(m, -1);
    int64_t E = embed_dim, E3 = 3 * embed_dim;
    int st = 0;
    gad_scope_begin();
    /* _reset_parameters: xavier_uniform_ on [3E, E] (fan_in E, fan_out
     * 3E); out_proj as a Linear; both biases zero */
    st = add_field(c, m, "in_proj_weight",
                   uniform(c, (int64_t[]){E3, E}, 2, sqrt(6.0 / (double)(E + E3))), 0);
    if (!st)
        st = add_field(c, m, "out_proj.weight",
                       uniform(c, (int64_t[]){E, E}, 2, 1.0 / sqrt((double)E)), 0);
    if (!st && bias) st = add_field(c, m, "in_proj_bias", gad_zeros(&E3, 1, c->dtype), 0);
    if (!st && bias) st = add_field(c, m, "out_proj.bias", gad_zeros(&E, 1, c->dtype), 0);
    gad_scope_end();
    return finish(m, st);
}

/* [B, T, E] -> [B, H, T, d] */
static gad_tensor *heads_split(gad_tensor *x, int64_t H) {
    const int64_t *s = gad_shape(x);
    gad_tensor *y = gad_reshape(x, (int64_t[]){s[0], s[1], H, s[2] / H}, 4);
    return gad_permute(y, (int[]){0, 2, 1, 3}, 4);
}

/* A mask in PyTorch MHA's sense (bool true: masked) as an additive float
 * mask of dtype: 0 where attended, -inf where masked. */
static gad_tensor *additive_mask(gad_tensor *mask, gad_dtype_t dtype) {
    if (gad_dtype(mask) != GAD_BOOL) return mask;
    return gad_masked_fill(gad_zeros(gad_shape(mask), gad_rank(mask), dtype), mask, -INFINITY);
}

static int check_mask(gad_module *m, const char *what, gad_tensor *mask, gad_dtype_t dtype,
                      const int64_t *want1, int r1, const int64_t *want2, int r2) {
    if (!mask) return 0;
    char sm[GAD_SHAPE_FORMAT_CAP], s1[GAD_SHAPE_FORMAT_CAP], s2[GAD_SHAPE_FORMAT_CAP];
    if (gad_dtype(mask) != GAD_BOOL && gad_dtype(mask) != dtype) {
        gad_error_set(GAD_ERR_DTYPE, m->type, "\"%s\": %s must be bool or %s, got %s", m->prefix,
                      what, gad_dtype_name(dtype), gad_dtype_name(gad_dtype(mask)));
        return -1;
    }
    int r = gad_rank(mask);
    const int64_t *s = gad_shape(mask);
    if (r == r1 && !memcmp(s, want1, (size_t)r1 * sizeof *s)) return 0;
    if (want2 && r == r2 && !memcmp(s, want2, (size_t)r2 * sizeof *s)) return 0;
    gad_error_set(GAD_ERR_SHAPE, m->type, "\"%s\": %s %s must be %s%s%s", m->prefix, what,
                  gad_shape_format(sm, sizeof sm, s, r), gad_shape_format(s1, sizeof s1, want1, r1),
                  want2 ? " or " : "", want2 ? gad_shape_format(s2, sizeof s2, want2, r2) : "");
    return -1;
}

static gad_tensor *mha(gad_module *m, gad_tensor *q, gad_tensor *k, gad_tensor *v,
                       gad_tensor *kpm, gad_tensor *am, int is_causal) {
    int64_t E = m->in, H = m->heads;
    int rq = gad_rank(q);
    char s1[GAD_SHAPE_FORMAT_CAP], s2[GAD_SHAPE_FORMAT_CAP], s3[GAD_SHAPE_FORMAT_CAP];
    int ok = (rq == 2 || rq == 3) && gad_rank(k) == rq && gad_rank(v) == rq &&
             gad_shape(q)[rq - 1] == E && gad_shape(k)[rq - 1] == E && gad_shape(v)[rq - 1] == E &&
             !memcmp(gad_shape(k), gad_shape(v), (size_t)(rq - 1) * sizeof(int64_t)) &&
             (rq == 2 || gad_shape(q)[0] == gad_shape(k)[0]);
    if (!ok)
        return gad_error_set(GAD_ERR_SHAPE, m->type,
                             "\"%s\": q %s, k %s, v %s must be [B, T, %lld], [B, S, %lld], "
                             "[B, S, %lld] (or without B)", m->prefix,
                             gad_shape_format(s1, sizeof s1, gad_shape(q), gad_rank(q)),
                             gad_shape_format(s2, sizeof s2, gad_shape(k), gad_rank(k)),
                             gad_shape_format(s3, sizeof s3, gad_shape(v), gad_rank(v)),
                             (long long)E, (long long)E, (long long)E);
    gad_dtype_t dt = gad_dtype(q);
    if (dt != gad_dtype(m->t[0]) || gad_dtype(k) != dt || gad_dtype(v) != dt)
        return gad_error_set(GAD_ERR_DTYPE, m->type, "\"%s\": q, k, v are %s, %s, %s; the "
                             "parameters %s", m->prefix, gad_dtype_name(dt),
                             gad_dtype_name(gad_dtype(k)), gad_dtype_name(gad_dtype(v)),
                             gad_dtype_name(gad_dtype(m->t[0])));
    int unbatched = rq == 2;
    if (unbatched) q = gad_unsqueeze(q, 0), k = gad_unsqueeze(k, 0), v = gad_unsqueeze(v, 0);
    int64_t B = gad_shape(q)[0], T = gad_shape(q)[1], S = gad_shape(k)[1];
    if (check_mask(m, "attn_mask", am, dt, (int64_t[]){T, S}, 2,
                   unbatched ? NULL : (int64_t[]){B * H, T, S}, 3) ||
        check_mask(m, "key_padding_mask", kpm, dt, unbatched ? (int64_t[]){S} : (int64_t[]){B, S},
                   unbatched ? 1 : 2, NULL, 0))
        return NULL;
    gad_tensor *w = m->t[0], *b = field_of(m, "in_proj_bias");
    gad_tensor *qp, *kp, *vp;
    if (q == k && k == v) { /* self-attention: one product for q, k and v */
        gad_tensor *qkv = gad_linear(q, gad_transpose(w), b);
        qp = gad_slice(qkv, (gad_range[]){GAD_ALL, GAD_ALL, GAD_RANGE(0, E)}, 3);
        kp = gad_slice(qkv, (gad_range[]){GAD_ALL, GAD_ALL, GAD_RANGE(E, 2 * E)}, 3);
        vp = gad_slice(qkv, (gad_range[]){GAD_ALL, GAD_ALL, GAD_RANGE(2 * E, 3 * E)}, 3);
    } else {
        gad_tensor *in[3] = {q, k, v}, *out[3];
        for (int i = 0; i < 3; i++) {
            gad_tensor *wi = gad_slice(w, (gad_range[]){GAD_RANGE(i * E, (i + 1) * E)}, 1);
            gad_tensor *bi = b ? gad_slice(b, (gad_range[]){GAD_RANGE(i * E, (i + 1) * E)}, 1)
                               : NULL;
            out[i] = gad_linear(in[i], gad_transpose(wi), bi);
        }
        qp = out[0], kp = out[1], vp = out[2];
    }
    /* PyTorch's MHA masks are "true: masked"; SDPA's bool masks are "true:
     * attended", so both become additive here unless one bool mask alone
     * can be inverted */
    gad_tensor *mask = NULL;
    if (am) {
        mask = gad_rank(am) == 3 ? gad_reshape(am, (int64_t[]){B, H, T, S}, 4) : am;
        is_causal = 0; /* the mask given wins over the hint, as PyTorch */
    }
    if (kpm) {
        gad_tensor *km = gad_reshape(kpm, (int64_t[]){B, 1, 1, S}, 4);
        if (is_causal) {
            gad_tensor *later = gad_gt(gad_unsqueeze(gad_arange(0, (double)S, 1, GAD_I64), 0),
                                       gad_unsqueeze(gad_arange(0, (double)T, 1, GAD_I64), 1));
            mask = later;
            is_causal = 0;
        }
        if (mask && gad_dtype(mask) == GAD_BOOL && gad_dtype(km) == GAD_BOOL)
            mask = gad_logical_or(mask, km);
        else if (mask)
            mask = gad_add(additive_mask(mask, dt), additive_mask(km, dt));
        else
            mask = km;
    }
    if (mask && gad_dtype(mask) == GAD_BOOL) mask = gad_logical_not(mask);
    double p = m->training ? m->p : 0.0;
    gad_tensor *o = gad_scaled_dot_product_attention(heads_split(qp, H), heads_split(kp, H),
                                                     heads_split(vp, H), mask, is_causal, p, 0.0,
                                                     m->rng);
    o = gad_reshape(gad_permute(o, (int[]){0, 2, 1, 3}, 4), (int64_t[]){B, T, E}, 3);
    o = gad_linear(o, gad_transpose(field_of(m, "out_proj.weight")), field_of(m, "out_proj.bias"));
    return unbatched ? gad_squeeze(o, 0) : o;
}

/* ----------------------------------------------- TransformerEncoderLayer */

gad_module *gad_nn_transformer_encoder_layer(const gad_nn_ctx *c, const char *prefix,
                                             int64_t d_model, int64_t nhead,
                                             int64_t dim_feedforward, double dropout,
                                             gad_nn_activation activation, double layer_norm_eps,
                                             int norm_first, int bias) {
    const char *type = "TransformerEncoderLayer";
    if (check_ctx(c, type, prefix)) return NULL;
    if (activation != GAD_NN_RELU && activation != GAD_NN_GELU)
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": activation = %d is neither "
                             "GAD_NN_RELU nor GAD_NN_GELU", prefix, (int)activation);
    if (d_model <= 0 || nhead <= 0 || d_model % nhead)
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": d_model = %lld must be > 0 and "
                             "divisible by nhead = %lld", prefix, (long long)d_model,
                             (long long)nhead);
    if (dim_feedforward <= 0)
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": dim_feedforward = %lld must be > 0",
                             prefix, (long long)dim_feedforward);
    if (!(dropout >= 0 && dropout <= 1))
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": dropout = %g must be in [0, 1]", prefix,
                             dropout);
    gad_module *m = module_new(M_ENCODER, type, prefix);
    if (!m) return NULL;
    m->p = dropout;
    m->rng = c->rng;
    m->flag = (norm_first ? 1 : 0) | (activation == GAD_NN_GELU ? 2 : 0);
    m->in = d_model;
    int64_t D = d_model;
    /* the children's names first, so that an error adds nothing */
    static const char *const f[] = {
        "self_attn.in_proj_weight", "self_attn.out_proj.weight", "linear1.weight",
        "linear2.weight",           "norm1.weight",              "norm2.weight",
        "self_attn.in_proj_bias",   "self_attn.out_proj.bias",   "linear1.bias",
        "linear2.bias",             "norm1.bias",                "norm2.bias"};
    if (names_free(c, m, f, bias ? 12 : 6)) return finish(m, -1);
    gad_module *ch[5];
    ch[0] = gad_nn_multihead_attention(c, gad_nn_prefix(m, "self_attn"), D, nhead, dropout, bias);
    if (!ch[0] || add_child(m, ch[0])) return gad_module_free(ch[0]), finish(m, -1);
    ch[1] = gad_nn_linear(c, gad_nn_prefix(m, "linear1"), D, dim_feedforward, bias);
    if (!ch[1] || add_child(m, ch[1])) return gad_module_free(ch[1]), finish(m, -1);
    ch[2] = gad_nn_linear(c, gad_nn_prefix(m, "linear2"), dim_feedforward, D, bias);
    if (!ch[2] || add_child(m, ch[2])) return gad_module_free(ch[2]), finish(m, -1);
    ch[3] = gad_nn_layer_norm(c, gad_nn_prefix(m, "norm1"), &D, 1, layer_norm_eps, 1, bias);
    if (!ch[3] || add_child(m, ch[3])) return gad_module_free(ch[3]), finish(m, -1);
    ch[4] = gad_nn_layer_norm(c, gad_nn_prefix(m, "norm2"), &D, 1, layer_norm_eps, 1, bias);
    if (!ch[4] || add_child(m, ch[4])) return gad_module_free(ch[4]), finish(m, -1);
    return m;
}

static gad_tensor *drop(gad_module *m, gad_tensor *x) {
    return m->training && m->p > 0 ? gad_dropout(x, m->p, m->rng, 1) : x;
}

static gad_tensor *encoder(gad_module *m, gad_tensor *x, gad_tensor *mask, gad_tensor *kpm,
                           int is_causal) {
    int r = gad_rank(x);
    if ((r != 2 && r != 3) || gad_shape(x)[r - 1] != m->in) {
        char sx[GAD_SHAPE_FORMAT_CAP];
        return gad_error_set(GAD_ERR_SHAPE, m->type, "\"%s\": x %s must be [B, T, %lld] or "
                             "[T, %lld]", m->prefix,
                             gad_shape_format(sx, sizeof sx, gad_shape(x), r), (long long)m->in,
                             (long long)m->in);
    }
    gad_module **ch = m->child;
    int norm_first = m->flag & 1, gelu = m->flag & 2;
#define SA(t) drop(m, mha(ch[0], (t), (t), (t), kpm, mask, is_causal))
#define FF(t)                                                                                      \
    drop(m, linear_fwd(ch[2], drop(m, gelu ? gad_gelu_erf(linear_fwd(ch[1], (t)))                  \
                                           : gad_relu(linear_fwd(ch[1], (t))))))
    if (norm_first) {
        gad_tensor *h = norm_fwd(ch[3], x);
        x = gad_add(x, SA(h));
        h = norm_fwd(ch[4], x);
        x = gad_add(x, FF(h));
    } else {
        x = norm_fwd(ch[3], gad_add(x, SA(x)));
        x = norm_fwd(ch[4], gad_add(x, FF(x)));
    }
#undef SA
#undef FF
    return x;
}

/* ---------------------------------------------------------------- Conv2d */

gad_module *gad_nn_conv2d(const gad_nn_ctx *c, const char *prefix, int64_t in, int64_t out,
                          int64_t kh, int64_t kw, const gad_conv_opts *opts, int bias) {
    const char *type = "Conv2d";
    if (check_ctx(c, type, prefix)) return NULL;
    gad_conv_opts o = opts ? *opts : (gad_conv_opts){0};
    int64_t g = o.groups ? o.groups : 1;
    if (in <= 0 || out <= 0 || kh <= 0 || kw <= 0 || g < 0)
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": in_channels = %lld, out_channels = "
                             "%lld, kernel_size = (%lld, %lld) must be > 0 and groups = %lld >= 0",
                             prefix, (long long)in, (long long)out, (long long)kh, (long long)kw,
                             (long long)o.groups);
    if (in % g || out % g)
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": groups = %lld must divide in_channels "
                             "= %lld and out_channels = %lld", prefix, (long long)g, (long long)in,
                             (long long)out);
    for (int i = 0; i < 2; i++)
        if (o.stride[i] < 0 || o.padding[i] < 0 || o.dilation[i] < 0)
            return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": stride (%lld, %lld), padding "
                                 "(%lld, %lld) and dilation (%lld, %lld) must be >= 0", prefix,
                                 (long long)o.stride[0], (long long)o.stride[1],
                                 (long long)o.padding[0], (long long)o.padding[1],
                                 (long long)o.dilation[0], (long long)o.dilation[1]);
    gad_module *m = module_new(M_CONV2D, type, prefix);
    if (!m) return NULL;
    m->in = in;
    m->out = out;
    m->conv = o;
    static const char *const f[2] = {"weight", "bias"};
    if (names_free(c, m, f, bias ? 2 : 1)) return finish(m, -1);
    double bound = 1.0 / sqrt((double)(in / g * kh * kw));
    int st = 0;
    gad_scope_begin();
    st = add_field(c, m, "weight", uniform(c, (int64_t[]){out, in / g, kh, kw}, 4, bound), 0);
    if (!st && bias) st = add_field(c, m, "bias", uniform(c, &out, 1, bound), 0);
    gad_scope_end();
    return finish(m, st);
}

static gad_tensor *conv_fwd(gad_module *m, gad_tensor *x) {
    int r = gad_rank(x);
    if ((r != 3 && r != 4) || gad_shape(x)[r - 3] != m->in) {
        char sx[GAD_SHAPE_FORMAT_CAP];
        return gad_error_set(GAD_ERR_SHAPE, m->type, "\"%s\": x %s must be [N, %lld, H, W] or "
                             "[%lld, H, W]", m->prefix,
                             gad_shape_format(sx, sizeof sx, gad_shape(x), r), (long long)m->in,
                             (long long)m->in);
    }
    return gad_conv2d(x, m->t[0], field_of(m, "bias"), &m->conv);
}

/* ------------------------------------------------------------- BatchNorm */

static gad_module *bn_new(const gad_nn_ctx *c, const char *type, int lo, int hi,
                          const char *prefix, int64_t C, double eps, double momentum, int affine,
                          int track) {
    if (check_ctx(c, type, prefix)) return NULL;
    if (C <= 0)
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": num_features = %lld must be > 0",
                             prefix, (long long)C);
    if (!(eps >= 0) || !isfinite(eps))
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": eps = %g must be finite and >= 0",
                             prefix, eps);
    if (isinf(momentum))
        return gad_error_set(GAD_ERR_DOMAIN, type, "\"%s\": momentum = %g must be finite (NaN: "
                             "PyTorch's None)", prefix, momentum);
    gad_module *m = module_new(M_BATCH_NORM, type, prefix);
    if (!m) return NULL;
    m->in = C;
    m->eps = eps;
    m->momentum = momentum;
    m->rank_lo = lo;
    m->rank_hi = hi;
    static const char *const f[5] = {"weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"};
    if ((affine && names_free(c, m, f, 2)) || (track && names_free(c, m, f + 2, 3)))
        return finish(m, -1);
    int st = 0;
    gad_scope_begin();
    if (affine) {
        st = add_field(c, m, "weight", gad_ones(&C, 1, c->dtype), 0);
        if (!st) st = add_field(c, m, "bias", gad_zeros(&C, 1, c->dtype), 0);
    }
    if (!st && track) {
        st = add_field(c, m, "running_mean", gad_zeros(&C, 1, c->dtype), 1);
        if (!st) st = add_field(c, m, "running_var", gad_ones(&C, 1, c->dtype), 1);
        if (!st) st = add_field(c, m, "num_batches_tracked", gad_zeros(NULL, 0, GAD_I64), 1);
    }
    gad_scope_end();
    return finish(m, st);
}

gad_module *gad_nn_batch_norm2d(const gad_nn_ctx *c, const char *prefix, int64_t channels,
                                double eps, double momentum, int affine, int track_running_stats) {
    return bn_new(c, "BatchNorm2d", 4, 4, prefix, channels, eps, momentum, affine,
                  track_running_stats);
}

gad_module *gad_nn_batch_norm1d(const gad_nn_ctx *c, const char *prefix, int64_t channels,
                                double eps, double momentum, int affine, int track_running_stats) {
    return bn_new(c, "BatchNorm1d", 2, 3, prefix, channels, eps, momentum, affine,
                  track_running_stats);
}

/* PyTorch's _BatchNorm.forward: in training with running statistics,
 * count the batch and update them (momentum None: the cumulative average,
 * factor 1 / batches); evaluation reads them when tracked. */
static gad_tensor *bn_fwd(gad_module *m, gad_tensor *x) {
    int r = gad_rank(x);
    if (r < m->rank_lo || r > m->rank_hi || gad_shape(x)[1] != m->in) {
        char sx[GAD_SHAPE_FORMAT_CAP];
        return gad_error_set(GAD_ERR_SHAPE, m->type, "\"%s\": x %s must be %s with C = %lld",
                             m->prefix, gad_shape_format(sx, sizeof sx, gad_shape(x), r),
                             m->rank_lo == 4 ? "[N, C, H, W]" : "[N, C] or [N, C, L]",
                             (long long)m->in);
    }
    gad_tensor *w = field_of(m, "weight"), *b = field_of(m, "bias");
    gad_tensor *rm = field_of(m, "running_mean"), *rv = field_of(m, "running_var");
    gad_tensor *nbt = field_of(m, "num_batches_tracked");
    double factor = isnan(m->momentum) ? 0.0 : m->momentum;
    if (m->training && rm) {
        int64_t count = 0;
        if (gad_read_i64(nbt, &count, 1) != GAD_OK) return NULL;
        count = count < INT64_MAX ? count + 1 : count;
        if (isnan(m->momentum)) factor = 1.0 / (double)count;
        gad_tensor *y = gad_batch_norm(x, rm, rv, w, b, 1, factor, m->eps);
        if (y && gad_write_i64(nbt, &count, 1) != GAD_OK) return NULL;
        return y;
    }
    int batch = m->training || !rm;
    return gad_batch_norm(x, batch ? NULL : rm, batch ? NULL : rv, w, b, batch, factor, m->eps);
}

/* ------------------------------------------------ modules without weights */

gad_module *gad_nn_relu(void) { return module_new(M_RELU, "ReLU", ""); }

gad_module *gad_nn_gelu(int tanh_approximation) {
    gad_module *m = module_new(M_GELU, "GELU", "");
    if (m) m->flag = tanh_approximation != 0;
    return m;
}

gad_module *gad_nn_dropout(const gad_nn_ctx *c, double p) {
    if (!(p >= 0 && p <= 1))
        return gad_error_set(GAD_ERR_DOMAIN, "Dropout", "p = %g must be in [0, 1]", p);
    gad_module *m = module_new(M_DROPOUT, "Dropout", "");
    if (m) m->p = p, m->rng = c ? c->rng : NULL;
    return m;
}

gad_module *gad_nn_flatten(int start_dim, int end_dim) {
    gad_module *m = module_new(M_FLATTEN, "Flatten", "");
    if (m) m->rank_lo = start_dim, m->rank_hi = end_dim;
    return m;
}

gad_module *gad_nn_max_pool2d(const gad_pool_opts *opts) {
    if (!opts) return gad_error_set(GAD_ERR_DOMAIN, "MaxPool2d", "the options are NULL");
    gad_module *m = module_new(M_MAX_POOL, "MaxPool2d", "");
    if (m) m->pool = *opts;
    return m;
}

gad_module *gad_nn_adaptive_avg_pool2d(int64_t oh, int64_t ow) {
    if (oh < 0 || ow < 0)
        return gad_error_set(GAD_ERR_DOMAIN, "AdaptiveAvgPool2d", "output_size (%lld, %lld) must "
                             "be >= 0", (long long)oh, (long long)ow);
    gad_module *m = module_new(M_ADAPTIVE_AVG, "AdaptiveAvgPool2d", "");
    if (m) m->nshape[0] = oh, m->nshape[1] = ow;
    return m;
}

static gad_tensor *flatten_fwd(gad_module *m, gad_tensor *x) {
    int r = gad_rank(x), s = m->rank_lo, e = m->rank_hi;
    int rr = r ? r : 1; /* PyTorch flattens a 0-d tensor to [1] */
    if (s < 0) s += rr;
    if (e < 0) e += rr;
    if (s < 0 || e >= rr || s > e)
        return gad_error_set(GAD_ERR_SHAPE, m->type, "start_dim = %d, end_dim = %d out of range "
                             "for rank %d", m->rank_lo, m->rank_hi, r);
    int64_t shape[GAD_MAX_RANK], d = 1;
    int n = 0;
    const int64_t *xs = gad_shape(x);
    for (int i = 0; i < s; i++) shape[n++] = xs[i];
    for (int i = s; i <= e && r; i++) d *= xs[i];
    shape[n++] = d;
    for (int i = e + 1; i < r; i++) shape[n++] = xs[i];
    return gad_reshape(x, shape, n);
}

/* --------------------------------------------------------------- forward */

static gad_tensor *forward(gad_module *m, gad_tensor *x) {
    switch (m->kind) {
    case M_SEQ:
        if (m->failed)
            return gad_error_set(GAD_ERR_DOMAIN, m->type, "\"%s\": a child failed to build",
                                 m->prefix);
        for (int i = 0; i < m->nchild && x; i++) x = forward(m->child[i], x);
        return x;
    case M_LINEAR: return linear_fwd(m, x);
    case M_EMBEDDING: return embedding_fwd(m, x);
    case M_LAYER_NORM:
    case M_RMS_NORM: return norm_fwd(m, x);
    case M_MHA: return mha(m, x, x, x, NULL, NULL, 0);
    case M_ENCODER: return encoder(m, x, NULL, NULL, 0);
    case M_CONV2D: return conv_fwd(m, x);
    case M_BATCH_NORM: return bn_fwd(m, x);
    case M_RELU: return gad_relu(x);
    case M_GELU: return m->flag ? gad_gelu(x) : gad_gelu_erf(x);
    case M_DROPOUT: return drop(m, x);
    case M_FLATTEN: return flatten_fwd(m, x);
    case M_MAX_POOL: return gad_max_pool2d(x, &m->pool, NULL);
    case M_ADAPTIVE_AVG: return gad_adaptive_avg_pool2d(x, m->nshape[0], m->nshape[1]);
    }
    return gad_error_set(GAD_ERR_DOMAIN, m->type, "unknown module");
}

/* Intermediates in an inner scope; the result kept for the caller. */
static gad_tensor *kept(gad_tensor *y) {
    gad_keep(y);
    gad_scope_end();
    return y;
}

gad_tensor *gad_module_forward(gad_module *m, gad_tensor *x) {
    if (!m || !x)
        return gad_error_set(GAD_ERR_DOMAIN, "module_forward", "the %s is NULL",
                             m ? "input" : "module");
    GAD_COMPOSITE(m->type);
    if (GAD_LIVE(m->type, x)) return NULL;
    gad_scope_begin();
    return kept(forward(m, x));
}

gad_tensor *gad_nn_mha_forward(gad_module *m, gad_tensor *q, gad_tensor *k, gad_tensor *v,
                               gad_tensor *key_padding_mask, gad_tensor *attn_mask,
                               int is_causal) {
    if (!m || !q || !k || !v)
        return gad_error_set(GAD_ERR_DOMAIN, "nn_mha_forward", "the %s is NULL",
                             !m ? "module" : !q ? "query" : !k ? "key" : "value");
    if (m->kind != M_MHA)
        return gad_error_set(GAD_ERR_DOMAIN, "nn_mha_forward", "%s \"%s\" is not a "
                             "MultiheadAttention", m->type, m->prefix);
    GAD_COMPOSITE(m->type);
    if (GAD_LIVE(m->type, q, k, v, key_padding_mask, attn_mask)) return NULL;
    gad_scope_begin();
    return kept(mha(m, q, k, v, key_padding_mask, attn_mask, is_causal));
}

gad_tensor *gad_nn_encoder_layer_forward(gad_module *m, gad_tensor *x, gad_tensor *src_mask,
                                         gad_tensor *src_key_padding_mask, int is_causal) {
    if (!m || !x)
        return gad_error_set(GAD_ERR_DOMAIN, "nn_encoder_layer_forward", "the %s is NULL",
                             m ? "input" : "module");
    if (m->kind != M_ENCODER)
        return gad_error_set(GAD_ERR_DOMAIN, "nn_encoder_layer_forward", "%s \"%s\" is not a "
                             "TransformerEncoderLayer", m->type, m->prefix);
    GAD_COMPOSITE(m->type);
    if (GAD_LIVE(m->type, x, src_mask, src_key_padding_mask)) return NULL;
    gad_scope_begin();
    return kept(encoder(m, x, src_mask, src_key_padding_mask, is_causal));
}
