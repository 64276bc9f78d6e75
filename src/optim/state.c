/* state.c: an optimizer's state as named tensors, out (gad_optim_state)
 * and back in (gad_optim_load_state), for checkpoints (SPEC §5).
 *
 * Decisions the header leaves open:
 * - gad_optim_state hands out copy-on-write aliases of m, v and the
 *   momentum buffers (snapshots: later steps never change them); its names
 *   belong to the optimizer and live until gad_optim_free; it returns -1
 *   on an error. load_state aliases the given tensors the same way. Unknown,
 *   repeated or missing names and a negative step are format errors, a
 *   wrong shape a shape error, a wrong dtype a dtype error. SGD momentum
 *   buffers are optional (absent means "not made yet"). */
#include "optim_int.h"

#include "io/json.h" /* gad__json_shown: names in messages */

#include <stdint.h>
#include <string.h>


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
    if (gad__optim_bad(op, opt)) return -1;
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
        gad__optim_fail_memory(op);
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
    if (gad__optim_bad(op, opt)) return GAD_ERR_DOMAIN;
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
    int *seen = gad__optim_zalloc((size_t)2 * (size_t)(np > 0 ? np : 1) + 1, sizeof *seen);
    gad_tensor **fresh = gad__optim_zalloc((size_t)2 * (size_t)(np > 0 ? np : 1),
                                sizeof *fresh);
    gad_status st = GAD_OK;
    int64_t step = 0;
    int have_step = 0;
    if (!slot || !seen || !fresh) {
        st = gad__optim_fail_memory(op);
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
                              optim_shape_str(b, sizeof b, t));
                st = gad_dtype(t) != GAD_I64 ? GAD_ERR_DTYPE : GAD_ERR_SHAPE;
                break;
            }
            if (gad_read_i64(t, &step, 1) != GAD_OK) {
                st = gad__optim_fail_memory(op);
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
        if (!optim_same_shape(t, p)) {
            char a[GAD_SHAPE_FORMAT_CAP], b[GAD_SHAPE_FORMAT_CAP];
            gad_error_set(GAD_ERR_SHAPE, op,
                          "\"%s\" has shape %s, params[%d] has shape %s", name,
                          optim_shape_str(a, sizeof a, t), idx,
                          optim_shape_str(b, sizeof b, p));
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
        if (!a) st = gad__optim_fail_memory(op);
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
