/* params.c: named parameter sets (gad_params): a model's tensors under
 * stable names, in insertion order, as PyTorch's named_parameters and
 * state_dict give them; freezing by name pattern, saving and loading as
 * safetensors (through gad_save / gad_load), and the gradients of a set.
 * The optimizers take a set in src/optim/optim.c (gad_sgd_new_params).
 *
 * Decisions:
 * - A set holds one reference to each tensor; gad_params_add makes the
 *   tensor a leaf (trainable) and returns it without a new reference, as
 *   gad_requires_grad does, so that a model built inside a scope is owned
 *   by its set once the scope ends.
 * - Frozen means off the tape: gad_params_freeze drops the leaf (the tensor
 *   keeps its identity and values), so graphs built afterwards treat it as
 *   a constant: no VJP runs for it, gad_backward fills no slot, optimizers
 *   skip it. Unfreezing makes it a leaf again (an empty slot). Whether a
 *   parameter is frozen is read off the tensor (gad_is_leaf), never kept
 *   twice.
 * - Names are checked when added, so that gad_params_save never fails on
 *   one: unique, valid UTF-8, not "__metadata__" (safetensors' own key).
 * - A load checks everything against the set before it writes anything,
 *   and then writes the values in place (copy-on-write: graphs that saw
 *   the old values keep them; a leaf keeps its slot).
 * - Lookups are linear in the number of parameters (models have hundreds,
 *   not millions; a program keeps the pointers it uses every step).
 * - Buffers (PyTorch's register_buffer: batch norm's running statistics)
 *   are a second list beside the parameters, with the same name space:
 *   saved after the parameters and loaded with the same checks, but never
 *   made leaves, never counted by gad_params_count nor handed to an
 *   optimizer, and of any dtype.
 * - Parameters are f32, f64, f16 or bf16 (issue 29): a set holds a half
 *   model; the optimizers refuse half parameters (they need f32 master
 *   copies). */
#include "gad.h"
#include "io/json.h"        /* gad__json_shown */
#include "io/safetensors.h" /* gad__tensor_name_problem */
#include "params.h" /* gad__params_match */

#include "ad/ad_int.h"   /* un-marking a leaf (freeze) */
#include "ops/ops_int.h" /* gad__make_writable: loads into any device's parameters */

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gad_params {
    int n, cap;
    char **names;         /* copies, from gad_mem_alloc */
    gad_tensor **tensors; /* one reference each */
    /* buffers, as the parameters: names[n + i] is buffer i's when saving */
    int nb, bcap;
    char **bnames;
    gad_tensor **buffers;
    /* tied names (gad_params_add_tied): another name of a parameter,
     * saved as a copy of its own and loaded into the same tensor */
    int na, acap;
    char **anames;
    gad_tensor **aliases;
};

#define SHOWN_CAP 64 /* a name quoted in a message */

static const char *shown(char *buf, const char *s) {
    return gad__json_shown(buf, SHOWN_CAP, s);
}

gad_params *gad_params_new(void) {
    gad_params *ps = gad_mem_alloc(sizeof *ps);
    if (!ps) return gad_error_set(GAD_ERR_MEMORY, "params_new", "out of memory");
    memset(ps, 0, sizeof *ps);
    return ps;
}

void gad_params_free(gad_params *ps) {
    if (!ps) return;
    for (int i = 0; i < ps->n; i++) {
        gad_mem_free(ps->names[i]);
        gad_release(ps->tensors[i]);
    }
    gad_mem_free(ps->names);
    gad_mem_free(ps->tensors);
    for (int i = 0; i < ps->nb; i++) {
        gad_mem_free(ps->bnames[i]);
        gad_release(ps->buffers[i]);
    }
    gad_mem_free(ps->bnames);
    gad_mem_free(ps->buffers);
    for (int i = 0; i < ps->na; i++) {
        gad_mem_free(ps->anames[i]);
        gad_release(ps->aliases[i]);
    }
    gad_mem_free(ps->anames);
    gad_mem_free(ps->aliases);
    gad_mem_free(ps);
}

static int find(const gad_params *ps, const char *name) {
    for (int i = 0; i < ps->n; i++)
        if (strcmp(ps->names[i], name) == 0) return i;
    return -1;
}

static int find_buffer(const gad_params *ps, const char *name) {
    for (int i = 0; i < ps->nb; i++)
        if (strcmp(ps->bnames[i], name) == 0) return i;
    return -1;
}

static int find_alias(const gad_params *ps, const char *name) {
    for (int i = 0; i < ps->na; i++)
        if (strcmp(ps->anames[i], name) == 0) return i;
    return -1;
}

/* Room for one more entry in a names/tensors pair of arrays. */
static int grow(const char *op, char ***names, gad_tensor ***tensors, int n, int *cap) {
    if (n < *cap) return 0;
    if (*cap > INT32_MAX / 2) {
        gad_error_set(GAD_ERR_DOMAIN, op, "the set is full (%d entries)", n);
        return -1;
    }
    int nc = *cap ? 2 * *cap : 16;
    char **nn = gad_mem_realloc(*names, (size_t)nc * sizeof *nn);
    if (!nn) return (gad_error_set(GAD_ERR_MEMORY, op, "out of memory"), -1);
    *names = nn;
    gad_tensor **nt = gad_mem_realloc(*tensors, (size_t)nc * sizeof *nt);
    if (!nt) return (gad_error_set(GAD_ERR_MEMORY, op, "out of memory"), -1);
    *tensors = nt;
    *cap = nc;
    return 0;
}

gad_tensor *gad_params_add(gad_params *ps, const char *name, gad_tensor *t) {
    const char *op = "params_add";
    char b[SHOWN_CAP];
    if (!ps) return gad_error_set(GAD_ERR_DOMAIN, op, "the set is NULL");
    if (!name) return gad_error_set(GAD_ERR_DOMAIN, op, "the name is NULL");
    if (!t) return gad_error_set(GAD_ERR_DOMAIN, op, "the tensor for \"%s\" is NULL", shown(b, name));
    if (GAD_LIVE(op, t)) return NULL;
    const char *why = gad__tensor_name_problem(name); /* the names gad_save refuses */
    if (why) return gad_error_set(GAD_ERR_DOMAIN, op, "the name \"%s\" %s", shown(b, name), why);
    gad_dtype_t dt = gad_dtype(t);
    if (dt != GAD_F32 && dt != GAD_F64 && dt != GAD_F16 && dt != GAD_BF16)
        return gad_error_set(GAD_ERR_DTYPE, op, "\"%s\" is %s; parameters are f32, f64, f16 or bf16",
                             shown(b, name), gad_dtype_name(gad_dtype(t)));
    if (gad_is_tracked(t) && !gad_is_leaf(t))
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "\"%s\" is the result of an op (a parameter must be a tensor "
                             "of its own: gad_detach or gad_clone it)",
                             shown(b, name));
    if (find(ps, name) >= 0 || find_buffer(ps, name) >= 0 || find_alias(ps, name) >= 0)
        return gad_error_set(GAD_ERR_DOMAIN, op, "the name \"%s\" is already in the set",
                             shown(b, name));
    for (int i = 0; i < ps->nb; i++)
        if (ps->buffers[i] == t) {
            char b2[SHOWN_CAP];
            return gad_error_set(GAD_ERR_DOMAIN, op, "\"%s\" is the same tensor as the buffer \"%s\"",
                                 shown(b, name), shown(b2, ps->bnames[i]));
        }
    for (int i = 0; i < ps->n; i++)
        if (ps->tensors[i] == t) {
            char b2[SHOWN_CAP];
            return gad_error_set(GAD_ERR_DOMAIN, op,
                                 "\"%s\" is the same tensor as \"%s\" (an optimizer would update "
                                 "it twice)",
                                 shown(b, name), shown(b2, ps->names[i]));
        }
    if (grow(op, &ps->names, &ps->tensors, ps->n, &ps->cap)) return NULL;
    size_t len = strlen(name);
    char *copy = gad_mem_alloc(len + 1);
    if (!copy) return gad_error_set(GAD_ERR_MEMORY, op, "out of memory");
    memcpy(copy, name, len + 1);
    if (!gad_requires_grad(t)) { /* a memory error, recorded */
        gad_mem_free(copy);
        return NULL;
    }
    ps->names[ps->n] = copy;
    ps->tensors[ps->n] = gad_retain(t);
    ps->n++;
    return t;
}

gad_tensor *gad_params_add_buffer(gad_params *ps, const char *name, gad_tensor *t) {
    const char *op = "params_add_buffer";
    char b[SHOWN_CAP];
    if (!ps) return gad_error_set(GAD_ERR_DOMAIN, op, "the set is NULL");
    if (!name) return gad_error_set(GAD_ERR_DOMAIN, op, "the name is NULL");
    if (!t) return gad_error_set(GAD_ERR_DOMAIN, op, "the tensor for \"%s\" is NULL", shown(b, name));
    if (GAD_LIVE(op, t)) return NULL;
    const char *why = gad__tensor_name_problem(name);
    if (why) return gad_error_set(GAD_ERR_DOMAIN, op, "the name \"%s\" %s", shown(b, name), why);
    if (gad_is_tracked(t))
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "\"%s\" is on the tape (a buffer takes no gradient: gad_detach it)",
                             shown(b, name));
    if (find(ps, name) >= 0 || find_buffer(ps, name) >= 0 || find_alias(ps, name) >= 0)
        return gad_error_set(GAD_ERR_DOMAIN, op, "the name \"%s\" is already in the set",
                             shown(b, name));
    for (int i = 0; i < ps->nb; i++)
        if (ps->buffers[i] == t) {
            char b2[SHOWN_CAP];
            return gad_error_set(GAD_ERR_DOMAIN, op, "\"%s\" is the same tensor as \"%s\"",
                                 shown(b, name), shown(b2, ps->bnames[i]));
        }
    if (grow(op, &ps->bnames, &ps->buffers, ps->nb, &ps->bcap)) return NULL;
    size_t len = strlen(name);
    char *copy = gad_mem_alloc(len + 1);
    if (!copy) return gad_error_set(GAD_ERR_MEMORY, op, "out of memory");
    memcpy(copy, name, len + 1);
    ps->bnames[ps->nb] = copy;
    ps->buffers[ps->nb] = gad_retain(t);
    ps->nb++;
    return t;
}

gad_tensor *gad_params_add_tied(gad_params *ps, const char *name, gad_tensor *t) {
    const char *op = "params_add_tied";
    char b[SHOWN_CAP];
    if (!ps || !name || !t)
        return gad_error_set(GAD_ERR_DOMAIN, op, "the %s is NULL",
                             !ps ? "set" : !name ? "name" : "tensor");
    if (GAD_LIVE(op, t)) return NULL;
    const char *why = gad__tensor_name_problem(name);
    if (why) return gad_error_set(GAD_ERR_DOMAIN, op, "the name \"%s\" %s", shown(b, name), why);
    if (find(ps, name) >= 0 || find_buffer(ps, name) >= 0 || find_alias(ps, name) >= 0)
        return gad_error_set(GAD_ERR_DOMAIN, op, "the name \"%s\" is already in the set",
                             shown(b, name));
    int owner = -1;
    for (int i = 0; i < ps->n && owner < 0; i++)
        if (ps->tensors[i] == t) owner = i;
    if (owner < 0)
        return gad_error_set(GAD_ERR_DOMAIN, op, "the tensor for \"%s\" is not a parameter of "
                             "the set (add it first)", shown(b, name));
    if (grow(op, &ps->anames, &ps->aliases, ps->na, &ps->acap)) return NULL;
    size_t len = strlen(name);
    char *copy = gad_mem_alloc(len + 1);
    if (!copy) return gad_error_set(GAD_ERR_MEMORY, op, "out of memory");
    memcpy(copy, name, len + 1);
    ps->anames[ps->na] = copy;
    ps->aliases[ps->na] = gad_retain(t);
    ps->na++;
    return t;
}

gad_tensor *gad__params_find(const gad_params *ps, const char *name) {
    int i = find(ps, name);
    if (i >= 0) return ps->tensors[i];
    i = find_buffer(ps, name);
    if (i >= 0) return ps->buffers[i];
    i = find_alias(ps, name);
    return i >= 0 ? ps->aliases[i] : NULL;
}

/* The count of ps's parameters, or of its buffers; -1 and an error when ps
 * is NULL. */
static int count_of(const char *op, const gad_params *ps, int buffers) {
    if (!ps) {
        gad_error_set(GAD_ERR_DOMAIN, op, "the set is NULL");
        return -1;
    }
    return buffers ? ps->nb : ps->n;
}

/* 0 when i indexes ps's parameters (or buffers), else -1 and an error. */
static int check_index(const char *op, const gad_params *ps, int i, int buffers) {
    int n = count_of(op, ps, buffers);
    if (n < 0) return -1;
    if (i < 0 || i >= n) {
        gad_error_set(GAD_ERR_INDEX, op, "index %d is outside [0, %d)", i, n);
        return -1;
    }
    return 0;
}

int gad_params_buffer_count(const gad_params *ps) {
    return count_of("params_buffer_count", ps, 1);
}

const char *gad_params_buffer_name(const gad_params *ps, int i) {
    return check_index("params_buffer_name", ps, i, 1) ? NULL : ps->bnames[i];
}

gad_tensor *gad_params_buffer_at(const gad_params *ps, int i) {
    return check_index("params_buffer_at", ps, i, 1) ? NULL : ps->buffers[i];
}

int gad_params_count(const gad_params *ps) { return count_of("params_count", ps, 0); }

const char *gad_params_name(const gad_params *ps, int i) {
    return check_index("params_name", ps, i, 0) ? NULL : ps->names[i];
}

gad_tensor *gad_params_at(const gad_params *ps, int i) {
    return check_index("params_at", ps, i, 0) ? NULL : ps->tensors[i];
}

gad_tensor *gad_params_get(const gad_params *ps, const char *name) {
    const char *op = "params_get";
    if (!ps) return gad_error_set(GAD_ERR_DOMAIN, op, "the set is NULL");
    if (!name) return gad_error_set(GAD_ERR_DOMAIN, op, "the name is NULL");
    int i = find(ps, name);
    char b[SHOWN_CAP];
    if (i < 0 && (i = find_buffer(ps, name)) >= 0) return ps->buffers[i];
    if (i < 0 && (i = find_alias(ps, name)) >= 0) return ps->aliases[i];
    if (i < 0)
        return gad_error_set(GAD_ERR_INDEX, op,
                             "no parameter or buffer is named \"%s\" (the set has %d and %d)",
                             shown(b, name), ps->n, ps->nb);
    return ps->tensors[i];
}

gad_tensor *const *gad_params_tensors(const gad_params *ps) {
    if (!ps) return gad_error_set(GAD_ERR_DOMAIN, "params_tensors", "the set is NULL");
    return ps->tensors; /* NULL for an empty set, which has nothing to read */
}

int64_t gad_params_numel(const gad_params *ps) {
    if (!ps) {
        gad_error_set(GAD_ERR_DOMAIN, "params_numel", "the set is NULL");
        return -1;
    }
    int64_t s = 0;
    for (int i = 0; i < ps->n; i++) s += gad_numel(ps->tensors[i]);
    return s;
}

/* '*' matches any run of bytes (none included); every other byte itself.
 * The classic backtracking walk: on a mismatch, let the last '*' take one
 * more byte. Linear in practice, at worst |pattern| * |s|. */
int gad__params_match(const char *pat, const char *s) {
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (*pat == '*') {
            star = pat++;
            resume = s;
        } else if (*pat == *s) {
            pat++, s++;
        } else if (star) {
            pat = star + 1;
            s = ++resume;
        } else {
            return 0;
        }
    }
    while (*pat == '*') pat++;
    return *pat == '\0';
}

int gad_params_freeze(gad_params *ps, const char *pattern, int frozen) {
    const char *op = "params_freeze";
    if (!ps) {
        gad_error_set(GAD_ERR_DOMAIN, op, "the set is NULL");
        return -1;
    }
    if (!pattern) {
        gad_error_set(GAD_ERR_DOMAIN, op, "the pattern is NULL");
        return -1;
    }
    int matched = 0;
    for (int i = 0; i < ps->n; i++) matched += gad__params_match(pattern, ps->names[i]);
    if (matched == 0) {
        char b[SHOWN_CAP];
        gad_error_set(GAD_ERR_INDEX, op, "no parameter name matches \"%s\" (the set has %d)",
                      shown(b, pattern), ps->n);
        return -1;
    }
    /* unfreezing allocates leaves: all of them first, so that a memory
     * error leaves every parameter as it was */
    gad_node **fresh = NULL;
    if (!frozen) {
        fresh = gad_mem_alloc((size_t)ps->n * sizeof *fresh);
        if (!fresh) {
            gad_error_set(GAD_ERR_MEMORY, op, "out of memory");
            return -1;
        }
        for (int i = 0; i < ps->n; i++) {
            gad_tensor *t = ps->tensors[i];
            fresh[i] = NULL;
            if (t->node || !gad__params_match(pattern, ps->names[i])) continue;
            if (!(fresh[i] = gad__node_new(0, 0, t->rank, 0))) {
                for (int j = 0; j < i; j++)
                    if (fresh[j]) gad__node_release(fresh[j]);
                gad_mem_free(fresh);
                gad_error_set(GAD_ERR_MEMORY, op, "cannot allocate a leaf");
                return -1;
            }
        }
    }
    for (int i = 0; i < ps->n; i++) {
        gad_tensor *t = ps->tensors[i];
        if (!gad__params_match(pattern, ps->names[i])) continue;
        if (frozen && t->node) {
            /* off the tape; a graph that still holds the old leaf keeps it
             * (its gradient there is no parameter's any more) */
            gad_node *leaf = t->node;
            t->node = NULL;
            gad__node_release(leaf);
        } else if (!frozen && fresh[i]) {
            gad_node *leaf = fresh[i]; /* gad_requires_grad's leaf */
            leaf->dtype = t->dtype;
            leaf->dev = t->dev;
            memcpy(leaf->shape, t->shape, (size_t)t->rank * sizeof *leaf->shape);
            t->node = leaf;
        }
    }
    gad_mem_free(fresh);
    return matched;
}

gad_status gad_params_grad(gad_params *ps, gad_tensor *out, gad_tensor **grads) {
    const char *op = "params_grad";
    if (!ps || !grads) {
        gad_error_set(GAD_ERR_DOMAIN, op, "the %s is NULL", ps ? "grads array" : "set");
        return GAD_ERR_DOMAIN;
    }
    if (GAD_LIVE(op, out)) { /* NULL: gad_grad's error, below */
        for (int i = 0; i < ps->n; i++) grads[i] = NULL;
        return GAD_ERR_DOMAIN;
    }
    for (int i = 0; i < ps->n; i++) grads[i] = NULL;
    int k = 0;
    gad_tensor **in = gad_mem_alloc((size_t)(ps->n > 0 ? ps->n : 1) * 2 * sizeof *in);
    if (!in) {
        gad_error_set(GAD_ERR_MEMORY, op, "out of memory");
        return GAD_ERR_MEMORY;
    }
    gad_tensor **g = in + (ps->n > 0 ? ps->n : 1);
    for (int i = 0; i < ps->n; i++)
        if (gad_is_leaf(ps->tensors[i])) in[k++] = ps->tensors[i];
    gad_status st = gad_grad(out, in, k, g);
    if (st == GAD_OK)
        for (int i = 0, j = 0; i < ps->n; i++)
            if (gad_is_leaf(ps->tensors[i])) grads[i] = g[j++];
    gad_mem_free(in);
    return st;
}

/* ------------------------------------------------------------ save, load */

/* Entry i of the set as saved: the parameters, the buffers, then the
 * tied names. */
static const char *entry_name(const gad_params *ps, int i) {
    return i < ps->n ? ps->names[i] : i < ps->n + ps->nb ? ps->bnames[i - ps->n]
                                                          : ps->anames[i - ps->n - ps->nb];
}
static gad_tensor *entry_tensor(const gad_params *ps, int i) {
    return i < ps->n ? ps->tensors[i] : i < ps->n + ps->nb ? ps->buffers[i - ps->n]
                                                            : ps->aliases[i - ps->n - ps->nb];
}

gad_status gad_params_save(const gad_params *ps, const char *path) {
    return gad_params_save_meta(ps, path, NULL, 0);
}

gad_status gad_params_save_meta(const gad_params *ps, const char *path,
                                const char *const *meta, int n_meta) {
    if (!ps) {
        gad_error_set(GAD_ERR_DOMAIN, "params_save", "the set is NULL");
        return GAD_ERR_DOMAIN;
    }
    if (ps->nb == 0 && ps->na == 0)
        return gad_save_meta(path, (const char *const *)ps->names, ps->tensors, ps->n, meta,
                             n_meta);
    int total = ps->n + ps->nb + ps->na;
    const char **names = gad_mem_alloc((size_t)total * sizeof *names);
    gad_tensor **ts = gad_mem_alloc((size_t)total * sizeof *ts);
    gad_status st = GAD_ERR_MEMORY;
    if (names && ts) {
        for (int i = 0; i < total; i++) {
            names[i] = entry_name(ps, i);
            ts[i] = entry_tensor(ps, i);
        }
        st = gad_save_meta(path, names, ts, total, meta, n_meta);
    } else {
        gad_error_set(GAD_ERR_MEMORY, "params_save", "out of memory");
    }
    gad_mem_free(names);
    gad_mem_free(ts);
    return st;
}

/* A message built from parts, cut with "... (N more)" where it is full. */
typedef struct report {
    char text[224];
    size_t len;
    int shown, total;
} report;

static void report_add(report *r, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void report_add(report *r, const char *fmt, ...) {
    r->total++;
    if (r->shown < r->total - 1) return; /* an earlier part did not fit */
    char part[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(part, sizeof part, fmt, ap);
    va_end(ap);
    size_t pl = strlen(part), sep = r->len ? 2 : 0;
    if (r->len + sep + pl + 1 > sizeof r->text - 16) return; /* room for the tail */
    if (sep) memcpy(r->text + r->len, "; ", 2);
    memcpy(r->text + r->len + sep, part, pl + 1);
    r->len += sep + pl;
    r->shown++;
}

static const char *report_text(report *r) {
    if (r->shown < r->total)
        snprintf(r->text + r->len, sizeof r->text - r->len, "; ... (%d more)",
                 r->total - r->shown);
    return r->text;
}

gad_status gad_params_load_checkpoint(gad_params *ps, const gad_checkpoint *cp, int strict,
                                      gad_params_load_info *info) {
    const char *op = "params_load";
    if (info) memset(info, 0, sizeof *info);
    if (!ps || !cp) {
        gad_error_set(GAD_ERR_DOMAIN, op, "the %s is NULL", ps ? "checkpoint" : "set");
        return GAD_ERR_DOMAIN;
    }
    int nf = gad_checkpoint_count(cp);
    if (nf < 0) return gad_last_error() ? gad_last_error()->kind : GAD_ERR_DOMAIN;
    gad_params_load_info in = {0};
    report r = {0};
    gad_status kind = GAD_OK; /* the first mismatch's kind */
    char b[SHOWN_CAP], s1[GAD_SHAPE_FORMAT_CAP], s2[GAD_SHAPE_FORMAT_CAP];
    /* Every tensor is read before any is written: a file cut short since
     * gad_load (an io error) must leave the set as it was. */
    int total = ps->n + ps->nb + ps->na; /* the parameters, buffers, tied names */
    gad_tensor **vals = gad_mem_alloc((size_t)(total > 0 ? total : 1) * sizeof *vals);
    if (!vals) {
        gad_error_set(GAD_ERR_MEMORY, op, "out of memory");
        return GAD_ERR_MEMORY;
    }
    gad_status st = GAD_OK;
    gad_scope_begin();
    for (int i = 0; i < total; i++) {
        vals[i] = NULL;
        const char *name = entry_name(ps, i);
        int present = 0;
        for (int j = 0; j < nf && !present; j++) present = strcmp(gad_checkpoint_name(cp, j), name) == 0;
        if (!present) {
            in.missing++;
            if (strict) report_add(&r, "missing \"%s\"", shown(b, name));
            continue;
        }
        gad_tensor *p = entry_tensor(ps, i);
        gad_tensor *v = gad_checkpoint_get_on(cp, name, gad_device_of(p)); /* on p's device */
        if (!v) {
            st = gad_last_error() ? gad_last_error()->kind : GAD_ERR_IO;
            break;
        }
        int same = gad_rank(v) == gad_rank(p);
        for (int d = 0; same && d < gad_rank(p); d++) same = gad_shape(v)[d] == gad_shape(p)[d];
        if (gad_dtype(v) != gad_dtype(p) || !same) {
            in.mismatched++;
            if (kind == GAD_OK) kind = same ? GAD_ERR_DTYPE : GAD_ERR_SHAPE;
            report_add(&r, "\"%s\" is %s %s in the file, %s %s in the set", shown(b, name),
                       gad_dtype_name(gad_dtype(v)),
                       gad_shape_format(s1, sizeof s1, gad_shape(v), gad_rank(v)),
                       gad_dtype_name(gad_dtype(p)),
                       gad_shape_format(s2, sizeof s2, gad_shape(p), gad_rank(p)));
            continue;
        }
        vals[i] = v;
    }
    for (int j = 0; st == GAD_OK && j < nf; j++) {
        const char *name = gad_checkpoint_name(cp, j);
        if (find(ps, name) >= 0 || find_buffer(ps, name) >= 0 || find_alias(ps, name) >= 0)
            continue;
        in.unexpected++;
        if (strict) report_add(&r, "unexpected \"%s\"", shown(b, name));
    }
    if (st == GAD_OK && r.total > 0) {
        if (kind == GAD_OK) kind = GAD_ERR_INDEX; /* names only: missing or unexpected */
        gad_error_set(kind, op, "%d problem%s: %s", r.total, r.total > 1 ? "s" : "",
                      report_text(&r));
        st = kind;
    }
    /* writable first (copy-on-write may allocate), then the copies, on the
     * parameters' devices, which cannot fail */
    for (int i = 0; st == GAD_OK && i < total; i++)
        if (vals[i] && gad__make_writable(op, entry_tensor(ps, i)) != 0)
            st = gad_last_error() ? gad_last_error()->kind : GAD_ERR_MEMORY;
    for (int i = 0; st == GAD_OK && i < total; i++) {
        if (!vals[i]) continue;
        gad__pack(vals[i], gad__ptr(entry_tensor(ps, i))); /* private and packed now */
        in.loaded++;
    }
    gad_scope_end();
    gad_mem_free(vals);
    if (info) *info = in;
    return st;
}

gad_status gad_params_load(gad_params *ps, const char *path, int strict,
                           gad_params_load_info *info) {
    if (info) memset(info, 0, sizeof *info);
    if (!ps) {
        gad_error_set(GAD_ERR_DOMAIN, "params_load", "the set is NULL");
        return GAD_ERR_DOMAIN;
    }
    gad_checkpoint *cp = gad_load(path);
    if (!cp) return gad_last_error() ? gad_last_error()->kind : GAD_ERR_IO;
    gad_status st = gad_params_load_checkpoint(ps, cp, strict, info);
    gad_checkpoint_free(cp);
    return st;
}
