/* sampling.c: multinomial draws and sampling from logits (SPEC §3.7),
 * torch.multinomial and the temperature / top-k / top-p sampler of text
 * generation, through the seam's sampling family. The weights are checked
 * by the kernel, on their device (DESIGN §9). Nothing here has a gradient. */
#include "backend/sampling.h"
#include "ops_int.h"

#include <math.h>
#include <stdio.h>

/* w or logits: f32/f64, rank 1 or 2, a non-empty last dim */
static int rows_check(const char *op, gad_tensor *x) {
    if (gad__need_float(op, x)) return -1;
    char b[GAD_SHAPE_BUF];
    if (x->rank != 1 && x->rank != 2) {
        gad__err(GAD_ERR_SHAPE, op, "needs a 1-D or 2-D tensor, got %s",
                 gad__shape_str(b, x->shape, x->rank));
        return -1;
    }
    if (x->shape[x->rank - 1] == 0) {
        gad__err(GAD_ERR_SHAPE, op, "no categories in %s", gad__shape_str(b, x->shape, x->rank));
        return -1;
    }
    return 0;
}

static gad_tensor *multinomial(const char *op, gad_tensor *w, int64_t n, int replacement,
                               gad_rng *rng) {
    GAD_NEED(op, w);
    GAD_HALF_VIA_F32(op, &w, 1, multinomial(op, w, n, replacement, rng));
    if (rows_check(op, w)) return NULL;
    if (n < 1) return gad__err(GAD_ERR_SHAPE, op, "n %lld: needs at least one draw", (long long)n);
    if (!replacement && n > w->shape[w->rank - 1])
        return gad__err(GAD_ERR_SHAPE, op, "cannot draw %lld without replacement from %lld categories",
                        (long long)n, (long long)w->shape[w->rank - 1]);
    if (!rng) return gad__err(GAD_ERR_DOMAIN, op, "generator is NULL");
    if (GAD_LACKS_FAM(op, w, sampling, multinomial)) return NULL;
    int64_t shape[2] = {w->shape[0], n};
    if (w->rank == 1) shape[0] = n;
    gad_tensor *y = gad__tensor_new(op, w->dev, GAD_I64, shape, w->rank);
    gad_tensor *wc = y ? gad__contig(op, w) : NULL;
    uint64_t key = gad_rng_next(rng);
    if (!wc || (y->numel && GAD_BE(w)->sampling->multinomial(op, wc, n, replacement != 0, key, y))) {
        gad_release(wc);
        gad_release(y);
        return NULL;
    }
    gad_release(wc);
    return gad__own(y);
}

gad_tensor *gad_multinomial(gad_tensor *w, int64_t n, int replacement, gad_rng *rng) {
    return multinomial("multinomial", w, n, replacement, rng);
}

static const gad_sample_opts default_opts = {1, 0, 0};

static int opts_check(const char *op, const gad_sample_opts *o) {
    if (!(o->temperature >= 0) || isinf(o->temperature)) {
        gad__err(GAD_ERR_DOMAIN, op, "temperature %g: needs a finite value >= 0 (0: greedy)",
                 o->temperature);
        return -1;
    }
    if (o->top_k < 0) {
        gad__err(GAD_ERR_DOMAIN, op, "top_k %lld: needs >= 0 (0: no limit)", (long long)o->top_k);
        return -1;
    }
    if (!(o->top_p >= 0 && o->top_p <= 1)) {
        gad__err(GAD_ERR_DOMAIN, op, "top_p %g outside [0, 1] (0 or 1: no limit)", o->top_p);
        return -1;
    }
    return 0;
}

static gad_tensor *filter(const char *op, gad_tensor *x, const gad_sample_opts *o) {
    if (GAD_LACKS_FAM(op, x, sampling, logits_filter)) return NULL;
    gad_tensor *y = gad__tensor_like(op, x);
    gad_tensor *xc = y ? gad__contig(op, x) : NULL;
    double t = o->temperature > 0 ? o->temperature : 1;
    double p = o->top_p > 0 ? o->top_p : 1;
    if (!xc || (y->numel && GAD_BE(x)->sampling->logits_filter(op, xc, t, o->top_k, p, y))) {
        gad_release(xc);
        gad_release(y);
        return NULL;
    }
    gad_release(xc);
    return gad__own(y);
}

gad_tensor *gad_logits_filter(gad_tensor *logits, const gad_sample_opts *opts) {
    const char *op = "logits_filter";
    GAD_NEED(op, logits);
    GAD_HALF_VIA_F32(op, &logits, 1, gad_logits_filter(logits, opts));
    const gad_sample_opts *o = opts ? opts : &default_opts;
    if (rows_check(op, logits) || opts_check(op, o)) return NULL;
    return filter(op, logits, o);
}

gad_tensor *gad_sample_logits(gad_tensor *logits, const gad_sample_opts *opts, gad_rng *rng) {
    const char *op = "sample_logits";
    GAD_COMPOSITE(op);
    GAD_NEED(op, logits);
    GAD_HALF_VIA_F32(op, &logits, 1, gad_sample_logits(logits, opts, rng));
    const gad_sample_opts *o = opts ? opts : &default_opts;
    if (rows_check(op, logits) || opts_check(op, o)) return NULL;
    if (o->temperature == 0) return gad_argmax(logits, -1, 0);
    if (!rng) return gad__err(GAD_ERR_DOMAIN, op, "generator is NULL");
    gad_scope_begin();
    gad_tensor *y = NULL;
    gad_tensor *f = filter(op, logits, o);
    gad_tensor *p = f ? gad_softmax(f, -1) : NULL;
    gad_tensor *d = p ? multinomial(op, p, 1, 1, rng) : NULL;
    if (d) y = gad_keep(gad_reshape(d, logits->shape, logits->rank - 1));
    gad_scope_end();
    return y;
}

/* --------------------------------------------------------------- samples */

/* i[0]: the op; i[1]: the seed of the generator each call makes (so that a
 * sample gives the same draws every time it runs); i[2]: n and whether with
 * replacement (multinomial); d[0..2]: the options (sample_logits). */
static gad_tensor *apply_sampling(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    gad_rng *r = gad_rng_new((uint64_t)s->i[1]);
    gad_tensor *y;
    if (s->i[0] == GAD_OP_MULTINOMIAL) {
        y = gad_multinomial(in[0], s->i[2], (int)s->i[3], r);
    } else {
        gad_sample_opts o = {s->d[0], (int64_t)s->d[1], s->d[2]};
        y = gad_sample_logits(in[0], &o, r);
    }
    gad_rng_free(r);
    return y;
}

static int sampling_sample(gad_op_sample *s, gad_rng *r, int op, int v, const int64_t *shape,
                           int rank, double lo) {
    *s = (gad_op_sample){.n = 1, .apply = apply_sampling};
    s->i[0] = op;
    s->i[1] = 1000 + v;
    s->in[0] = gad_detach(gad__sample_leaf(r, shape, rank, lo, lo + 2, 0));
    snprintf(s->what, sizeof s->what, "%s case #%d", gad__ops[op].info.name, v);
    return s->in[0] != NULL;
}

/* weights in [0.1, 2.1): every one positive */
int gad__sample_multinomial(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[3][2] = {{6, 0}, {3, 5}, {2, 70}};
    static const int ranks[3] = {1, 2, 2}, n[3] = {4, 5, 3}, rep[3] = {1, 0, 0};
    if (v >= 3) return 0;
    if (!sampling_sample(s, r, GAD_OP_MULTINOMIAL, v, shapes[v], ranks[v], 0.1)) return 0;
    s->i[2] = n[v];
    s->i[3] = rep[v];
    return 1;
}

int gad__sample_sample_logits(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[3][2] = {{9, 0}, {3, 12}, {2, 70}};
    static const int ranks[3] = {1, 2, 2};
    static const double opts[3][3] = {{1, 0, 0}, {0.7, 5, 0.9}, {1.3, 0, 0.5}};
    if (v >= 3) return 0;
    if (!sampling_sample(s, r, GAD_OP_SAMPLE_LOGITS, v, shapes[v], ranks[v], -1)) return 0;
    for (int k = 0; k < 3; k++) s->d[k] = opts[v][k];
    return 1;
}

/* ---- composite (ops.def's COMPOSITE row): logits_filter, no gradient;
 * d[0..2]: temperature, top_k, top_p */
static gad_tensor *apply_logits_filter(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    gad_sample_opts o = {s->d[0], (int64_t)s->d[1], s->d[2]};
    return gad_logits_filter(in[0], &o);
}

int gad__sample_logits_filter(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[4][2] = {{9, 0}, {3, 12}, {2, 70}, {4, 6}};
    static const int ranks[4] = {1, 2, 2, 2};
    static const double opts[4][3] = {{1, 0, 0}, {0.7, 5, 0.9}, {1.3, 0, 0.5}, {0, 2, 0}};
    if (v >= 4) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_logits_filter};
    for (int k = 0; k < 3; k++) s->d[k] = opts[v][k];
    s->in[0] = gad__sample_values(r, shapes[v], ranks[v], -2, 2, 0, 0);
    snprintf(s->what, sizeof s->what, "T %g top_k %g top_p %g", opts[v][0], opts[v][1],
             opts[v][2]);
    return s->in[0] != NULL;
}
