/* amp.c: mixed-precision training (issue 29): an optimizer's f32 masters
 * with f16/bf16 working copies, and dynamic loss scaling. The scheme is
 * that of Micikevicius et al., "Mixed Precision Training" (ICLR 2018): the
 * model computes in half precision, the gradients arrive in half, the
 * update happens on f32 master weights and the copies are rounded from
 * them; for f16, whose range is narrow, the loss is multiplied by a scale
 * that is halved whenever a gradient overflows and doubled after a run of
 * good steps (PyTorch's GradScaler rules and defaults).
 *
 * Decisions the header leaves open:
 * - A copy is written in place (copy-on-write, as the parameters are) only
 *   after its master was updated; a skipped master leaves its copy alone.
 * - The scaler unscales into new f32 tensors (the gradients given are not
 *   changed), so that an overflow in half never hides in the unscaled
 *   values and the caller may clip them before the step. */
#include "optim_int.h"

#include "ops/ops_int.h" /* the back-end table and gad__make_writable */

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------- working copies */

/* The copy is written whole from its master, so where a graph shares its
 * storage a fresh one is allocated (and installed by the write) rather
 * than the old values copied. */
int gad__optim_copy_writable(gad_optim *o, int i) {
    if (!o->copies || !o->copies[i]) return 0;
    return gad__make_unique_whole("optim_step", o->copies[i], &o->work[i].copy_st);
}

void gad__optim_copy_write(gad_optim *o, int i) {
    if (!o->copies || !o->copies[i]) return;
    if (o->work[i].copy_st) {
        gad__storage_release(gad__swap_storage(o->copies[i], o->work[i].copy_st));
        o->work[i].copy_st = NULL;
    }
    GAD_BE(o->params[i])->convert(o->params[i], o->copies[i]);
}

static int bad_copy(const char *op, gad_optim *o, int i, gad_tensor *c) {
    gad_tensor *p = o->params[i];
    char a[GAD_SHAPE_FORMAT_CAP], b[GAD_SHAPE_FORMAT_CAP];
    if (gad__released(c)) return (gad__err_released(op), 1);
    if (c == p) {
        gad_error_set(GAD_ERR_DOMAIN, op, "copies[%d] is params[%d] itself", i, i);
        return 1;
    }
    gad_dtype_t d = gad_dtype(c);
    if (d != GAD_F16 && d != GAD_BF16 && d != GAD_F32 && d != GAD_F64) {
        gad_error_set(GAD_ERR_DTYPE, op, "copies[%d] is %s; a copy is f16, bf16, f32 or f64", i,
                      gad_dtype_name(d));
        return 1;
    }
    if (!gad_is_leaf(c)) {
        gad_error_set(GAD_ERR_DOMAIN, op, "copies[%d] is not a leaf (gad_requires_grad)", i);
        return 1;
    }
    if (!optim_same_shape(c, p)) {
        gad_error_set(GAD_ERR_SHAPE, op, "copies[%d] has shape %s, params[%d] has shape %s", i,
                      optim_shape_str(a, sizeof a, c), i, optim_shape_str(b, sizeof b, p));
        return 1;
    }
    if (c->dev != p->dev) return (gad__err_device(op, p->dev, c->dev), 1);
    if (GAD_LACKS(op, c, convert)) return 1;
    return 0;
}

gad_status gad_optim_set_copies(gad_optim *opt, gad_tensor *const *copies) {
    const char *op = "optim_set_copies";
    if (gad__optim_bad(op, opt)) return GAD_ERR_DOMAIN;
    if (!copies) { /* no copies any more */
        if (opt->copies)
            for (int i = 0; i < opt->n; i++) gad_release(opt->copies[i]);
        gad_mem_free(opt->copies);
        opt->copies = NULL;
        return GAD_OK;
    }
    for (int i = 0; i < opt->n; i++)
        if (copies[i] && bad_copy(op, opt, i, copies[i])) return gad_last_error()->kind;
    for (int i = 0; i < opt->n; i++)
        for (int j = 0; j < i; j++)
            if (copies[i] && copies[i] == copies[j]) {
                gad_error_set(GAD_ERR_DOMAIN, op, "copies[%d] and copies[%d] are one tensor", j, i);
                return GAD_ERR_DOMAIN;
            }
    gad_tensor **arr = gad__optim_zalloc((size_t)opt->n, sizeof *arr);
    if (!arr) return gad__optim_fail_memory(op);
    /* every copy writable first, so that a failure changes nothing */
    for (int i = 0; i < opt->n; i++)
        if (copies[i] && gad__make_writable(op, copies[i])) {
            gad_mem_free(arr);
            return gad__optim_fail_memory(op);
        }
    for (int i = 0; i < opt->n; i++) {
        arr[i] = copies[i] ? gad_retain(copies[i]) : NULL;
        if (arr[i] && gad_numel(arr[i]) > 0)
            GAD_BE(opt->params[i])->convert(opt->params[i], arr[i]);
    }
    if (opt->copies)
        for (int i = 0; i < opt->n; i++) gad_release(opt->copies[i]);
    gad_mem_free(opt->copies);
    opt->copies = arr;
    return GAD_OK;
}

/* ------------------------------------------------------------ loss scaling */

#define SCALER_LIVE 0x7363616c65724c56ull /* "scalerLV" */

struct gad_grad_scaler {
    uint64_t magic;
    double scale, growth, backoff;
    int64_t interval, good; /* good: finite steps since the last change */
};

static int scaler_bad(const char *op, const gad_grad_scaler *s) {
    if (s && s->magic == SCALER_LIVE) return 0;
    gad_error_set(GAD_ERR_DOMAIN, op, "the scaler is NULL");
    return -1;
}

gad_grad_scaler *gad_grad_scaler_new(const gad_grad_scaler_opts *opts) {
    const char *op = "grad_scaler_new";
    gad_grad_scaler_opts o = opts ? *opts : (gad_grad_scaler_opts){0};
    if (o.init_scale == 0) o.init_scale = 65536.0;
    if (o.growth_factor == 0) o.growth_factor = 2.0;
    if (o.backoff_factor == 0) o.backoff_factor = 0.5;
    if (o.growth_interval == 0) o.growth_interval = 2000;
    if (!(isfinite(o.init_scale) && o.init_scale > 0)) {
        gad_error_set(GAD_ERR_DOMAIN, op, "init_scale = %g (must be finite and > 0)", o.init_scale);
        return NULL;
    }
    if (!(isfinite(o.growth_factor) && o.growth_factor > 1)) {
        gad_error_set(GAD_ERR_DOMAIN, op, "growth_factor = %g (must be finite and > 1)",
                      o.growth_factor);
        return NULL;
    }
    if (!(o.backoff_factor > 0 && o.backoff_factor < 1)) {
        gad_error_set(GAD_ERR_DOMAIN, op, "backoff_factor = %g (must be in (0, 1))",
                      o.backoff_factor);
        return NULL;
    }
    if (o.growth_interval < 0) {
        gad_error_set(GAD_ERR_DOMAIN, op, "growth_interval = %lld (must be > 0)",
                      (long long)o.growth_interval);
        return NULL;
    }
    gad_grad_scaler *s = gad__optim_zalloc(1, sizeof *s);
    if (!s) return (gad__optim_fail_memory(op), NULL);
    *s = (gad_grad_scaler){SCALER_LIVE, o.init_scale, o.growth_factor, o.backoff_factor,
                           o.growth_interval, 0};
    return s;
}

void gad_grad_scaler_free(gad_grad_scaler *s) {
    if (!s) return;
    if (scaler_bad("grad_scaler_free", s)) return;
    s->magic = 0;
    gad_mem_free(s);
}

double gad_grad_scaler_scale_value(const gad_grad_scaler *s) {
    return scaler_bad("grad_scaler_scale_value", s) ? NAN : s->scale;
}

gad_tensor *gad_grad_scaler_scale(gad_grad_scaler *s, gad_tensor *loss) {
    const char *op = "grad_scaler_scale";
    if (scaler_bad(op, s)) return NULL;
    if (!loss) {
        gad_error_set(GAD_ERR_DOMAIN, op, "loss is NULL");
        return NULL;
    }
    /* in f32 at least: a half loss times 65536 would overflow f16 here
     * instead of in the gradients, where the scaler can see it */
    gad_dtype_t d = gad_dtype(loss);
    gad_tensor *l = d == GAD_F16 || d == GAD_BF16 ? gad_cast(loss, GAD_F32) : loss;
    return l ? gad_mul_scalar(l, s->scale) : NULL;
}

int gad_grad_scaler_unscale(gad_grad_scaler *s, gad_tensor *const *grads, gad_tensor **out,
                            int n) {
    const char *op = "grad_scaler_unscale";
    if (scaler_bad(op, s)) return -1;
    if (n < 0 || (n > 0 && (!grads || !out))) {
        gad_error_set(GAD_ERR_DOMAIN, op, "n = %d with grads or out NULL", n);
        return -1;
    }
    for (int i = 0; i < n; i++) out[i] = NULL;
    int finite = 1;
    double inv = 1.0 / s->scale;
    gad_no_grad_begin();
    for (int i = 0; i < n && finite >= 0; i++) {
        if (!grads[i]) continue; /* an empty slot, as gad_params_grad gives */
        gad_dtype_t d = gad_dtype(grads[i]);
        if (d != GAD_F16 && d != GAD_BF16 && d != GAD_F32 && d != GAD_F64) {
            gad_error_set(GAD_ERR_DTYPE, op, "grads[%d] is %s (float needed)", i, gad_dtype_name(d));
            finite = -1;
            break;
        }
        gad_tensor *w = d == GAD_F64 ? grads[i] : gad_cast(grads[i], GAD_F32);
        gad_tensor *u = w ? gad_mul_scalar(w, inv) : NULL;
        if (!u) {
            finite = -1;
            break;
        }
        out[i] = u; /* the caller's scope owns it */
        if (finite && !GAD_BE(u)->all_finite(u)) finite = 0;
    }
    gad_no_grad_end();
    if (finite < 0)
        for (int i = 0; i < n; i++) out[i] = NULL; /* the scope frees them */
    return finite;
}

gad_status gad_grad_scaler_update(gad_grad_scaler *s, int found_finite) {
    if (scaler_bad("grad_scaler_update", s)) return GAD_ERR_DOMAIN;
    if (!found_finite) {
        s->scale *= s->backoff;
        s->good = 0;
    } else if (++s->good >= s->interval) {
        double g = s->scale * s->growth;
        if (isfinite(g)) s->scale = g; /* PyTorch keeps a scale that would overflow */
        s->good = 0;
    }
    return GAD_OK;
}

gad_status gad_grad_scaler_step(gad_grad_scaler *s, gad_optim *opt, gad_tensor *const *grads,
                                int *stepped) {
    const char *op = "grad_scaler_step";
    if (stepped) *stepped = 0;
    if (scaler_bad(op, s) || gad__optim_bad(op, opt)) return GAD_ERR_DOMAIN;
    int n = opt->n;
    gad_tensor **in = gad__optim_zalloc((size_t)n * 2, sizeof *in), **out = in + n;
    if (!in) return gad__optim_fail_memory(op);
    for (int i = 0; i < n; i++) {
        gad_tensor *slot = opt->copies && opt->copies[i] ? opt->copies[i] : opt->params[i];
        in[i] = grads ? grads[i] : gad_is_leaf(slot) && gad_leaf_has_grad(slot) ? slot : NULL;
    }
    gad_status st = GAD_OK;
    gad_scope_begin();
    if (!grads) /* the slots' gradients, owned by this scope */
        for (int i = 0; i < n && st == GAD_OK; i++)
            if (in[i] && !(in[i] = gad_leaf_grad(in[i])))
                st = gad_last_error() ? gad_last_error()->kind : GAD_ERR_MEMORY;
    int finite = st == GAD_OK ? gad_grad_scaler_unscale(s, in, out, n) : -1;
    if (finite < 0 && st == GAD_OK) st = gad_last_error()->kind;
    if (finite == 1) {
        /* the master's dtype: an f64 master takes its gradient widened */
        for (int i = 0; i < n && st == GAD_OK; i++)
            if (out[i] && gad_dtype(out[i]) != gad_dtype(opt->params[i]) &&
                !(out[i] = gad_cast(out[i], gad_dtype(opt->params[i]))))
                st = gad_last_error()->kind;
        /* an empty slot (NULL) is skipped, as gad_optim_step skips it */
        if (st == GAD_OK) st = gad__optim_step_skipping(opt, out);
        if (st == GAD_OK && stepped) *stepped = 1;
    }
    gad_scope_end(); /* the unscaled gradients with it */
    gad_mem_free(in);
    if (st == GAD_OK && finite >= 0) gad_grad_scaler_update(s, finite);
    return st;
}

gad_status gad_grad_scaler_state(const gad_grad_scaler *s, double *scale, int64_t *good) {
    if (scaler_bad("grad_scaler_state", s)) return GAD_ERR_DOMAIN;
    if (scale) *scale = s->scale;
    if (good) *good = s->good;
    return GAD_OK;
}

gad_status gad_grad_scaler_load_state(gad_grad_scaler *s, double scale, int64_t good) {
    const char *op = "grad_scaler_load_state";
    if (scaler_bad(op, s)) return GAD_ERR_DOMAIN;
    if (!(isfinite(scale) && scale > 0) || good < 0) {
        gad_error_set(GAD_ERR_DOMAIN, op, "scale = %g, good steps = %lld (need a finite scale > 0, "
                      "a count >= 0)", scale, (long long)good);
        return GAD_ERR_DOMAIN;
    }
    s->scale = scale;
    s->good = good;
    return GAD_OK;
}
