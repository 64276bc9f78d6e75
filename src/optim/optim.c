/* optim.c: the optimizers, SGD (with momentum, Nesterov and weight decay)
 * and AdamW, with their parameter groups (SPEC §5 and D7): construction,
 * the step and the accessors; their state's save and load are state.c's.
 * Written on the public API and the back-end table: the update loops over
 * the elements are the parameters' back end's (the CPU's are
 * src/cpu/optim.h), and this file keeps the validation and the state and
 * computes the kernels' coefficients. It is compiled with
 * -ffp-contract=off (CMakeLists.txt), as the kernels are: no a * b + c here
 * becomes a fused multiply-add, so the coefficients and the updates are the
 * same bits on every build (tests/test_optim.c checks the updates against
 * scalar references).
 *
 * Parameters are leaves updated in place (gad__make_writable, the
 * copy-on-write of gad_data_mut): a parameter keeps its handle, leaf and
 * gradient slot, and copy-on-write keeps the old values for any graph (or
 * view, or state snapshot) that still holds them.
 *
 * Every step runs in three phases so that a failure changes nothing:
 *   1. validate every gradient (dtype, shape) and make it contiguous;
 *   2. make every tensor it writes writable (copy-on-write may allocate
 *      here) and allocate new momentum buffers;
 *   3. run the update kernels, which cannot fail.
 *
 * Decisions the header leaves open:
 * - The step counter (AdamW's t, "step" in the state) is one per optimizer,
 *   as in g: it counts successful gad_optim_step calls, including ones that
 *   skip every parameter because their slots are empty.
 * - The same tensor twice in params is a domain error (it would be updated
 *   twice per step); a leaf given as a gradient is read from a copy.
 *
 * References: AdamW is Loshchilov & Hutter, "Decoupled Weight Decay
 * Regularization" (ICLR 2019), in g's form (eps outside the square root,
 * bias corrections computed in double and cast to the parameter's dtype,
 * decay applied to the old theta). Nesterov momentum is Sutskever, Martens,
 * Dahl & Hinton, "On the importance of initialization and momentum in deep
 * learning" (ICML 2013), in PyTorch's reformulation (d = g + mu * b). */
#include "optim_int.h"

#include "io/json.h"        /* gad__json_shown: names in messages */
#include "nn/params.h"      /* gad__params_match: groups of a set by name */
#include "ops/ops_int.h"    /* the back-end table and gad__make_writable */

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *gad__optim_zalloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) return NULL;
    size_t n = count * size;
    void *p = gad_mem_alloc(n > 0 ? n : 1);
    if (p) memset(p, 0, n);
    return p;
}

gad_status gad__optim_fail_memory(const char *op) {
    gad_error_set(GAD_ERR_MEMORY, op, "out of memory");
    return GAD_ERR_MEMORY;
}

/* ------------------------------------------------------ construction */

/* Duplicate handles in ts[0..n), found by sorting (pointer, index) pairs. */
typedef struct ptr_index {
    uintptr_t p;
    int i;
} ptr_index;

static int ptr_index_cmp(const void *x, const void *y) {
    const ptr_index *a = x, *b = y;
    if (a->p != b->p) return a->p < b->p ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

int gad__find_duplicates(gad_tensor *const *ts, int n, char *dup) {
    memset(dup, 0, (size_t)n);
    if (n < 2) return 0;
    ptr_index *v = gad_mem_alloc((size_t)n * sizeof *v);
    if (!v) return -1;
    for (int i = 0; i < n; i++) v[i] = (ptr_index){(uintptr_t)ts[i], i};
    qsort(v, (size_t)n, sizeof *v, ptr_index_cmp);
    int found = 0;
    for (int k = 1; k < n; k++)
        if (v[k].p == v[k - 1].p) { /* equal pointers sort by index */
            dup[v[k].i] = 1;
            found++;
        }
    gad_mem_free(v);
    return found;
}

/* Validate params[0..n) for op: non-NULL, float, leaves (or, with frozen,
 * tensors off the tape: parameters a set has frozen), no duplicates. */
static int check_params(const char *op, gad_tensor *const *params, int n, int frozen) {
    if (n < 0) {
        gad_error_set(GAD_ERR_DOMAIN, op, "n = %d is negative", n);
        return -1;
    }
    if (n > 0 && !params) {
        gad_error_set(GAD_ERR_DOMAIN, op, "params is NULL (n = %d)", n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        gad_tensor *p = params[i];
        if (!p) {
            gad_error_set(GAD_ERR_DOMAIN, op, "params[%d] is NULL", i);
            return -1;
        }
        if (gad__released(p)) {
            gad_error_set(GAD_ERR_DOMAIN, op, "params[%d]: use of a released tensor", i);
            return -1;
        }
        if (!optim_is_float(gad_dtype(p))) {
            /* half parameters (issue 29) want f32 master copies: unsupported */
            int half = gad_dtype(p) == GAD_F16 || gad_dtype(p) == GAD_BF16;
            gad_error_set(half ? GAD_ERR_UNSUPPORTED : GAD_ERR_DTYPE, op,
                          "params[%d] is %s; optimizers update f32 or f64 "
                          "tensors%s",
                          i, gad_dtype_name(gad_dtype(p)),
                          half ? " (a half parameter is trained through an f32 master: gad_optim_set_copies)" : "");
            return -1;
        }
        if (!gad_is_leaf(p) && !(frozen && !gad_is_tracked(p))) {
            gad_error_set(GAD_ERR_DOMAIN, op,
                          "params[%d] is not a leaf (mark it with "
                          "gad_requires_grad; results of ops cannot be "
                          "updated in place)",
                          i);
            return -1;
        }
    }
    /* The same tensor twice would be updated twice per step. */
    char *dup = gad_mem_alloc((size_t)(n > 0 ? n : 1));
    int r = dup ? gad__find_duplicates(params, n, dup) : -1;
    if (r < 0) {
        gad_mem_free(dup);
        gad__optim_fail_memory(op);
        return -1;
    }
    for (int i = 0; i < n && r > 0; i++) {
        if (!dup[i]) continue;
        int j = 0;
        while (params[j] != params[i]) j++;
        gad_error_set(GAD_ERR_DOMAIN, op,
                      "params[%d] and params[%d] are the same tensor", j, i);
        break;
    }
    gad_mem_free(dup);
    return r > 0 ? -1 : 0;
}

/* Freed optimizers: the struct itself (from malloc, not the allocator
 * hook, so that it may outlive the allocator it was made under) waits
 * here, poisoned, until OPTIM_QUARANTINE more have been freed; only then
 * is it returned to malloc. A second gad_optim_free, or any call, on a
 * freed optimizer is then an error and never a use after free, unless
 * that many others were freed in between. */
#define OPTIM_QUARANTINE 256
static pthread_mutex_t quar_lock = PTHREAD_MUTEX_INITIALIZER;
static gad_optim *quar[OPTIM_QUARANTINE];
static int quar_next;

static void optim_quarantine(gad_optim *o) {
    o->magic = OPTIM_FREED;
    pthread_mutex_lock(&quar_lock);
    gad_optim *old = quar[quar_next];
    quar[quar_next] = o;
    quar_next = (quar_next + 1) % OPTIM_QUARANTINE;
    pthread_mutex_unlock(&quar_lock);
    free(old);
}

int gad__optim_bad(const char *op, const gad_optim *o) {
    if (o && o->magic == OPTIM_LIVE) return 0;
    gad_error_set(GAD_ERR_DOMAIN, op, o ? "use of a freed optimizer (gad_optim_free)"
                                        : "the optimizer is NULL");
    return -1;
}

static void optim_destroy(gad_optim *o) {
    if (!o) return;
    for (int i = 0; i < o->n; i++) {
        if (o->params) gad_release(o->params[i]);
        if (o->s1) gad_release(o->s1[i]);
        if (o->s2) gad_release(o->s2[i]);
        if (o->copies) gad_release(o->copies[i]);
    }
    gad_mem_free(o->copies);
    gad_mem_free(o->params);
    gad_mem_free(o->s1);
    gad_mem_free(o->s2);
    gad_mem_free(o->name1);
    gad_mem_free(o->name2);
    gad_mem_free(o->work);
    gad_mem_free(o->items);
    gad_mem_free(o->groups);
    gad_mem_free(o->group_of);
    optim_quarantine(o);
}

/* The common part of the constructors: retain params, allocate the arrays,
 * and, for AdamW, zero m and v. */
static gad_optim *optim_alloc(const char *op, optim_kind kind,
                              gad_tensor *const *params, int n, int ngroups) {
    gad_optim *o = calloc(1, sizeof *o);
    if (!o) {
        gad__optim_fail_memory(op);
        return NULL;
    }
    o->magic = OPTIM_LIVE;
    o->kind = kind;
    size_t cnt = n > 0 ? (size_t)n : 1;
    o->params = gad__optim_zalloc(cnt, sizeof *o->params);
    o->s1 = gad__optim_zalloc(cnt, sizeof *o->s1);
    o->s2 = gad__optim_zalloc(cnt, sizeof *o->s2);
    o->name1 = gad__optim_zalloc(cnt, sizeof *o->name1);
    o->name2 = gad__optim_zalloc(cnt, sizeof *o->name2);
    o->work = gad__optim_zalloc(cnt, sizeof *o->work);
    o->items = gad__optim_zalloc(cnt, sizeof *o->items);
    o->group_of = gad__optim_zalloc(cnt, sizeof *o->group_of);
    o->groups = gad__optim_zalloc((size_t)ngroups, sizeof *o->groups);
    o->ngroups = ngroups;
    if (!o->params || !o->s1 || !o->s2 || !o->name1 || !o->name2 ||
        !o->work || !o->items || !o->group_of || !o->groups) {
        optim_destroy(o);
        gad__optim_fail_memory(op);
        return NULL;
    }
    o->n = n;
    for (int i = 0; i < n; i++) {
        o->params[i] = gad_retain(params[i]);
        if (kind == OPTIM_ADAMW) {
            snprintf(o->name1[i], OPTIM_NAME_CAP, "m.%d", i);
            snprintf(o->name2[i], OPTIM_NAME_CAP, "v.%d", i);
        } else {
            snprintf(o->name1[i], OPTIM_NAME_CAP, "momentum.%d", i);
        }
    }
    if (kind == OPTIM_ADAMW) {
        gad_scope_begin();
        int ok = 1;
        for (int i = 0; i < n && ok; i++) {
            o->s1[i] = gad_retain(gad_zeros_like(params[i]));
            o->s2[i] = gad_retain(gad_zeros_like(params[i]));
            ok = o->s1[i] && o->s2[i];
        }
        gad_scope_end();
        if (!ok) {
            optim_destroy(o);
            gad__optim_fail_memory(op);
            return NULL;
        }
    }
    return o;
}

/* x is a usable non-negative, finite value. */
static int nonneg(double x) { return isfinite(x) && x >= 0; }

/* gad_sgd_opts with its defaults, validated for op; -1 on an error. */
static int sgd_resolve(const char *op, const gad_sgd_opts *opts, gad_sgd_opts *out) {
    gad_sgd_opts o = opts ? *opts : (gad_sgd_opts){0};
    if (o.lr == 0) o.lr = 0.01;
    if (!nonneg(o.lr))
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "lr = %g (must be finite and >= 0)", o.lr), -1;
    if (!nonneg(o.momentum))
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "momentum = %g (must be finite and >= 0)",
                             o.momentum), -1;
    if (o.nesterov && o.momentum == 0)
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "nesterov = %d needs momentum > 0 (momentum = %g)",
                             o.nesterov, o.momentum), -1;
    if (!nonneg(o.weight_decay))
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "weight_decay = %g (must be finite and >= 0)",
                             o.weight_decay), -1;
    *out = o;
    return 0;
}

static int adamw_resolve(const char *op, const gad_adamw_opts *opts, gad_adamw_opts *out) {
    gad_adamw_opts o = opts ? *opts : (gad_adamw_opts){0};
    if (o.lr == 0) o.lr = 1e-3;
    if (o.beta1 == 0) o.beta1 = 0.9;
    if (o.beta2 == 0) o.beta2 = 0.999;
    if (o.eps == 0) o.eps = 1e-8;
    if (o.no_weight_decay) o.weight_decay = 0;
    else if (o.weight_decay == 0) o.weight_decay = 0.01;
    if (!nonneg(o.lr))
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "lr = %g (must be finite and >= 0)", o.lr), -1;
    if (!(o.beta1 >= 0 && o.beta1 < 1))
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "beta1 = %g is outside [0, 1)", o.beta1), -1;
    if (!(o.beta2 >= 0 && o.beta2 < 1))
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "beta2 = %g is outside [0, 1)", o.beta2), -1;
    if (!(isfinite(o.eps) && o.eps > 0))
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "eps = %g (must be finite and > 0)", o.eps), -1;
    if (!nonneg(o.weight_decay))
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "weight_decay = %g (must be finite and >= 0)",
                             o.weight_decay), -1;
    *out = o;
    return 0;
}

/* The settings of a group: a 0 field takes the optimizer's (lr, wd). */
static int group_resolve(const char *op, int k, const gad_param_group *g, double lr,
                         double wd, optim_group *out) {
    out->lr = g->lr == 0 ? lr : g->lr;
    out->weight_decay = g->no_weight_decay ? 0 : g->weight_decay == 0 ? wd : g->weight_decay;
    if (!nonneg(out->lr)) {
        gad_error_set(GAD_ERR_DOMAIN, op, "groups[%d].lr = %g (must be finite and >= 0)", k,
                      out->lr);
        return -1;
    }
    if (!nonneg(out->weight_decay)) {
        gad_error_set(GAD_ERR_DOMAIN, op,
                      "groups[%d].weight_decay = %g (must be finite and >= 0)", k,
                      out->weight_decay);
        return -1;
    }
    return 0;
}

/* The parameters of an optimizer in groups, as its constructors collected
 * them: params[0..n) with group_of[i] in [0, ngroups). */
typedef struct optim_plan {
    gad_tensor **params;
    int *group_of;
    optim_group *groups;
    int n, ngroups, frozen; /* frozen: tensors off the tape are allowed */
} optim_plan;

static void plan_free(optim_plan *pl) {
    gad_mem_free(pl->params);
    gad_mem_free(pl->group_of);
    gad_mem_free(pl->groups);
}

/* One group of params[0..n) with lr and wd (the classic constructors). */
static int plan_single(const char *op, optim_plan *pl, gad_tensor *const *params, int n,
                       double lr, double wd) {
    *pl = (optim_plan){0};
    if (check_params(op, params, n, 0)) return -1;
    size_t cnt = n > 0 ? (size_t)n : 1;
    pl->params = gad__optim_zalloc(cnt, sizeof *pl->params);
    pl->group_of = gad__optim_zalloc(cnt, sizeof *pl->group_of);
    pl->groups = gad__optim_zalloc(1, sizeof *pl->groups);
    if (!pl->params || !pl->group_of || !pl->groups) return gad__optim_fail_memory(op), -1;
    if (n > 0) memcpy(pl->params, params, (size_t)n * sizeof *params);
    pl->n = n;
    pl->ngroups = 1;
    pl->groups[0] = (optim_group){lr, wd};
    return 0;
}

/* groups[0..ng) given by their tensors, in order. */
static int plan_groups(const char *op, optim_plan *pl, const gad_param_group *groups, int ng,
                       double lr, double wd) {
    *pl = (optim_plan){0};
    if (ng < 1 || !groups) {
        gad_error_set(GAD_ERR_DOMAIN, op, ng < 1 ? "ngroups = %d (at least one group)"
                                                 : "groups is NULL (ngroups = %d)", ng);
        return -1;
    }
    int64_t total = 0;
    for (int k = 0; k < ng; k++) {
        if (groups[k].n < 0 || (groups[k].n > 0 && !groups[k].params)) {
            gad_error_set(GAD_ERR_DOMAIN, op, "groups[%d] has %s (n = %d)", k,
                          groups[k].n < 0 ? "a negative count" : "no params array", groups[k].n);
            return -1;
        }
        if (groups[k].match) {
            gad_error_set(GAD_ERR_DOMAIN, op,
                          "groups[%d].match is set: name patterns select the parameters of a "
                          "set (gad_sgd_new_params, gad_adamw_new_params)", k);
            return -1;
        }
        total += groups[k].n;
    }
    if (total > INT32_MAX) {
        gad_error_set(GAD_ERR_DOMAIN, op, "%lld parameters in all (at most %d)",
                      (long long)total, INT32_MAX);
        return -1;
    }
    size_t cnt = total > 0 ? (size_t)total : 1;
    pl->params = gad__optim_zalloc(cnt, sizeof *pl->params);
    pl->group_of = gad__optim_zalloc(cnt, sizeof *pl->group_of);
    pl->groups = gad__optim_zalloc((size_t)ng, sizeof *pl->groups);
    if (!pl->params || !pl->group_of || !pl->groups) return gad__optim_fail_memory(op), -1;
    pl->ngroups = ng;
    for (int k = 0; k < ng; k++) {
        if (group_resolve(op, k, &groups[k], lr, wd, &pl->groups[k])) return -1;
        for (int j = 0; j < groups[k].n; j++) {
            pl->group_of[pl->n] = k;
            pl->params[pl->n++] = groups[k].params[j];
        }
    }
    return check_params(op, pl->params, pl->n, 0);
}

/* Every parameter of the set ps, in its order, each in the first of
 * groups[0..ng) whose pattern matches its name, else in a last group with
 * the optimizer's settings. */
static int plan_set(const char *op, optim_plan *pl, gad_params *ps, const gad_param_group *groups,
                    int ng, double lr, double wd) {
    *pl = (optim_plan){0};
    if (!ps) {
        gad_error_set(GAD_ERR_DOMAIN, op, "the parameter set is NULL");
        return -1;
    }
    if (ng < 0 || (ng > 0 && !groups)) {
        gad_error_set(GAD_ERR_DOMAIN, op, ng < 0 ? "ngroups = %d is negative"
                                                 : "groups is NULL (ngroups = %d)", ng);
        return -1;
    }
    for (int k = 0; k < ng; k++)
        if (!groups[k].match || groups[k].params || groups[k].n) {
            gad_error_set(GAD_ERR_DOMAIN, op,
                          "groups[%d] %s: the groups of a set are chosen by name patterns "
                          "(.match), not by tensors", k,
                          groups[k].match ? "also lists tensors" : "has no .match pattern");
            return -1;
        }
    int n = gad_params_count(ps);
    size_t cnt = n > 0 ? (size_t)n : 1;
    pl->params = gad__optim_zalloc(cnt, sizeof *pl->params);
    pl->group_of = gad__optim_zalloc(cnt, sizeof *pl->group_of);
    pl->groups = gad__optim_zalloc((size_t)ng + 1, sizeof *pl->groups);
    int *used = gad__optim_zalloc((size_t)ng + 1, sizeof *used);
    if (!pl->params || !pl->group_of || !pl->groups || !used) {
        gad_mem_free(used);
        return gad__optim_fail_memory(op), -1;
    }
    pl->ngroups = ng + 1;
    pl->groups[ng] = (optim_group){lr, wd};
    int rc = 0;
    for (int k = 0; k < ng && !rc; k++) rc = group_resolve(op, k, &groups[k], lr, wd, &pl->groups[k]);
    for (int i = 0; i < n && !rc; i++) {
        const char *name = gad_params_name(ps, i);
        int k = 0;
        while (k < ng && !gad__params_match(groups[k].match, name)) k++;
        pl->group_of[i] = k;
        pl->params[i] = gad_params_at(ps, i);
        used[k]++;
        gad_dtype_t dt = gad_dtype(pl->params[i]);
        if (dt == GAD_F16 || dt == GAD_BF16) { /* issue 29: sets may hold half tensors */
            gad_error_set(GAD_ERR_UNSUPPORTED, op,
                          "parameter \"%s\" is %s; optimizers update f32 or f64 tensors "
                          "(a half parameter is trained through an f32 master: gad_optim_set_copies)",
                          gad__json_shown((char[64]){0}, 64, name), gad_dtype_name(dt));
            rc = -1;
        }
    }
    pl->n = n;
    for (int k = 0; k < ng && !rc; k++)
        if (!used[k]) {
            gad_error_set(GAD_ERR_INDEX, op,
                          "groups[%d].match = \"%s\" matches no parameter that an earlier "
                          "group did not take", k,
                          gad__json_shown((char[64]){0}, 64, groups[k].match));
            rc = -1;
        }
    gad_mem_free(used);
    pl->frozen = 1;
    return rc ? rc : check_params(op, pl->params, pl->n, 1);
}

/* The optimizer a plan describes (the plan is freed either way). */
static gad_optim *optim_build(const char *op, optim_kind kind, optim_plan *pl) {
    gad_optim *o = optim_alloc(op, kind, pl->params, pl->n, pl->ngroups);
    if (o) {
        memcpy(o->groups, pl->groups, (size_t)pl->ngroups * sizeof *o->groups);
        if (pl->n > 0) memcpy(o->group_of, pl->group_of, (size_t)pl->n * sizeof *o->group_of);
    }
    plan_free(pl);
    return o;
}

static gad_optim *sgd_from(const char *op, optim_plan *pl, const gad_sgd_opts *o) {
    gad_optim *opt = optim_build(op, OPTIM_SGD, pl);
    if (!opt) return NULL;
    opt->momentum = o->momentum;
    opt->nesterov = o->nesterov != 0;
    return opt;
}

static gad_optim *adamw_from(const char *op, optim_plan *pl, const gad_adamw_opts *o) {
    gad_optim *opt = optim_build(op, OPTIM_ADAMW, pl);
    if (!opt) return NULL;
    opt->beta1 = o->beta1;
    opt->beta2 = o->beta2;
    opt->eps = o->eps;
    return opt;
}

gad_optim *gad_sgd_new(gad_tensor *const *params, int n,
                       const gad_sgd_opts *opts) {
    const char *op = "sgd_new";
    gad_sgd_opts o;
    optim_plan pl;
    if (sgd_resolve(op, opts, &o)) return NULL;
    if (plan_single(op, &pl, params, n, o.lr, o.weight_decay)) return plan_free(&pl), NULL;
    return sgd_from(op, &pl, &o);
}

gad_optim *gad_adamw_new(gad_tensor *const *params, int n,
                         const gad_adamw_opts *opts) {
    const char *op = "adamw_new";
    gad_adamw_opts o;
    optim_plan pl;
    if (adamw_resolve(op, opts, &o)) return NULL;
    if (plan_single(op, &pl, params, n, o.lr, o.weight_decay)) return plan_free(&pl), NULL;
    return adamw_from(op, &pl, &o);
}

gad_optim *gad_sgd_new_groups(const gad_param_group *groups, int ngroups,
                              const gad_sgd_opts *opts) {
    const char *op = "sgd_new_groups";
    gad_sgd_opts o;
    optim_plan pl;
    if (sgd_resolve(op, opts, &o)) return NULL;
    if (plan_groups(op, &pl, groups, ngroups, o.lr, o.weight_decay)) return plan_free(&pl), NULL;
    return sgd_from(op, &pl, &o);
}

gad_optim *gad_adamw_new_groups(const gad_param_group *groups, int ngroups,
                                const gad_adamw_opts *opts) {
    const char *op = "adamw_new_groups";
    gad_adamw_opts o;
    optim_plan pl;
    if (adamw_resolve(op, opts, &o)) return NULL;
    if (plan_groups(op, &pl, groups, ngroups, o.lr, o.weight_decay)) return plan_free(&pl), NULL;
    return adamw_from(op, &pl, &o);
}

gad_optim *gad_sgd_new_params(gad_params *ps, const gad_param_group *groups, int ngroups,
                              const gad_sgd_opts *opts) {
    const char *op = "sgd_new_params";
    gad_sgd_opts o;
    optim_plan pl;
    if (sgd_resolve(op, opts, &o)) return NULL;
    if (plan_set(op, &pl, ps, groups, ngroups, o.lr, o.weight_decay)) return plan_free(&pl), NULL;
    return sgd_from(op, &pl, &o);
}

gad_optim *gad_adamw_new_params(gad_params *ps, const gad_param_group *groups, int ngroups,
                                const gad_adamw_opts *opts) {
    const char *op = "adamw_new_params";
    gad_adamw_opts o;
    optim_plan pl;
    if (adamw_resolve(op, opts, &o)) return NULL;
    if (plan_set(op, &pl, ps, groups, ngroups, o.lr, o.weight_decay)) return plan_free(&pl), NULL;
    return adamw_from(op, &pl, &o);
}

void gad_optim_free(gad_optim *opt) {
    if (opt && gad__optim_bad("optim_free", opt)) return; /* freed twice */
    optim_destroy(opt);
}

/* -------------------------------------------------------------- step */

/* Phase 1: fill work[i].g with the contiguous gradient of params[i] (NULL
 * to skip it). Returns GAD_OK or the error's kind. Runs inside the step's
 * scope and no-grad mode. */
static gad_status gather_grads(gad_optim *o, gad_tensor *const *grads, int null_skips) {
    const char *op = "optim_step";
    for (int i = 0; i < o->n; i++) {
        gad_tensor *p = o->params[i], *g;
        o->work[i] = (optim_work){0};
        if (!gad_is_leaf(p)) continue; /* frozen (off the tape): skipped */
        if (grads) {
            g = grads[i];
            if (!g && null_skips) continue;
            if (!g) {
                gad_error_set(GAD_ERR_DOMAIN, op, "grads[%d] is NULL", i);
                return GAD_ERR_DOMAIN;
            }
            if (gad__released(g)) {
                gad__err_released(op);
                return GAD_ERR_DOMAIN;
            }
        } else {
            /* with a working copy, the model's gradient is in its slot */
            gad_tensor *slot = o->copies && o->copies[i] ? o->copies[i] : p;
            if (!gad_leaf_has_grad(slot)) continue; /* an empty slot: skip it */
            g = gad_leaf_grad(slot);
            if (!g) { /* the slot is set: this is a memory error */
                if (!gad_last_error())
                    gad_error_set(GAD_ERR_MEMORY, op, "cannot read the gradient of params[%d]", i);
                return gad_last_error()->kind;
            }
        }
        /* a copy's gradient (f16, bf16) is widened to the master's dtype */
        if (o->copies && o->copies[i] && gad_dtype(g) == gad_dtype(o->copies[i]) &&
            gad_dtype(g) != gad_dtype(p) && g->dev == p->dev && optim_same_shape(g, p)) {
            g = gad_cast(g, gad_dtype(p));
            if (!g) return gad__optim_fail_memory(op);
        }
        if (gad_dtype(g) != gad_dtype(p)) {
            gad_error_set(GAD_ERR_DTYPE, op,
                          "grads[%d] is %s, params[%d] is %s", i,
                          gad_dtype_name(gad_dtype(g)), i,
                          gad_dtype_name(gad_dtype(p)));
            return GAD_ERR_DTYPE;
        }
        if (g->dev != p->dev) {
            gad__err_device(op, p->dev, g->dev);
            return GAD_ERR_DEVICE;
        }
        if (!optim_same_shape(g, p)) {
            char a[GAD_SHAPE_FORMAT_CAP], b[GAD_SHAPE_FORMAT_CAP];
            gad_error_set(GAD_ERR_SHAPE, op,
                          "grads[%d] has shape %s, params[%d] has shape %s",
                          i, optim_shape_str(a, sizeof a, g), i, optim_shape_str(b, sizeof b, p));
            return GAD_ERR_SHAPE;
        }
        if (gad_numel(p) == 0) continue; /* nothing to update */
        gad_tensor *c = gad_contiguous(g);
        /* A leaf given as a gradient may be one of the parameters, which
         * phase 3 overwrites: read from a private copy. */
        if (c && gad_is_leaf(c)) c = gad_clone(c);
        if (!c) return gad__optim_fail_memory(op);
        o->work[i].g = c;
    }
    return GAD_OK;
}

/* Phase 2: every parameter and state tensor that phase 3 writes made
 * writable (private and packed), or, for a parameter whose storage a graph
 * shares, a fresh storage allocated for its new values (installed by phase
 * 3, so that the old values are read once and never copied). */
static gad_status take_writable(gad_optim *o) {
    const char *op = "optim_step";
    int momentum = o->kind == OPTIM_SGD && o->momentum != 0;
    for (int i = 0; i < o->n; i++) {
        optim_work *w = &o->work[i];
        if (!w->g) continue;
        if (momentum && !o->s1[i]) {
            /* no scope owns it: released on failure or installed */
            gad_tensor *z = gad_zeros_like(o->params[i]);
            w->fresh = gad_retain(z);
            if (!w->fresh) return gad__optim_fail_memory(op);
        }
        if (gad__make_unique_whole(op, o->params[i], &w->st) || gad__optim_copy_writable(o, i))
            return gad__optim_fail_memory(op);
        if (o->kind == OPTIM_ADAMW) {
            w->s1 = o->s1[i];
            if (gad__make_writable(op, o->s1[i]) || gad__make_writable(op, o->s2[i]))
                return gad__optim_fail_memory(op);
        } else if (momentum) {
            w->s1 = w->fresh ? w->fresh : o->s1[i];
            if (gad__make_writable(op, w->s1)) return gad__optim_fail_memory(op);
        }
    }
    return GAD_OK;
}

/* Phase 3: the updates, by the parameters' back ends, one call per back
 * end for all its parameters (a multi-tensor update). t is the step number
 * (from 1). Cannot fail. */
static void apply_updates(gad_optim *o, int64_t t) {
    /* AdamW's coefficients, computed in double (the kernels round them to
     * the parameter's dtype); lr and the decay are the group's, the same
     * bits as an optimizer of that group's settings alone */
    gad_adamw_coef ac = {
        .beta1 = o->beta1, .one_minus_beta1 = 1.0 - o->beta1,
        .beta2 = o->beta2, .one_minus_beta2 = 1.0 - o->beta2,
        .bc1 = 1.0 - pow(o->beta1, (double)t),
        .bc2 = 1.0 - pow(o->beta2, (double)t),
        .eps = o->eps};
    gad_sgd_coef sc = {.momentum = o->momentum, .nesterov = o->nesterov};
    int momentum = o->kind == OPTIM_SGD && o->momentum != 0, adamw = o->kind == OPTIM_ADAMW;
    int m = 0;
    for (int i = 0; i < o->n; i++) {
        optim_work *w = &o->work[i];
        if (!w->g) continue;
        gad_tensor *p = o->params[i];
        const optim_group *gr = &o->groups[o->group_of[i]];
        gad_optim_item *it = &o->items[m++];
        *it = (gad_optim_item){.p = p, .old = gad__ptr(p), .g = w->g};
        /* a shared parameter: the new values go to the fresh storage, and
         * w->st keeps the old ones (the graph's) until they are read */
        if (w->st) w->st = gad__swap_storage(p, w->st);
        if (adamw) {
            ac.lr = gr->lr;
            ac.decay = 1.0 - gr->lr * gr->weight_decay;
            it->c.adamw = ac;
            it->s1 = w->s1;
            it->s2 = o->s2[i];
        } else {
            sc.lr = gr->lr;
            sc.weight_decay = gr->weight_decay;
            sc.first = w->fresh != NULL;
            it->c.sgd = sc;
            it->s1 = momentum ? w->s1 : NULL; /* NULL: plain SGD */
        }
    }
    /* one call per back end (almost always one): take the items of the
     * first one left, in place of the rest */
    for (int done = 0; done < m;) {
        const gad_backend *be = GAD_BE(o->items[done].p);
        int k = done;
        for (int j = done; j < m; j++)
            if (GAD_BE(o->items[j].p) == be) {
                gad_optim_item x = o->items[k];
                o->items[k++] = o->items[j];
                o->items[j] = x;
            }
        if (adamw) be->adamw_step(o->items + done, k - done);
        else be->sgd_step(o->items + done, k - done);
        done = k;
    }
    for (int i = 0; i < o->n; i++) {
        optim_work *w = &o->work[i];
        if (!w->g) continue;
        if (w->st) gad__storage_release(w->st);
        w->st = NULL;
        gad__optim_copy_write(o, i);
    }
}

static gad_status optim_step(gad_optim *opt, gad_tensor *const *grads, int null_skips) {
    for (int i = 0; i < opt->n; i++) /* a device without the update: before any change */
        if (opt->kind == OPTIM_ADAMW ? GAD_LACKS("optim_step", opt->params[i], adamw_step)
                                     : GAD_LACKS("optim_step", opt->params[i], sgd_step))
            return GAD_ERR_UNSUPPORTED;
    gad_scope_begin();
    gad_no_grad_begin();
    gad_status st = gather_grads(opt, grads, null_skips);
    if (st == GAD_OK) st = take_writable(opt);
    if (st == GAD_OK) {
        apply_updates(opt, opt->step + 1);
        opt->step++;
        for (int i = 0; i < opt->n; i++)
            if (opt->work[i].fresh) { /* install the new momentum buffers */
                opt->s1[i] = opt->work[i].fresh;
                opt->work[i].fresh = NULL;
            }
    } else {
        for (int i = 0; i < opt->n; i++) { /* what phase 2 made, unused */
            optim_work *w = &opt->work[i];
            gad_release(w->fresh);
            if (w->st) gad__storage_release(w->st);
            if (w->copy_st) gad__storage_release(w->copy_st);
        }
    }
    for (int i = 0; i < opt->n; i++) opt->work[i] = (optim_work){0};
    gad_no_grad_end();
    gad_scope_end();
    return st;
}

gad_status gad_optim_step(gad_optim *opt, gad_tensor *const *grads) {
    if (gad__optim_bad("optim_step", opt)) return GAD_ERR_DOMAIN;
    return optim_step(opt, grads, 0);
}

gad_status gad__optim_step_skipping(gad_optim *opt, gad_tensor *const *grads) {
    return optim_step(opt, grads, 1);
}

/* ------------------------------------------------------- accessors */

void gad_optim_zero_grad(gad_optim *opt) {
    if (gad__optim_bad("optim_zero_grad", opt)) return;
    gad_zero_grad(opt->params, opt->n);
    if (opt->copies)
        for (int i = 0; i < opt->n; i++)
            if (opt->copies[i]) gad_zero_grad(&opt->copies[i], 1);
}

double gad_optim_lr(const gad_optim *opt) {
    if (gad__optim_bad("optim_lr", opt)) return NAN;
    return opt->groups[0].lr;
}

void gad_optim_set_lr(gad_optim *opt, double lr) {
    if (gad__optim_bad("optim_set_lr", opt)) return;
    if (!nonneg(lr)) {
        gad_error_set(GAD_ERR_DOMAIN, "optim_set_lr",
                      "lr = %g (must be finite and >= 0)", lr);
        return;
    }
    for (int k = 0; k < opt->ngroups; k++) opt->groups[k].lr = lr;
}

int gad_optim_group_count(const gad_optim *opt) {
    if (gad__optim_bad("optim_group_count", opt)) return -1;
    return opt->ngroups;
}

static int check_group(const char *op, const gad_optim *opt, int group) {
    if (gad__optim_bad(op, opt)) return -1;
    if (group < 0 || group >= opt->ngroups) {
        gad_error_set(GAD_ERR_INDEX, op, "group %d is outside [0, %d)", group, opt->ngroups);
        return -1;
    }
    return 0;
}

double gad_optim_group_lr(const gad_optim *opt, int group) {
    return check_group("optim_group_lr", opt, group) ? NAN : opt->groups[group].lr;
}

double gad_optim_group_weight_decay(const gad_optim *opt, int group) {
    return check_group("optim_group_weight_decay", opt, group) ? NAN
                                                                : opt->groups[group].weight_decay;
}

gad_status gad_optim_set_group_lr(gad_optim *opt, int group, double lr) {
    const char *op = "optim_set_group_lr";
    if (check_group(op, opt, group)) return gad_last_error()->kind;
    if (!nonneg(lr)) {
        gad_error_set(GAD_ERR_DOMAIN, op, "lr = %g (must be finite and >= 0)", lr);
        return GAD_ERR_DOMAIN;
    }
    opt->groups[group].lr = lr;
    return GAD_OK;
}

int64_t gad_optim_steps(const gad_optim *opt) {
    if (gad__optim_bad("optim_steps", opt)) return -1;
    return opt->step;
}
