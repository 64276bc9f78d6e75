/* gradcheck.c: gradients by the tape against central finite differences
 * (SPEC D14), first and second order. */
#include "ad/ad_int.h"

#include <math.h>

#define MAX_INPUTS 64

static bool low_precision(gad_tensor *const *in, int n, const gad_tensor *y) {
    for (int i = 0; i < n; i++)
        if (in[i] && in[i]->dtype == GAD_F32) return true;
    return y && y->dtype == GAD_F32;
}

/* L = sum(w * y) with fixed weights, or y itself with one element. */
static gad_tensor *project(gad_tensor *y, gad_tensor *w) {
    if (!y) return NULL;
    return w ? gad_sum_all(gad_mul(y, w)) : gad_sum_all(y);
}

/* t (a host tensor of this scope's) on device dev, owned by the scope. */
static gad_tensor *on_dev(gad_tensor *t, int dev) {
    return !t || t->dev == dev ? t : gad__own(gad__to_dev("gradcheck", t, dev));
}

static double scalar_of(gad_tensor *t) {
    return t ? gad_item(t) : NAN;
}

typedef struct check_ctx {
    gad_fn f;
    void *ctx;
    gad_tensor *w; /* projection weights, NULL for a one-element output */
} check_ctx;

/* L at inputs where input k has its element j shifted by delta (inputs are
 * held constant: the perturbed one is a fresh copy). */
static double eval_shifted(check_ctx *c, gad_tensor *const *in, int n, int k,
                           int64_t j, double delta) {
    gad_scope_begin();
    gad_tensor *args[MAX_INPUTS];
    for (int i = 0; i < n; i++) args[i] = in[i] ? gad_detach(in[i]) : NULL;
    double v = NAN;
    gad_tensor *x = args[k], *xk = NULL;
    if (x && x->dev == GAD_DEV_HOST) { /* in place, in double */
        void *p = (xk = gad_clone(x)) ? gad_data_mut(xk) : NULL;
        if (!p) xk = NULL;
        else if (xk->dtype == GAD_F32) ((float *)p)[j] = (float)(((float *)p)[j] + delta);
        else ((double *)p)[j] += delta;
    } else if (x) { /* on a device: x + delta at j, the shift made on the host */
        gad_tensor *d = gad__tensor_zeros("gradcheck", GAD_DEV_HOST, x->dtype, x->shape, x->rank);
        d = gad__own(d);
        void *p = d ? gad_data_mut(d) : NULL;
        if (p) {
            if (d->dtype == GAD_F32) ((float *)p)[j] = (float)delta;
            else ((double *)p)[j] = delta;
            xk = gad_add(x, gad__own(gad__to_dev("gradcheck", d, x->dev)));
        }
    }
    if (xk) {
        args[k] = xk;
        v = scalar_of(project(c->f(c->ctx, args, n), c->w));
    }
    gad_scope_end();
    return v;
}

/* A domain error unless some input is a leaf: with none there is nothing
 * to check, and passing would say the gradients were checked. */
static bool no_leaf(gad_tensor *const *in, int n, const char *op) {
    for (int i = 0; i < n; i++)
        if (in[i] && gad__released(in[i])) return (gad__err_released(op), true);
    for (int i = 0; i < n; i++)
        if (in[i] && gad_is_leaf(in[i])) return false;
    gad__err(GAD_ERR_DOMAIN, op, "none of the %d inputs is a leaf (requires grad): "
             "there is nothing to check", n);
    return true;
}

static gad_status check(check_ctx *c, gad_tensor *const *inputs, int n,
                        const gad_gradcheck_opts *opts, gad_gradcheck_result *res,
                        const char *op) {
    gad_gradcheck_result r = {.passed = 1, .input = -1, .index = -1};
    if (res) *res = r;
    if (!c->f || n < 0 || n > MAX_INPUTS || (n > 0 && !inputs)) {
        gad__err(GAD_ERR_DOMAIN, op, "bad function or inputs (n = %d)", n);
        return GAD_ERR_DOMAIN;
    }
    if (no_leaf(inputs, n, op)) return GAD_ERR_DOMAIN;
    gad_scope_begin();
    gad_status st = GAD_OK;
    gad_tensor *y = c->f(c->ctx, inputs, n);
    if (!y) {
        if (!gad_last_error()) gad__err(GAD_ERR_DOMAIN, op, "the function returned NULL");
        st = gad_last_error()->kind;
        goto out;
    }
    if (!gad__is_float(y->dtype)) {
        gad__err(GAD_ERR_DTYPE, op, "the function must return a float tensor");
        st = GAD_ERR_DTYPE;
        goto out;
    }
    bool low = low_precision(inputs, n, y);
    double eps = opts && opts->eps > 0 ? opts->eps : (low ? 1e-3 : 1e-6);
    double atol = opts && (opts->atol > 0 || opts->rtol > 0) ? opts->atol : (low ? 1e-3 : 1e-6);
    double rtol = opts && (opts->atol > 0 || opts->rtol > 0) ? opts->rtol : (low ? 1e-2 : 1e-4);
    if (y->numel != 1) {
        gad_rng *rng = gad_rng_new(opts && opts->seed ? opts->seed : 1);
        c->w = rng ? on_dev(gad_rng_uniform_tensor(rng, y->shape, y->rank,
                                                   (gad_dtype_t)y->dtype, 0.5, 1.5),
                            y->dev)
                   : NULL;
        gad_rng_free(rng);
        if (!c->w) {
            st = gad_last_error() ? gad_last_error()->kind : GAD_ERR_MEMORY;
            goto out;
        }
    }
    /* the analytic gradients, w.r.t. every leaf among the inputs */
    gad_tensor *leaves[MAX_INPUTS], *grads[MAX_INPUTS];
    int which[MAX_INPUTS], m = 0;
    for (int i = 0; i < n; i++)
        if (inputs[i] && gad_is_leaf(inputs[i])) {
            which[m] = i;
            leaves[m++] = inputs[i];
        }
    gad_tensor *L = project(y, c->w);
    if (!L || (st = gad_grad(L, leaves, m, grads)) != GAD_OK) {
        st = gad_last_error() ? gad_last_error()->kind : GAD_ERR_MEMORY;
        goto out;
    }
    double worst = -1;
    for (int q = 0; q < m; q++) {
        int k = which[q];
        int64_t cnt = inputs[k]->numel;
        double *ga = gad__alloc((size_t)(cnt ? cnt : 1) * sizeof *ga);
        if (!ga) {
            gad__err(GAD_ERR_MEMORY, op, "cannot allocate");
            st = GAD_ERR_MEMORY;
            goto out;
        }
        gad_read_f64(grads[q], ga, (size_t)cnt);
        for (int64_t j = 0; j < cnt; j++) {
            double lp = eval_shifted(c, inputs, n, k, j, eps);
            double lm = eval_shifted(c, inputs, n, k, j, -eps);
            double num = (lp - lm) / (2 * eps), an = ga[j];
            double diff = fabs(an - num);
            double ratio = diff / (atol + rtol * fabs(num));
            if (isnan(diff)) ratio = INFINITY;
            r.checked++;
            if (ratio > worst) {
                worst = ratio;
                double scale = fmax(fmax(fabs(an), fabs(num)), 1e-3);
                r.input = k;
                r.index = j;
                r.analytic = an;
                r.numeric = num;
                r.abs_err = diff;
                r.rel_err = diff / scale;
            }
            if (ratio > 1) r.passed = 0;
        }
        gad__free(ga, (size_t)(cnt ? cnt : 1) * sizeof *ga);
    }
out:
    gad_scope_end();
    c->w = NULL;
    if (res) *res = r;
    return st;
}

gad_status gad_gradcheck(gad_fn f, void *ctx, gad_tensor *const *inputs, int n,
                         const gad_gradcheck_opts *opts,
                         gad_gradcheck_result *res) {
    check_ctx c = {f, ctx, NULL};
    return check(&c, inputs, n, opts, res, "gradcheck");
}

/* ------------------------------------------------------- second order */

typedef struct gg_ctx {
    gad_fn f;
    void *ctx;
    bool diff[MAX_INPUTS]; /* inputs that were leaves in the outer call */
    gad_tensor *u[MAX_INPUTS];
    gad_tensor *w; /* first-order projection, NULL for one element */
} gg_ctx;

/* x -> sum_k <u_k, dL/dx_k> with L = sum(w * f(x)); differentiable in x
 * when the inputs are leaves (the first derivatives keep their graph). */
static gad_tensor *first_derivatives(void *vctx, gad_tensor *const *in, int n) {
    gg_ctx *g = vctx;
    gad_tensor *args[MAX_INPUTS], *leaves[MAX_INPUTS], *grads[MAX_INPUTS];
    int m = 0;
    for (int i = 0; i < n; i++) {
        args[i] = in[i];
        if (!g->diff[i] || !in[i]) continue;
        if (!gad_is_leaf(in[i])) args[i] = gad_requires_grad(gad_detach(in[i]));
        if (!args[i]) return NULL;
        leaves[m++] = args[i];
    }
    gad_tensor *L = project(g->f(g->ctx, args, n), g->w);
    if (!L || gad_grad_ex(L, NULL, leaves, m, grads, GAD_CREATE_GRAPH) != GAD_OK)
        return NULL;
    gad_tensor *acc = NULL;
    for (int q = 0, i = 0; i < n; i++) {
        if (!g->diff[i] || !in[i]) continue;
        gad_tensor *t = gad_sum_all(gad_mul(grads[q++], g->u[i]));
        acc = acc ? gad_add(acc, t) : t;
    }
    return acc ? acc : gad__full_on(L->dev, NULL, 0, GAD_F64, 0);
}

gad_status gad_gradgradcheck(gad_fn f, void *ctx, gad_tensor *const *inputs,
                             int n, const gad_gradcheck_opts *opts,
                             gad_gradcheck_result *res) {
    if (!f || n < 0 || n > MAX_INPUTS || (n > 0 && !inputs)) {
        gad__err(GAD_ERR_DOMAIN, "gradgradcheck", "bad function or inputs (n = %d)", n);
        return GAD_ERR_DOMAIN;
    }
    if (no_leaf(inputs, n, "gradgradcheck")) return GAD_ERR_DOMAIN;
    gg_ctx g = {.f = f, .ctx = ctx};
    gad_status st = GAD_OK;
    gad_scope_begin();
    gad_rng *rng = gad_rng_new(opts && opts->seed ? opts->seed + 7 : 8);
    gad_tensor *y = rng ? f(ctx, inputs, n) : NULL;
    if (!y) {
        if (!gad_last_error())
            gad__err(rng ? GAD_ERR_DOMAIN : GAD_ERR_MEMORY, "gradgradcheck",
                     rng ? "the function returned NULL" : "cannot allocate");
        st = gad_last_error()->kind;
        goto out;
    }
    if (!gad__is_float(y->dtype)) {
        gad__err(GAD_ERR_DTYPE, "gradgradcheck", "the function must return a float tensor");
        st = GAD_ERR_DTYPE;
        goto out;
    }
    if (y->numel != 1)
        g.w = on_dev(gad_rng_uniform_tensor(rng, y->shape, y->rank, (gad_dtype_t)y->dtype,
                                            0.5, 1.5),
                     y->dev);
    for (int i = 0; i < n; i++) {
        g.diff[i] = inputs[i] && gad_is_leaf(inputs[i]);
        if (g.diff[i])
            g.u[i] = on_dev(gad_rng_uniform_tensor(rng, inputs[i]->shape, inputs[i]->rank,
                                                   (gad_dtype_t)inputs[i]->dtype, -1, 1),
                            inputs[i]->dev);
    }
    check_ctx c = {first_derivatives, &g, NULL};
    st = check(&c, inputs, n, opts, res, "gradgradcheck");
out:
    gad_rng_free(rng);
    gad_scope_end();
    return st;
}
