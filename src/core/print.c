/* print.c: a NumPy-like repr of a tensor. */
#include "gad_int.h"
#include "half.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define EDGE 3         /* items kept at each end of a summarized axis */
#define THRESHOLD 1000 /* summarize tensors with more elements than this */
#define LINE 75        /* wrap rows longer than this */

typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->len + n + 1) nc *= 2;
        char *np = gad__alloc(nc);
        if (!np) {
            b->oom = true;
            return;
        }
        if (b->p) memcpy(np, b->p, b->len);
        gad__free(b->p, b->cap);
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_pad(sbuf *b, size_t n) {
    for (size_t i = 0; i < n; i++) sb_put(b, " ", 1);
}

/* The shortest decimal that reads back as the same value, NumPy-styled:
 * positional notation for 1e-4 <= |v| < 1e16 ("10.", "0.1", "1234.5"),
 * exponent notation otherwise; integral values get a trailing ".". */
static int fmt_elem(char *out, size_t cap, const gad_tensor *t, const char *p) {
    if (t->dtype == GAD_I64)
        return snprintf(out, cap, "%lld", (long long)*(const int64_t *)p);
    if (t->dtype == GAD_I32 || t->dtype == GAD_U8)
        return snprintf(out, cap, "%.0f", gad__elem_f64(t->dtype, p));
    if (t->dtype == GAD_BOOL) /* PyTorch's words */
        return snprintf(out, cap, "%s", *(const uint8_t *)p ? "True" : "False");
    double v = gad__elem_f64(t->dtype, p);
    /* the shortest decimal that reads back as the same value in t's dtype:
     * halves compare after rounding to f32 then to the half */
    if (isnan(v)) return snprintf(out, cap, "nan");
    if (isinf(v)) return snprintf(out, cap, v < 0 ? "-inf" : "inf");
    if (v == 0) return snprintf(out, cap, signbit(v) ? "-0." : "0.");
    int maxp = t->dtype == GAD_F64 ? 17 : t->dtype == GAD_F32 ? 9 : 5, prec = 1, n = 0;
    for (; prec < maxp; prec++) {
        snprintf(out, cap, "%.*g", prec, v);
        double back = strtod(out, NULL);
        if (t->dtype == GAD_F64 ? back == v
            : t->dtype == GAD_F32 ? (float)back == (float)v
            : t->dtype == GAD_F16 ? gad__f32_to_f16((float)back) == *(const uint16_t *)p
                                  : gad__f32_to_bf16((float)back) == *(const uint16_t *)p)
            break;
    }
    double a = fabs(v);
    if (a >= 1e-4 && a < 1e16) {
        /* the decimals of the shortest string, from its own exponent (not
         * the value's log10: f16 0.1 is 0.09998, whose floor(log10) would
         * give "0.10") */
        char e[64];
        snprintf(e, sizeof e, "%.*e", prec - 1, v);
        const char *ep = strchr(e, 'e');
        int decimals = prec - 1 - (ep ? atoi(ep + 1) : 0);
        n = snprintf(out, cap, "%.*f", decimals > 0 ? decimals : 0, v);
    } else {
        n = snprintf(out, cap, "%.*e", prec - 1, v);
    }
    if (!strpbrk(out, ".e") && (size_t)n + 1 < cap) {
        out[n++] = '.';
        out[n] = 0;
    }
    return n;
}

typedef struct pctx {
    const gad_tensor *t;
    bool summarize;
    int width;     /* widest element */
    size_t indent; /* column of the first '[' */
} pctx;

static bool skip_middle(const pctx *c, int axis) {
    return c->summarize && c->t->shape[axis] > 2 * EDGE;
}

/* Visit the printed elements (used to find the widest). */
static void widest(pctx *c, int axis, int64_t off) {
    const gad_tensor *t = c->t;
    if (axis == t->rank) {
        char s[64];
        int n = fmt_elem(s, sizeof s, t,
                         (const char *)gad__ptr(t) + off * (int64_t)gad__dsize(t->dtype));
        if (n > c->width) c->width = n;
        return;
    }
    for (int64_t i = 0; i < t->shape[axis]; i++) {
        if (skip_middle(c, axis) && i == EDGE) i = t->shape[axis] - EDGE;
        widest(c, axis + 1, off + i * t->strides[axis]);
    }
}

static void emit(pctx *c, sbuf *b, int axis, int64_t off) {
    const gad_tensor *t = c->t;
    sb_str(b, "[");
    int64_t d = t->shape[axis];
    bool last_axis = axis == t->rank - 1;
    size_t col = c->indent + (size_t)axis + 1;
    size_t linepos = col;
    for (int64_t i = 0; i < d; i++) {
        if (i > 0) {
            if (last_axis) {
                sb_str(b, ",");
                if (linepos + 2 + (size_t)c->width > LINE) {
                    sb_str(b, "\n");
                    sb_pad(b, col);
                    linepos = col;
                } else {
                    sb_str(b, " ");
                    linepos += 2;
                }
            } else {
                sb_str(b, ",");
                for (int k = 0; k < t->rank - axis - 1; k++) sb_str(b, "\n");
                sb_pad(b, col);
            }
        }
        if (skip_middle(c, axis) && i == EDGE) {
            sb_str(b, "...");
            linepos += 3;
            i = d - EDGE - 1;
            continue;
        }
        int64_t o = off + i * t->strides[axis];
        if (last_axis) {
            char s[64];
            int n = fmt_elem(s, sizeof s, t,
                             (const char *)gad__ptr(t) + o * (int64_t)gad__dsize(t->dtype));
            sb_pad(b, (size_t)(c->width - n));
            sb_str(b, s);
            linepos += (size_t)c->width;
        } else {
            emit(c, b, axis + 1, o);
        }
    }
    sb_str(b, "]");
}

static void repr_host(sbuf *b, gad_tensor *t, int dev);

/* A device tensor prints from a host copy of it, and says where it lives. */
static void repr(sbuf *b, gad_tensor *t) {
    if (t && gad__released(t)) {
        gad__err_released("print");
        sb_str(b, "tensor(<released>)");
        return;
    }
    if (!t || t->dev == GAD_DEV_HOST) {
        repr_host(b, t, GAD_DEV_HOST);
        return;
    }
    gad_tensor *h = gad__to_dev("print", t, GAD_DEV_HOST);
    if (!h) {
        b->oom = true;
        return;
    }
    repr_host(b, h, t->dev);
    gad_release(h);
}

static void repr_host(sbuf *b, gad_tensor *t, int dev) {
    if (!t) {
        sb_str(b, "tensor(NULL)");
        return;
    }
    char tail[GAD_SHAPE_BUF + 64];
    sb_str(b, "tensor(");
    pctx c = {t, t->numel > THRESHOLD, 0, 7};
    if (t->numel == 0) {
        char s[GAD_SHAPE_BUF];
        sb_str(b, "[]");
        snprintf(tail, sizeof tail, ", shape=%s, dtype=%s%s%s)",
                 gad__shape_str(s, t->shape, t->rank),
                 gad_dtype_name((gad_dtype_t)t->dtype), dev ? ", device=" : "",
                 dev ? gad__device_name(dev) : "");
        sb_str(b, tail);
        return;
    }
    widest(&c, 0, 0);
    if (t->rank == 0) {
        char s[64];
        fmt_elem(s, sizeof s, t, gad__ptr(t));
        sb_str(b, s);
    } else {
        emit(&c, b, 0, 0);
    }
    snprintf(tail, sizeof tail, ", dtype=%s%s%s)", gad_dtype_name((gad_dtype_t)t->dtype),
             dev ? ", device=" : "", dev ? gad__device_name(dev) : "");
    sb_str(b, tail);
}

size_t gad_snprint(char *buf, size_t cap, gad_tensor *t) {
    sbuf b = {0};
    repr(&b, t);
    const char *s = b.oom ? "tensor(<out of memory>)" : b.p;
    size_t n = strlen(s);
    if (buf && cap > 0) { /* a NULL buf writes nothing, whatever cap says */
        size_t k = n < cap - 1 ? n : cap - 1;
        memcpy(buf, s, k);
        buf[k] = 0;
    }
    gad__free(b.p, b.cap);
    return n;
}

void gad_fprint(FILE *f, gad_tensor *t) {
    if (!f) {
        gad__err(GAD_ERR_IO, "fprint", "no output file");
        return;
    }
    sbuf b = {0};
    repr(&b, t);
    fputs(b.oom ? "tensor(<out of memory>)" : b.p, f);
    fputc('\n', f);
    gad__free(b.p, b.cap);
}

void gad_print(gad_tensor *t) { gad_fprint(stdout, t); }
