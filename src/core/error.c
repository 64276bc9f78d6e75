/* error.c: the thread-local first-error record (DESIGN §5), and the text
 * of a shape that error messages show (gad_shape_format). */
#include "gad_int.h"

#include <stdio.h>

static _Thread_local gad_error tl_err;
static _Thread_local bool tl_pending;
/* The caller's call site (gad.h, "Call sites"): set only by programs built
 * with GAD_CALL_SITES, read only when an error is recorded. */
static _Thread_local gad_call_site tl_site;

gad_call_site gad_call_site_enter(const char *file, int line) {
    gad_call_site prev = tl_site;
    tl_site.file = file;
    tl_site.line = line;
    return prev;
}

void gad_call_site_leave(gad_call_site prev) { tl_site = prev; }

/* The public op being run (gad_int.h), NULL outside one. */
static _Thread_local const char *tl_public;

const char *gad__op_public(void) { return tl_public; }

const char *gad__op_public_enter(const char *op) {
    const char *prev = tl_public;
    if (!prev) tl_public = op;
    return prev;
}


void gad__op_public_leave(const char *prev) { tl_public = prev; }

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

void *gad__err(gad_status kind, const char *op, const char *fmt, ...) {
    if (tl_pending) return NULL;
    tl_pending = true;
    tl_err.kind = kind;
    snprintf(tl_err.op, sizeof tl_err.op, "%s", op ? op : "?");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_err.message, sizeof tl_err.message, fmt, ap);
    va_end(ap);
    tl_err.file = tl_site.file;
    tl_err.line = tl_site.file ? tl_site.line : 0;
    char site[96] = "";
    if (tl_site.file) { /* a long path is cut from the left: the file name is what helps */
        const char *f = tl_site.file;
        size_t fl = strlen(f);
        snprintf(site, sizeof site, " (at %s%s:%d)", fl > 60 ? "..." : "", fl > 60 ? f + fl - 60 : f,
                 tl_site.line);
    }
    /* the site always fits: the message gives way, cut at a character */
    int head = snprintf(tl_err.text, sizeof tl_err.text, "%s error in %.31s: ",
                        gad_status_str(kind), tl_err.op);
    size_t room = sizeof tl_err.text - 1 - (size_t)head - strlen(site);
    size_t ml = strlen(tl_err.message);
    if (ml > room) {
        ml = room;
        while (ml > 0 && ((unsigned char)tl_err.message[ml] & 0xC0) == 0x80) ml--;
    }
    snprintf(tl_err.text + head, sizeof tl_err.text - (size_t)head, "%.*s%s", (int)ml,
             tl_err.message, site);
    return NULL;
}

void gad__err_unsupported_rename(const char *op) {
    if (!tl_pending || tl_err.kind != GAD_ERR_UNSUPPORTED || !strcmp(tl_err.op, op)) return;
    char msg[sizeof tl_err.message];
    snprintf(msg, sizeof msg, "%s", tl_err.message);
    gad_call_site site = tl_site; /* where the error was raised */
    tl_site.file = tl_err.file;
    tl_site.line = tl_err.line;
    tl_pending = false;
    gad__err(GAD_ERR_UNSUPPORTED, op, "%s", msg);
    tl_site = site;
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

void *gad_error_set_at(const char *file, int line, gad_status kind, const char *op,
                       const char *fmt, ...) {
    if (tl_pending) return NULL;
    char msg[sizeof tl_err.message];
    va_list ap;
    va_start(ap, fmt);
    if (fmt) vsnprintf(msg, sizeof msg, fmt, ap);
    else msg[0] = 0;
    va_end(ap);
    gad_call_site prev = gad_call_site_enter(file, line);
    gad__err(kind == GAD_OK ? GAD_ERR_DOMAIN : kind, op, "%s", msg);
    gad_call_site_leave(prev);
    return NULL;
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

int gad__need_floating_fail(const char *op, const gad_tensor *t) {
    if (gad__is_half(t->dtype)) {
        if (t->dev == GAD_DEV_HOST) return 0;
        gad__err(GAD_ERR_UNSUPPORTED, op, "%s tensors: not supported on %s",
                 gad_dtype_name((gad_dtype_t)t->dtype), gad__device_name(t->dev));
        return -1;
    }
    gad__err(GAD_ERR_DTYPE, op, "needs a float tensor (f32, f64, f16 or bf16), got %s",
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
