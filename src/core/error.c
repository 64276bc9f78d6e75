/* error.c: the thread-local first-error record (DESIGN §5), and the text
 * of a shape that error messages show (gad_shape_format). */
#include "gad_int.h"

#include <stdio.h>

static _Thread_local gad_error tl_err;
static _Thread_local bool tl_pending;

static const char *const status_names[] = {
#define GAD_STATUS_NAME_(code, name) name,
    GAD_STATUS_LIST(GAD_STATUS_NAME_)
#undef GAD_STATUS_NAME_
};

const char *gad_status_str(gad_status status) {
    if ((int)status < 0 || status >= GAD_STATUS_COUNT_) return "unknown";
    return status_names[status];
}

const gad_error *gad_last_error(void) { return tl_pending ? &tl_err : NULL; }

void gad_clear_error(void) { tl_pending = false; }

bool gad__error_pending(void) { return tl_pending; }

void *gad__err(gad_status kind, const char *op, const char *fmt, ...) {
    if (tl_pending) return NULL;
    tl_pending = true;
    tl_err.kind = kind;
    snprintf(tl_err.op, sizeof tl_err.op, "%s", op ? op : "?");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_err.message, sizeof tl_err.message, fmt, ap);
    va_end(ap);
    snprintf(tl_err.text, sizeof tl_err.text, "%s error in %.31s: %.255s",
             gad_status_str(kind), tl_err.op, tl_err.message);
    return NULL;
}

void *gad_error_set(gad_status kind, const char *op, const char *fmt, ...) {
    if (tl_pending) return NULL;
    char msg[sizeof tl_err.message];
    va_list ap;
    va_start(ap, fmt);
    if (fmt) vsnprintf(msg, sizeof msg, fmt, ap);
    else msg[0] = 0;
    va_end(ap);
    return gad__err(kind == GAD_OK ? GAD_ERR_DOMAIN : kind, op, "%s", msg);
}

void *gad__null_arg(const char *op) {
    return gad__err(GAD_ERR_DOMAIN, op, "a tensor argument is NULL");
}

const char *gad_shape_format(char *buf, size_t cap, const int64_t *shape,
                             int rank) {
    if (!buf || cap == 0) return buf;
    /* The whole text first, then as much of it as fits. */
    char full[GAD_SHAPE_FORMAT_CAP];
    int n = 0;
    if (rank < 0 || rank > GAD_MAX_RANK || (rank > 0 && !shape)) {
        n = snprintf(full, sizeof full, "[rank %d]", rank);
    } else {
        full[n++] = '[';
        for (int i = 0; i < rank; i++) /* at most 20 digits and a comma */
            n += snprintf(full + n, sizeof full - (size_t)n,
                          i ? ",%lld" : "%lld", (long long)shape[i]);
        full[n++] = ']';
        full[n] = 0;
    }
    size_t len = (size_t)n < cap ? (size_t)n : cap - 1;
    memcpy(buf, full, len);
    buf[len] = 0;
    return buf;
}

char *gad__shape_str(char *buf, const int64_t *shape, int rank) {
    gad_shape_format(buf, GAD_SHAPE_FORMAT_CAP, shape, rank);
    return buf;
}

int gad__need_float_fail(const char *op, const gad_tensor *t) {
    gad__err(GAD_ERR_DTYPE, op, "needs a float tensor (f32 or f64), got %s",
             gad_dtype_name((gad_dtype_t)t->dtype));
    return -1;
}

int gad__need_same_dtype_fail(const char *op, const gad_tensor *a,
                              const gad_tensor *b) {
    gad__err(GAD_ERR_DTYPE, op, "mixed dtypes %s and %s (use gad_cast)",
             gad_dtype_name((gad_dtype_t)a->dtype),
             gad_dtype_name((gad_dtype_t)b->dtype));
    return -1;
}

int gad__need_i64(const char *op, const gad_tensor *index) {
    if (index->dtype == GAD_I64) return 0;
    gad__err(GAD_ERR_DTYPE, op, "index must be i64, got %s",
             gad_dtype_name((gad_dtype_t)index->dtype));
    return -1;
}
