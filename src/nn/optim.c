/* optim.c: SGD (with momentum, Nesterov and weight decay), AdamW, gradient
 * clipping by global norm and a warm-up + cosine learning-rate schedule
 * (SPEC §5 and D7). Written on the public API and the back-end table: the
 * update loops over the elements are the parameters' back end's (the CPU's
 * are src/cpu/optim.h), and this file keeps the validation, the state, its
 * names and load/save, and computes the kernels' coefficients. Both files are compiled with -ffp-contract=off
 * (CMakeLists.txt): no a * b + c here becomes a fused multiply-add, so the
 * coefficients, the updates and the schedule are the same bits on every
 * build (tests/test_optim.c checks the updates against scalar references).
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
 * - gad_optim_state hands out copy-on-write aliases of m, v and the
 *   momentum buffers (snapshots: later steps never change them); its names
 *   belong to the optimizer and live until gad_optim_free; it returns -1
 *   on an error. load_state aliases the given tensors the same way. Unknown,
 *   repeated or missing names and a negative step are format errors, a
 *   wrong shape a shape error, a wrong dtype a dtype error. SGD momentum
 *   buffers are optional (absent means "not made yet").
 * - gad_clip_grad_norm leaves the gradients alone when the norm is NaN or
 *   infinite (and returns it), scales a tensor listed twice once, and
 *   refuses gradients that are outputs of tracked ops (not-unique).
 * - gad_lr_warmup_cosine treats a negative step or warmup as 0; with
 *   total <= warmup the cosine phase is empty: min_lr from step warmup on.
 *
 * References: AdamW is Loshchilov & Hutter, "Decoupled Weight Decay
 * Regularization" (ICLR 2019), in g's form (eps outside the square root,
 * bias corrections computed in double and cast to the parameter's dtype,
 * decay applied to the old theta). Nesterov momentum is Sutskever, Martens,
 * Dahl & Hinton, "On the importance of initialization and momentum in deep
 * learning" (ICML 2013), in PyTorch's reformulation (d = g + mu * b). */
#include "gad.h"
#include "json.h"        /* gad__json_shown: names in messages */
#include "params.h"      /* gad__params_match: groups of a set by name */
#include "ops/ops_int.h" /* the back-end table and gad__make_writable */

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Zeroed memory for count items of size bytes, through gad's allocator. */
static void *zalloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) return NULL;
    size_t n = count * size;
    void *p = gad_mem_alloc(n > 0 ? n : 1);
    if (p) memset(p, 0, n);
    return p;
}

/* A name: "momentum." plus up to 10 digits plus NUL fits in 24 bytes. */
#define OPTIM_NAME_CAP 24

typedef enum optim_kind { OPTIM_SGD, OPTIM_ADAMW } optim_kind;

/* Per-parameter scratch for one step (kept to avoid a malloc per step). */
typedef struct optim_work {
    gad_tensor *g;      /* the contiguous gradient (scope-owned), or NULL */
    gad_tensor *s1;     /* the state tensor written (AdamW's m, SGD's buffer) */
    gad_tensor *fresh;  /* SGD: a momentum buffer made by this step */
} optim_work;

/* A parameter group: its own lr and weight decay (every other setting is
 * the optimizer's). */
typedef struct optim_group {
    double lr, weight_decay;
} optim_group;

/* A live optimizer's magic word; gad_optim_free overwrites it with
 * OPTIM_FREED, so that any later call on the pointer is an error. */
#define OPTIM_LIVE 0x6f7074696d4c4956ull  /* "optimLIV" */
#define OPTIM_FREED 0x6f7074696d444541ull /* "optimDEA" */

struct gad_optim {
    uint64_t magic; /* OPTIM_LIVE, then OPTIM_FREED */
    optim_kind kind;
    int n;
    int ngroups;
    optim_group *groups; /* ngroups of them */
    int *group_of;       /* params[i] is in groups[group_of[i]] */
    gad_tensor **params; /* retained */
    gad_tensor **s1;     /* AdamW: m; SGD: momentum buffer (NULL until made) */
    gad_tensor **s2;     /* AdamW: v; SGD: unused (NULL) */
    char (*name1)[OPTIM_NAME_CAP]; /* "m.<i>" or "momentum.<i>" */
    char (*name2)[OPTIM_NAME_CAP]; /* "v.<i>" (AdamW only) */
    optim_work *work;
    double momentum;               /* SGD */
    int nesterov;
    double beta1, beta2, eps;      /* AdamW */
    int64_t step;                  /* updates made so far */
};

/* ------------------------------------------------------------ helpers */


/* t's shape as "[2,3]" (gad_shape_format). */
static const char *shape_str(char *buf, size_t cap, const gad_tensor *t) {
    return gad_shape_format(buf, cap, gad_shape(t), gad_rank(t));
}

static int same_shape(gad_tensor *a, gad_tensor *b) {
    int r = gad_rank(a);
    if (r != gad_rank(b)) return 0;
    const int64_t *sa = gad_shape(a), *sb = gad_shape(b);
    for (int i = 0; i < r; i++)
        if (sa[i] != sb[i]) return 0;
    return 1;
}

static int is_float(gad_dtype_t d) { return d == GAD_F32 || d == GAD_F64; }

/* A memory error for op unless gad already recorded why a call failed. */
static gad_status fail_memory(const char *op) {
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

/* Set dup[i] = 1 for every entry of ts[0..n) that repeats an earlier one
 * (0 otherwise). Returns the number of repeats, or -1 on a memory error. */
static int find_duplicates(gad_tensor *const *ts, int n, char *dup) {
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
        if (!is_float(gad_dtype(p))) {
            gad_error_set(GAD_ERR_DTYPE, op,
                          "params[%d] is %s; optimizers update f32 or f64 "
                          "tensors",
                          i, gad_dtype_name(gad_dtype(p)));
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
    int r = dup ? find_duplicates(params, n, dup) : -1;
    if (r < 0) {
        gad_mem_free(dup);
        fail_memory(op);
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

/* 0 when o is a live optimizer; else -1 with a domain error under op
 * (NULL, or freed). */
static int optim_bad(const char *op, const gad_optim *o) {
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
    }
    gad_mem_free(o->params);
    gad_mem_free(o->s1);
    gad_mem_free(o->s2);
    gad_mem_free(o->name1);
    gad_mem_free(o->name2);
    gad_mem_free(o->work);
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
        fail_memory(op);
        return NULL;
    }
    o->magic = OPTIM_LIVE;
    o->kind = kind;
    size_t cnt = n > 0 ? (size_t)n : 1;
    o->params = zalloc(cnt, sizeof *o->params);
    o->s1 = zalloc(cnt, sizeof *o->s1);
    o->s2 = zalloc(cnt, sizeof *o->s2);
    o->name1 = zalloc(cnt, sizeof *o->name1);
    o->name2 = zalloc(cnt, sizeof *o->name2);
    o->work = zalloc(cnt, sizeof *o->work);
    o->group_of = zalloc(cnt, sizeof *o->group_of);
    o->groups = zalloc((size_t)ngroups, sizeof *o->groups);
    o->ngroups = ngroups;
    if (!o->params || !o->s1 || !o->s2 || !o->name1 || !o->name2 ||
        !o->work || !o->group_of || !o->groups) {
        optim_destroy(o);
        fail_memory(op);
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
            fail_memory(op);
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
    pl->params = zalloc(cnt, sizeof *pl->params);
    pl->group_of = zalloc(cnt, sizeof *pl->group_of);
    pl->groups = zalloc(1, sizeof *pl->groups);
    if (!pl->params || !pl->group_of || !pl->groups) return fail_memory(op), -1;
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
    pl->params = zalloc(cnt, sizeof *pl->params);
    pl->group_of = zalloc(cnt, sizeof *pl->group_of);
    pl->groups = zalloc((size_t)ng, sizeof *pl->groups);
    if (!pl->params || !pl->group_of || !pl->groups) return fail_memory(op), -1;
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
    pl->params = zalloc(cnt, sizeof *pl->params);
    pl->group_of = zalloc(cnt, sizeof *pl->group_of);
    pl->groups = zalloc((size_t)ng + 1, sizeof *pl->groups);
    int *used = zalloc((size_t)ng + 1, sizeof *used);
    if (!pl->params || !pl->group_of || !pl->groups || !used) {
        gad_mem_free(used);
        return fail_memory(op), -1;
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
    if (opt && optim_bad("optim_free", opt)) return; /* freed twice */
    optim_destroy(opt);
}

/* -------------------------------------------------------------- step */

/* Phase 1: fill work[i].g with the contiguous gradient of params[i] (NULL
 * to skip it). Returns GAD_OK or the error's kind. Runs inside the step's
 * scope and no-grad mode. */
static gad_status gather_grads(gad_optim *o, gad_tensor *const *grads) {
    const char *op = "optim_step";
    for (int i = 0; i < o->n; i++) {
        gad_tensor *p = o->params[i], *g;
        o->work[i] = (optim_work){0};
        if (!gad_is_leaf(p)) continue; /* frozen (off the tape): skipped */
        if (grads) {
            g = grads[i];
            if (!g) {
                gad_error_set(GAD_ERR_DOMAIN, op, "grads[%d] is NULL", i);
                return GAD_ERR_DOMAIN;
            }
            if (gad__released(g)) {
                gad__err_released(op);
                return GAD_ERR_DOMAIN;
            }
        } else {
            if (!gad_leaf_has_grad(p)) continue; /* an empty slot: skip it */
            g = gad_leaf_grad(p);
            if (!g) { /* the slot is set: this is a memory error */
                if (!gad_last_error())
                    gad_error_set(GAD_ERR_MEMORY, op, "cannot read the gradient of params[%d]", i);
                return gad_last_error()->kind;
            }
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
        if (!same_shape(g, p)) {
            char a[GAD_SHAPE_FORMAT_CAP], b[GAD_SHAPE_FORMAT_CAP];
            gad_error_set(GAD_ERR_SHAPE, op,
                          "grads[%d] has shape %s, params[%d] has shape %s",
                          i, shape_str(a, sizeof a, g), i, shape_str(b, sizeof b, p));
            return GAD_ERR_SHAPE;
        }
        if (gad_numel(p) == 0) continue; /* nothing to update */
        gad_tensor *c = gad_contiguous(g);
        /* A leaf given as a gradient may be one of the parameters, which
         * phase 3 overwrites: read from a private copy. */
        if (c && gad_is_leaf(c)) c = gad_clone(c);
        if (!c) return fail_memory(op);
        o->work[i].g = c;
    }
    return GAD_OK;
}

/* Phase 2: every parameter and state tensor that phase 3 writes made
 * writable (private and packed). */
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
            if (!w->fresh) return fail_memory(op);
        }
        if (gad__make_writable(op, o->params[i])) return fail_memory(op);
        if (o->kind == OPTIM_ADAMW) {
            w->s1 = o->s1[i];
            if (gad__make_writable(op, o->s1[i]) || gad__make_writable(op, o->s2[i]))
                return fail_memory(op);
        } else if (momentum) {
            w->s1 = w->fresh ? w->fresh : o->s1[i];
            if (gad__make_writable(op, w->s1)) return fail_memory(op);
        }
    }
    return GAD_OK;
}

/* Phase 3: the updates, by the parameters' back end. t is the step number
 * (from 1). */
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
    int momentum = o->kind == OPTIM_SGD && o->momentum != 0;
    for (int i = 0; i < o->n; i++) {
        optim_work *w = &o->work[i];
        if (!w->g) continue;
        gad_tensor *p = o->params[i];
        const optim_group *gr = &o->groups[o->group_of[i]];
        ac.lr = sc.lr = gr->lr;
        sc.weight_decay = gr->weight_decay;
        ac.decay = 1.0 - gr->lr * gr->weight_decay;
        if (o->kind == OPTIM_ADAMW) {
            GAD_BE(p)->adamw_step(p, w->s1, o->s2[i], w->g, &ac);
        } else {
            /* the momentum buffer; NULL for plain SGD */
            sc.first = w->fresh != NULL;
            GAD_BE(p)->sgd_step(p, momentum ? w->s1 : NULL, w->g, &sc);
        }
    }
}

gad_status gad_optim_step(gad_optim *opt, gad_tensor *const *grads) {
    if (optim_bad("optim_step", opt)) return GAD_ERR_DOMAIN;
    for (int i = 0; i < opt->n; i++) /* a device without the update: before any change */
        if (opt->kind == OPTIM_ADAMW ? GAD_LACKS("optim_step", opt->params[i], adamw_step)
                                     : GAD_LACKS("optim_step", opt->params[i], sgd_step))
            return GAD_ERR_UNSUPPORTED;
    gad_scope_begin();
    gad_no_grad_begin();
    gad_status st = gather_grads(opt, grads);
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
        for (int i = 0; i < opt->n; i++) {
            gad_release(opt->work[i].fresh);
            opt->work[i].fresh = NULL;
        }
    }
    for (int i = 0; i < opt->n; i++) opt->work[i] = (optim_work){0};
    gad_no_grad_end();
    gad_scope_end();
    return st;
}

/* ------------------------------------------------------- accessors */

void gad_optim_zero_grad(gad_optim *opt) {
    if (optim_bad("optim_zero_grad", opt)) return;
    gad_zero_grad(opt->params, opt->n);
}

double gad_optim_lr(const gad_optim *opt) {
    if (optim_bad("optim_lr", opt)) return NAN;
    return opt->groups[0].lr;
}

void gad_optim_set_lr(gad_optim *opt, double lr) {
    if (optim_bad("optim_set_lr", opt)) return;
    if (!nonneg(lr)) {
        gad_error_set(GAD_ERR_DOMAIN, "optim_set_lr",
                      "lr = %g (must be finite and >= 0)", lr);
        return;
    }
    for (int k = 0; k < opt->ngroups; k++) opt->groups[k].lr = lr;
}

int gad_optim_group_count(const gad_optim *opt) {
    if (optim_bad("optim_group_count", opt)) return -1;
    return opt->ngroups;
}

static int check_group(const char *op, const gad_optim *opt, int group) {
    if (optim_bad(op, opt)) return -1;
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
    if (optim_bad("optim_steps", opt)) return -1;
    return opt->step;
}

/* ------------------------------------------------------------ state */

/* The state entries in order: "step", then per parameter m.i, v.i
 * (AdamW) or momentum.i (SGD, where the buffer exists). */
static int state_count(const gad_optim *o) {
    int c = 1;
    for (int i = 0; i < o->n; i++) c += (o->s1[i] != NULL) + (o->s2[i] != NULL);
    return c;
}

int gad_optim_state(gad_optim *opt, const char **names, gad_tensor **tensors,
                    int cap) {
    const char *op = "optim_state";
    if (optim_bad(op, opt)) return -1;
    if (cap < 0) {
        gad_error_set(GAD_ERR_DOMAIN, op, "cap = %d is negative", cap);
        return -1;
    }
    if (cap > 0 && (!names || !tensors)) {
        gad_error_set(GAD_ERR_DOMAIN, op, "names or tensors is NULL (cap = %d)",
                      cap);
        return -1;
    }
    int count = state_count(opt);
    int fill = cap < count ? cap : count;
    if (fill == 0) return count;
    /* Make every tensor in a private scope, then hand them all out (or drop
     * them all on failure). The m, v and momentum tensors are aliases: the
     * next step copies on write, so a snapshot never changes. */
    gad_scope_begin();
    const char *nm[3];
    gad_tensor *out[3];
    int k = 0, ok = 1;
    for (int i = -1; i < opt->n && k < fill && ok; i++) {
        int c = 0;
        if (i < 0) {
            nm[c] = "step";
            out[c++] = gad_from_i64(&opt->step, NULL, 0);
        } else {
            if (opt->s1[i]) {
                nm[c] = opt->name1[i];
                out[c++] = gad_detach(opt->s1[i]);
            }
            if (opt->s2[i]) {
                nm[c] = opt->name2[i];
                out[c++] = gad_detach(opt->s2[i]);
            }
        }
        for (int j = 0; j < c && k < fill; j++, k++) {
            if (!out[j]) ok = 0;
            names[k] = nm[j];
            tensors[k] = out[j];
        }
    }
    if (ok)
        for (int j = 0; j < fill; j++) gad_keep(tensors[j]);
    gad_scope_end();
    if (!ok) {
        for (int j = 0; j < fill; j++) {
            names[j] = NULL;
            tensors[j] = NULL;
        }
        fail_memory(op);
        return -1;
    }
    return count;
}

/* Parse "<prefix><i>" with i a canonical decimal index below n; -1 if name
 * is not of that form. */
static int parse_index(const char *name, const char *prefix, int n) {
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) != 0) return -1;
    const char *s = name + pl;
    if (!*s || (s[0] == '0' && s[1])) return -1;
    long long v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (*s - '0');
        if (v >= n) return -1;
    }
    return (int)v;
}

gad_status gad_optim_load_state(gad_optim *opt, const char *const *names,
                                gad_tensor *const *tensors, int n) {
    const char *op = "optim_load_state";
    if (optim_bad(op, opt)) return GAD_ERR_DOMAIN;
    if (n < 0 || (n > 0 && (!names || !tensors))) {
        gad_error_set(GAD_ERR_DOMAIN, op,
                      n < 0 ? "n = %d is negative"
                            : "names or tensors is NULL (n = %d)",
                      n);
        return GAD_ERR_DOMAIN;
    }
    int np = opt->n;
    int adamw = opt->kind == OPTIM_ADAMW;
    int has_momentum = !adamw && opt->momentum != 0;
    /* where each entry goes: slot[k] = -1 for "step", 2 i for s1[i],
     * 2 i + 1 for s2[i] */
    int *slot = gad_mem_alloc((size_t)(n > 0 ? n : 1) * sizeof *slot);
    int *seen = zalloc((size_t)2 * (size_t)(np > 0 ? np : 1) + 1, sizeof *seen);
    gad_tensor **fresh = zalloc((size_t)2 * (size_t)(np > 0 ? np : 1),
                                sizeof *fresh);
    gad_status st = GAD_OK;
    int64_t step = 0;
    int have_step = 0;
    if (!slot || !seen || !fresh) {
        st = fail_memory(op);
        goto done;
    }
    for (int k = 0; k < n && st == GAD_OK; k++) {
        const char *name = names[k];
        gad_tensor *t = tensors[k];
        if (!name || !t) {
            gad_error_set(GAD_ERR_DOMAIN, op, "%s[%d] is NULL",
                          name ? "tensors" : "names", k);
            st = GAD_ERR_DOMAIN;
            break;
        }
        int idx, which;
        if (strcmp(name, "step") == 0) {
            idx = -1, which = 0;
        } else if (adamw && (idx = parse_index(name, "m.", np)) >= 0) {
            which = 0;
        } else if (adamw && (idx = parse_index(name, "v.", np)) >= 0) {
            which = 1;
        } else if (has_momentum &&
                   (idx = parse_index(name, "momentum.", np)) >= 0) {
            which = 0;
        } else {
            gad_error_set(GAD_ERR_FORMAT, op,
                          "unknown state name \"%s\" for this %s optimizer "
                          "of %d parameters",
                          gad__json_shown((char[80]){0}, 80, name),
                          adamw ? "AdamW" : "SGD", np);
            st = GAD_ERR_FORMAT;
            break;
        }
        int s = idx < 0 ? -1 : 2 * idx + which;
        if (seen[s + 1]) {
            gad_error_set(GAD_ERR_FORMAT, op, "state name \"%s\" is repeated",
                          gad__json_shown((char[80]){0}, 80, name));
            st = GAD_ERR_FORMAT;
            break;
        }
        seen[s + 1] = 1;
        slot[k] = s;
        if (idx < 0) {
            if (gad_dtype(t) != GAD_I64 || gad_numel(t) != 1 ||
                gad_rank(t) != 0) {
                char b[GAD_SHAPE_FORMAT_CAP];
                gad_error_set(gad_dtype(t) != GAD_I64 ? GAD_ERR_DTYPE
                                                      : GAD_ERR_SHAPE,
                              op, "\"step\" must be a rank-0 i64 tensor, got "
                                  "%s %s",
                              gad_dtype_name(gad_dtype(t)),
                              shape_str(b, sizeof b, t));
                st = gad_dtype(t) != GAD_I64 ? GAD_ERR_DTYPE : GAD_ERR_SHAPE;
                break;
            }
            if (gad_read_i64(t, &step, 1) != GAD_OK) {
                st = fail_memory(op);
                break;
            }
            if (step < 0) {
                gad_error_set(GAD_ERR_FORMAT, op, "\"step\" = %lld is negative",
                              (long long)step);
                st = GAD_ERR_FORMAT;
                break;
            }
            have_step = 1;
            continue;
        }
        gad_tensor *p = opt->params[idx];
        if (gad_dtype(t) != gad_dtype(p)) {
            gad_error_set(GAD_ERR_DTYPE, op, "\"%s\" is %s, params[%d] is %s",
                          name, gad_dtype_name(gad_dtype(t)), idx,
                          gad_dtype_name(gad_dtype(p)));
            st = GAD_ERR_DTYPE;
            break;
        }
        if (!same_shape(t, p)) {
            char a[GAD_SHAPE_FORMAT_CAP], b[GAD_SHAPE_FORMAT_CAP];
            gad_error_set(GAD_ERR_SHAPE, op,
                          "\"%s\" has shape %s, params[%d] has shape %s", name,
                          shape_str(a, sizeof a, t), idx,
                          shape_str(b, sizeof b, p));
            st = GAD_ERR_SHAPE;
            break;
        }
    }
    if (st != GAD_OK) goto done;
    if (!have_step) {
        gad_error_set(GAD_ERR_FORMAT, op, "\"step\" is missing");
        st = GAD_ERR_FORMAT;
        goto done;
    }
    if (adamw)
        for (int s = 0; s < 2 * np; s++)
            if (!seen[s + 1]) {
                gad_error_set(GAD_ERR_FORMAT, op, "\"%s\" is missing",
                              s % 2 ? opt->name2[s / 2] : opt->name1[s / 2]);
                st = GAD_ERR_FORMAT;
                goto done;
            }
    /* Everything is valid: make private aliases (contiguous, off the tape),
     * then swap them in. */
    gad_scope_begin();
    gad_no_grad_begin();
    for (int k = 0; k < n && st == GAD_OK; k++) {
        if (slot[k] < 0) continue;
        /* on the parameter's device (a loaded state comes from the CPU) */
        gad_tensor *p = opt->params[slot[k] / 2];
        gad_tensor *a = gad_retain(gad_detach(gad_contiguous(gad_to_device(tensors[k],
                                                                         gad_device_of(p)))));
        if (!a) st = fail_memory(op);
        fresh[slot[k]] = a;
    }
    gad_no_grad_end();
    gad_scope_end();
    if (st != GAD_OK) goto done;
    for (int i = 0; i < np; i++) {
        gad_release(opt->s1[i]);
        gad_release(opt->s2[i]);
        opt->s1[i] = fresh[2 * i];
        opt->s2[i] = fresh[2 * i + 1];
        fresh[2 * i] = fresh[2 * i + 1] = NULL;
    }
    opt->step = step;
done:
    if (fresh)
        for (int s = 0; s < 2 * np; s++) gad_release(fresh[s]);
    gad_mem_free(fresh);
    gad_mem_free(seen);
    gad_mem_free(slot);
    return st;
}

/* ----------------------------------------------------- clip and schedule */

double gad_clip_grad_norm(gad_tensor *const *grads, int n, double max_norm) {
    const char *op = "clip_grad_norm";
    if (n < 0 || (n > 0 && !grads)) {
        gad_error_set(GAD_ERR_DOMAIN, op,
                      n < 0 ? "n = %d is negative" : "grads is NULL (n = %d)",
                      n);
        return NAN;
    }
    if (gad__any_released(op, n, (const gad_tensor *const *)grads)) return NAN;
    if (!(max_norm >= 0)) {
        gad_error_set(GAD_ERR_DOMAIN, op, "max_norm = %g (must be >= 0)",
                      max_norm);
        return NAN;
    }
    for (int i = 0; i < n; i++) {
        gad_tensor *g = grads[i];
        if (!g) {
            gad_error_set(GAD_ERR_DOMAIN, op, "grads[%d] is NULL", i);
            return NAN;
        }
        if (GAD_LACKS(op, g, sumsq) || GAD_LACKS(op, g, scale)) return NAN;
        if (!is_float(gad_dtype(g))) {
            gad_error_set(GAD_ERR_DTYPE, op,
                          "grads[%d] is %s; gradients are f32 or f64", i,
                          gad_dtype_name(gad_dtype(g)));
            return NAN;
        }
        if (gad_is_tracked(g) && !gad_is_leaf(g)) {
            gad_error_set(GAD_ERR_NOT_UNIQUE, op,
                          "grads[%d] is the output of a tracked op (a "
                          "gradient made with GAD_CREATE_GRAPH): detach it "
                          "to clip it in place",
                          i);
            return NAN;
        }
    }
    double sumsq = 0;
    int ok = 1;
    gad_scope_begin();
    gad_no_grad_begin();
    for (int i = 0; i < n && ok; i++) {
        if (gad_numel(grads[i]) == 0) continue;
        gad_tensor *c = gad_contiguous(grads[i]);
        if (!c) {
            ok = 0;
            break;
        }
        sumsq += GAD_BE(c)->sumsq(c);
    }
    gad_no_grad_end();
    gad_scope_end();
    if (!ok) {
        fail_memory(op);
        return NAN;
    }
    double norm = sqrt(sumsq);
    /* A non-finite norm leaves the gradients alone: the caller sees it and
     * can skip the step. */
    if (!(norm > max_norm) || !isfinite(norm)) return norm;
    double coef = max_norm / (norm + 1e-6);
    /* Make every gradient writable first, so that a failed copy-on-write
     * leaves all gradients unscaled, and scale each distinct tensor once. */
    char *dup = gad_mem_alloc((size_t)(n > 0 ? n : 1));
    if (!dup || find_duplicates(grads, n, dup) < 0) {
        gad_mem_free(dup);
        fail_memory(op);
        return NAN;
    }
    for (int i = 0; i < n && ok; i++) {
        if (dup[i] || gad_numel(grads[i]) == 0) continue;
        if (gad__make_writable(op, grads[i])) ok = 0;
    }
    if (ok)
        for (int i = 0; i < n; i++)
            if (!dup[i] && gad_numel(grads[i]) > 0) GAD_BE(grads[i])->scale(grads[i], coef);
    gad_mem_free(dup);
    if (!ok) {
        fail_memory(op);
        return NAN;
    }
    return norm;
}

double gad_lr_warmup_cosine(int64_t step, int64_t warmup, int64_t total,
                            double base_lr, double min_lr) {
    const double pi = 3.14159265358979323846;
    if (step < 0) step = 0;
    if (warmup < 0) warmup = 0;
    if (step < warmup) return base_lr * (double)(step + 1) / (double)warmup;
    if (step >= total) return min_lr;
    double frac = (double)(step - warmup) / (double)(total - warmup);
    return min_lr + 0.5 * (base_lr - min_lr) * (1.0 + cos(pi * frac));
}
