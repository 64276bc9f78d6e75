/* safetensors.c: named tensors to and from safetensors files (gad.h,
 * "Checkpoints"): the format's header, dtypes and data offsets, over the
 * JSON of json.h and the durable file I/O of atomic_file.h. Written on the
 * public API only (DESIGN §1).
 *
 * The format: an 8-byte little-endian length N, N bytes of UTF-8 JSON (an
 * object mapping each name to {"dtype", "shape", "data_offsets"} plus an
 * optional "__metadata__" object of strings, padded with spaces), then the
 * data buffer; data_offsets are [begin, end) into that buffer.
 *
 * Save writes "<path>.tmp.<pid>.<k>" in path's directory, fsyncs it, renames
 * it over path and fsyncs the directory; on any failure the temporary file
 * is removed and an existing file at path is left as it was
 * (atomic_file.c).
 *
 * Load treats the file as hostile: it opens only a regular file (never
 * blocking on a FIFO or opening a device), reads the header, parses it with
 * a strict, bounds-checked recursive-descent parser (objects, arrays,
 * strings, integers; nesting at most JSON_DEPTH_MAX; its primitives are
 * json.c's), and validates every entry against the file's real size before
 * anything is allocated for it: sizes are computed without overflow, and
 * the data offsets, sorted as the reference implementation sorts them,
 * must tile the data buffer exactly (no gap, no overlap, nothing left
 * over). The data is not read then: the checkpoint keeps the file open and
 * gad_checkpoint_get preads each tensor's bytes straight into the new
 * tensor, so that a load's peak memory is the header and the tensors asked
 * for, never a copy of the file besides them (a 1 GiB tensor costs 1 GiB).
 * pread rather than mmap: a mapped file cut short by another process would
 * raise SIGBUS on access, where a short read is an io error; and pages
 * copied out of a mapping would count in the resident set along with the
 * copy. Nothing outside the bytes read is ever touched.
 *
 * Issue 29: every dtype of the format that gad can hold loads; those gad
 * lacks (I8, I16, U16, U32, U64, the FP8 pair) are widened or decoded
 * exactly while they are read, through a 16 KiB buffer, so the peak stays
 * the tensor itself. "__metadata__" is kept (string to string, each key
 * once) for gad_checkpoint_meta; gad_load_names keeps only the entries
 * asked for, after validating the whole header. */
#include "gad.h"

#include "atomic_file.h"
#include "gad_int.h" /* gad__any_released */
#include "json.h"
#include "safetensors.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define CKPT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CKPT_PRINTF(f, a)
#endif

/* The largest header accepted (the reference implementation's limit). */
#define HEADER_MAX ((uint64_t)100000000)
/* A name as an error message quotes it, in a buffer that lives until the
 * end of the enclosing block: unprintable bytes as \xNN, cut with "..."
 * past about 96 bytes (json.h, gad__json_shown). */
#define NAME_SHOWN "%s"
#define SHOWN(name) gad__json_shown((char[100]){0}, 100, (name))

/* ======================================================================== */
/* Small helpers                                                             */
/* ======================================================================== */

static bool host_is_le(void) {
    const uint32_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Reverse the bytes of each es-byte element of p[0..n). */
static void swap_elems(unsigned char *p, size_t n, size_t es) {
    for (size_t i = 0; i + es <= n; i += es)
        for (size_t a = i, b = i + es - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

static uint64_t load_le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = v << 8 | p[k];
    return v;
}

static void store_le64(unsigned char *p, uint64_t v) {
    for (int k = 0; k < 8; k++) p[k] = (unsigned char)(v >> (8 * k));
}

/* snprintf for messages that may be cut short (which is fine). */
static void msgf(char *buf, size_t cap, const char *fmt, ...) CKPT_PRINTF(3, 4);
static void msgf(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

/* ======================================================================== */
/* dtypes                                                                    */
/* ======================================================================== */

/* Every dtype the safetensors format defines, with its size in bits and
 * the gad dtype it loads as. Those gad has load as they are; I8, I16 and
 * U16 widen to i32, U32 and U64 to i64 (a U64 value above INT64_MAX is an
 * error when the tensor is read), and the two FP8 formats decode exactly
 * to f32. The rest (F8_E8M0, C64, F4, F6_*) are well-formed but
 * unsupported; an unknown dtype string is a format error. */
enum { CV_NONE, CV_I8, CV_I16, CV_U16, CV_U32, CV_U64, CV_E4M3, CV_E5M2 };

typedef struct dtype_info {
    const char *name;
    unsigned bits;
    gad_dtype_t gad; /* GAD_DTYPE_INVALID: not readable by gad */
    int conv;        /* CV_NONE: the bytes are the gad dtype's */
} dtype_info;

static const dtype_info dtypes[] = {
    {"F32", 32, GAD_F32, CV_NONE},
    {"F64", 64, GAD_F64, CV_NONE},
    {"I64", 64, GAD_I64, CV_NONE},
    {"BOOL", 8, GAD_BOOL, CV_NONE},
    {"F16", 16, GAD_F16, CV_NONE},
    {"BF16", 16, GAD_BF16, CV_NONE},
    {"I32", 32, GAD_I32, CV_NONE},
    {"U8", 8, GAD_U8, CV_NONE},
    {"I8", 8, GAD_I32, CV_I8},
    {"I16", 16, GAD_I32, CV_I16},
    {"U16", 16, GAD_I32, CV_U16},
    {"U32", 32, GAD_I64, CV_U32},
    {"U64", 64, GAD_I64, CV_U64},
    {"F8_E4M3", 8, GAD_F32, CV_E4M3},
    {"F8_E5M2", 8, GAD_F32, CV_E5M2},
    {"F8_E8M0", 8, GAD_DTYPE_INVALID, CV_NONE},
    {"C64", 64, GAD_DTYPE_INVALID, CV_NONE},
    {"F4", 4, GAD_DTYPE_INVALID, CV_NONE},
    {"F6_E2M3", 6, GAD_DTYPE_INVALID, CV_NONE},
    {"F6_E3M2", 6, GAD_DTYPE_INVALID, CV_NONE},
};
#define N_DTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

/* The file dtype a gad dtype is saved as (every gad dtype has one). */
static const char *st_dtype_name(gad_dtype_t d) {
    switch (d) {
    case GAD_F32: return "F32";
    case GAD_F64: return "F64";
    case GAD_I64: return "I64";
    case GAD_BOOL: return "BOOL";
    case GAD_F16: return "F16";
    case GAD_BF16: return "BF16";
    case GAD_I32: return "I32";
    case GAD_U8: return "U8";
    default: return NULL;
    }
}

/* The FP8 formats of the OCP 8-bit Floating Point Specification (OFP8),
 * rev 1.0, decoded exactly (every value is an f32). E4M3: bias 7, no
 * infinities, S.1111.111 is NaN (max 448). E5M2: bias 15, IEEE-like
 * (exponent 31: mantissa 0 is Inf, else NaN). Exponent 0 is subnormal:
 * m * 2^(1 - bias - mantissa bits). NaNs keep their sign, quiet. */
static float fp8_nan(unsigned s) {
    uint32_t u = (uint32_t)s << 31 | 0x7fc00000u;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float e4m3_to_f32(unsigned char b) {
    unsigned s = b >> 7, e = (b >> 3) & 15u, m = b & 7u;
    if (e == 15 && m == 7) return fp8_nan(s);
    float v = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), (int)e - 10);
    return s ? -v : v;
}

static float e5m2_to_f32(unsigned char b) {
    unsigned s = b >> 7, e = (b >> 2) & 31u, m = b & 3u;
    if (e == 31) return m ? fp8_nan(s) : (s ? -INFINITY : INFINITY);
    float v = e == 0 ? ldexpf((float)m, -16) : ldexpf((float)(4 + m), (int)e - 17);
    return s ? -v : v;
}

/* ======================================================================== */
/* Save                                                                      */
/* ======================================================================== */

static gad_status save_err(gad_status kind, const char *fmt, ...)
    CKPT_PRINTF(2, 3);
static gad_status save_err(gad_status kind, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gad_error_set(kind, "save", "%s", msg);
    return kind;
}

static gad_status save_io(const char *what, const char *path, int err) {
    if (err == GAD_SAVE_NOT_REGULAR) /* what names what is there */
        return save_err(GAD_ERR_IO, "cannot save to %.180s: it is %s, not a "
                        "regular file (nothing was replaced)", path, what);
    if (err == ENOMEM) /* an allocation of atomic_file.c, or the kernel's */
        return save_err(GAD_ERR_MEMORY, "cannot %s %.180s: %s", what, path,
                        strerror(err));
    return save_err(GAD_ERR_IO, "cannot %s %.180s: %s", what, path,
                    strerror(err));
}

const char *gad__tensor_name_problem(const char *s) {
    if (!s) return "is NULL";
    if (strcmp(s, "__metadata__") == 0)
        return "is reserved for the file's metadata";
    const unsigned char *p = (const unsigned char *)s;
    size_t avail = strlen(s);
    while (avail > 0) {
        size_t k = gad__utf8_seq(p, avail);
        if (!k) return "is not valid UTF-8";
        p += k;
        avail -= k;
    }
    return NULL;
}

static int cmp_cstr_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Append n bytes made of es-byte elements to w as little-endian: on a
 * big-endian host every element is byte-swapped on the way out, through a
 * buffer on the stack. */
static void write_le(gad_atomic_file *w, const unsigned char *p, size_t n,
                     size_t es) {
    if (host_is_le() || es == 1) {
        gad__atomic_file_write(w, p, n);
        return;
    }
    unsigned char buf[4096];
    while (n > 0 && !gad__atomic_file_error(w)) {
        size_t k = n < sizeof buf ? n : sizeof buf / es * es;
        memcpy(buf, p, k);
        swap_elems(buf, k, es);
        gad__atomic_file_write(w, buf, k);
        p += k;
        n -= k;
    }
}

/* n_meta (key, value) pairs in meta: NULLs, invalid UTF-8 and a key given
 * twice are domain errors. */
static gad_status check_meta(const char *const *meta, int n_meta) {
    if (n_meta < 0) return save_err(GAD_ERR_DOMAIN, "n_meta = %d is negative", n_meta);
    if (n_meta > 0 && !meta)
        return save_err(GAD_ERR_DOMAIN, "meta is NULL for n_meta = %d", n_meta);
    for (int i = 0; i < 2 * n_meta; i++) {
        const char *s = meta[i];
        const char *what = i % 2 ? "value" : "key";
        if (!s)
            return save_err(GAD_ERR_DOMAIN, "metadata %s %d is NULL", what, i / 2);
        const unsigned char *u = (const unsigned char *)s;
        size_t avail = strlen(s);
        while (avail > 0) {
            size_t k = gad__utf8_seq(u, avail);
            if (!k)
                return save_err(GAD_ERR_DOMAIN, "metadata %s %d is not valid UTF-8",
                                what, i / 2);
            u += k;
            avail -= k;
        }
    }
    for (int i = 0; i < n_meta; i++) /* few keys: quadratic is fine */
        for (int j = 0; j < i; j++)
            if (strcmp(meta[2 * i], meta[2 * j]) == 0)
                return save_err(GAD_ERR_DOMAIN, "duplicate metadata key '" NAME_SHOWN "'",
                                SHOWN(meta[2 * i]));
    return GAD_OK;
}

gad_status gad_save(const char *path, const char *const *names,
                    gad_tensor *const *tensors, int n) {
    return gad_save_meta(path, names, tensors, n, NULL, 0);
}

gad_status gad_save_meta(const char *path, const char *const *names,
                         gad_tensor *const *tensors, int n,
                         const char *const *meta, int n_meta) {
    if (!path || !*path)
        return save_err(GAD_ERR_DOMAIN, "path is %s", path ? "empty" : "NULL");
    if (n < 0) return save_err(GAD_ERR_DOMAIN, "n = %d is negative", n);
    if (n > 0 && (!names || !tensors))
        return save_err(GAD_ERR_DOMAIN, "%s is NULL for n = %d",
                        names ? "tensors" : "names", n);
    if (n > 0 && gad__any_released("save", n, (const gad_tensor *const *)tensors))
        return GAD_ERR_DOMAIN;
    gad_status mst = check_meta(meta, n_meta);
    if (mst != GAD_OK) return mst;

    /* ---- validate everything before touching the file system */
    for (int i = 0; i < n; i++) {
        const char *why = gad__tensor_name_problem(names[i]);
        if (why) /* the name itself is not shown: it may be NULL or not UTF-8 */
            return save_err(GAD_ERR_DOMAIN, "the name of tensor %d %s", i,
                            why);
        if (!tensors[i])
            return save_err(GAD_ERR_DOMAIN, "tensor '" NAME_SHOWN "' is NULL",
                            SHOWN(names[i]));
        if (!st_dtype_name(gad_dtype(tensors[i])))
            return save_err(GAD_ERR_DTYPE, "tensor '" NAME_SHOWN
                            "' has an invalid dtype", SHOWN(names[i]));
    }
    if (n > 1) {
        const char **sorted = gad_mem_alloc((size_t)n * sizeof *sorted);
        if (!sorted)
            return save_err(GAD_ERR_MEMORY, "cannot sort %d names", n);
        memcpy(sorted, names, (size_t)n * sizeof *sorted);
        qsort(sorted, (size_t)n, sizeof *sorted, cmp_cstr_ptr);
        for (int i = 1; i < n; i++)
            if (strcmp(sorted[i - 1], sorted[i]) == 0) {
                gad_status st = save_err(GAD_ERR_DOMAIN,
                                         "duplicate name '" NAME_SHOWN "'",
                                         SHOWN(sorted[i]));
                gad_mem_free(sorted);
                return st;
            }
        gad_mem_free(sorted);
    }

    /* ---- the header: tensors in the given order, data in the same order */
    gad_json_out h = {0};
    uint64_t off = 0;
    gad__json_puts(&h, "{");
    if (n_meta > 0) { /* first, as PyTorch's writer puts it */
        gad__json_puts(&h, "\"__metadata__\":{");
        for (int i = 0; i < n_meta; i++) {
            if (i) gad__json_puts(&h, ",");
            gad__json_put_string(&h, meta[2 * i]); /* checked: valid UTF-8 */
            gad__json_puts(&h, ":");
            gad__json_put_string(&h, meta[2 * i + 1]);
        }
        gad__json_puts(&h, n > 0 ? "}," : "}");
    }
    for (int i = 0; i < n; i++) {
        gad_tensor *t = tensors[i];
        uint64_t bytes = (uint64_t)gad_numel(t) * gad_dtype_size(gad_dtype(t));
        if (bytes > UINT64_MAX - off) {
            gad_mem_free(h.p);
            return save_err(GAD_ERR_DOMAIN, "the tensors hold too many bytes");
        }
        if (i) gad__json_puts(&h, ",");
        gad__json_put_string(&h, names[i]); /* checked: valid UTF-8 */
        gad__json_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[",
                         st_dtype_name(gad_dtype(t)));
        for (int d = 0; d < gad_rank(t); d++)
            gad__json_printf(&h, d ? ",%lld" : "%lld",
                             (long long)gad_shape(t)[d]);
        gad__json_printf(&h, "],\"data_offsets\":[%llu,",
                         (unsigned long long)off);
        off += bytes;
        gad__json_printf(&h, "%llu]}", (unsigned long long)off);
    }
    gad__json_puts(&h, "}");
    while (!h.oom && h.len % 8 != 0) gad__json_puts(&h, " ");
    if (h.oom) {
        gad_mem_free(h.p);
        return save_err(GAD_ERR_MEMORY, "cannot build the header");
    }
    if (h.len > HEADER_MAX) {
        gad_status st = save_err(GAD_ERR_UNSUPPORTED,
                                 "the header of %zu bytes exceeds the %llu "
                                 "bytes readers accept", h.len,
                                 (unsigned long long)HEADER_MAX);
        gad_mem_free(h.p);
        return st;
    }

    /* ---- the temporary file next to path */
    gad_atomic_file *w = gad__atomic_file_new(path);
    if (!w) {
        gad_mem_free(h.p);
        return save_err(GAD_ERR_MEMORY, "cannot allocate the write buffer");
    }
    const char *what;
    int err = gad__atomic_file_create(w, &what);
    if (err) {
        gad__atomic_file_discard(w);
        gad_mem_free(h.p);
        return save_io(what, path, err);
    }

    gad_status status = GAD_OK;
    unsigned char len8[8];
    store_le64(len8, (uint64_t)h.len);
    gad__atomic_file_write(w, len8, 8);
    gad__atomic_file_write(w, h.p, h.len);
    gad_mem_free(h.p);

    gad_no_grad_begin();
    for (int i = 0; i < n && !gad__atomic_file_error(w) && status == GAD_OK;
         i++) {
        gad_tensor *t = tensors[i];
        size_t es = gad_dtype_size(gad_dtype(t));
        size_t bytes = (size_t)gad_numel(t) * es;
        if (bytes == 0) continue;
        gad_scope_begin();
        /* a device tensor is copied to the host, one tensor at a time */
        gad_tensor *c = gad_contiguous(gad_to_device(t, GAD_CPU));
        const void *p = c ? gad_data(c) : NULL;
        if (p) write_le(w, p, bytes, es);
        else {
            const gad_error *e = gad_last_error();
            status = e ? e->kind : GAD_ERR_MEMORY;
            save_err(status, "cannot read tensor '" NAME_SHOWN "'",
                     SHOWN(names[i]));
        }
        gad_scope_end();
    }
    gad_no_grad_end();

    if (status != GAD_OK) {
        gad__atomic_file_discard(w);
        return status;
    }
    err = gad__atomic_file_commit(w, &what);
    if (err != 0) return save_io(what, path, err);
    return GAD_OK;
}

/* ======================================================================== */
/* The header parser (the format's grammar, on json.h's reader)              */
/* ======================================================================== */

typedef struct entry {
    char *name;
    int dt;       /* index into dtypes */
    int rank;     /* may exceed GAD_MAX_RANK (unsupported, reported later) */
    int64_t shape[GAD_MAX_RANK];
    bool zero;     /* some dim is 0 */
    bool overflow; /* the product of the dims overflows */
    uint64_t numel;
    uint64_t begin, end;
} entry;

/* The entries of a header, in its order. */
typedef struct entry_list {
    entry *v;
    size_t n, cap;
} entry_list;

/* The "__metadata__" pairs of a header, in its order: kv[2i] the key,
 * kv[2i + 1] the value. */
typedef struct meta_list {
    char **kv;
    size_t n, cap; /* pairs */
} meta_list;

static void free_meta(char **kv, size_t n) {
    for (size_t i = 0; i < 2 * n; i++) gad_mem_free(kv[i]);
    gad_mem_free(kv);
}

static char *copy_str(const char *s, size_t len) {
    char *c = gad_mem_alloc(len + 1);
    if (c) memcpy(c, s, len + 1);
    return c;
}

/* "__metadata__": an object of strings to strings. A value of another
 * type is a format error naming its key; so is a key given twice
 * (checked once the header is parsed, by sorting). */
static bool parse_metadata(gad_json *p, meta_list *m) {
    snprintf(p->ctx, sizeof p->ctx, "__metadata__");
    gad__json_skip_ws(p);
    if (gad__json_peek(p) != '{') {
        char b[32];
        return gad__json_fail(p, GAD_ERR_FORMAT, "expected an object of strings, found %s",
                              gad__json_here(p, b, sizeof b));
    }
    p->i++;
    gad__json_skip_ws(p);
    if (gad__json_peek(p) == '}') {
        p->i++;
        return true;
    }
    for (;;) {
        snprintf(p->ctx, sizeof p->ctx, "__metadata__");
        if (!gad__json_string(p, "a key") || !gad__json_expect(p, ':', "':'"))
            return false;
        if (m->n == m->cap) {
            size_t ncap = m->cap ? m->cap * 2 : 8;
            char **nk = gad_mem_realloc(m->kv, 2 * ncap * sizeof *nk);
            if (!nk) return gad__json_fail(p, GAD_ERR_MEMORY, "cannot allocate %zu pairs", ncap);
            m->kv = nk;
            m->cap = ncap;
        }
        char *key = copy_str(p->str, p->str_len);
        if (!key) return gad__json_fail(p, GAD_ERR_MEMORY, "cannot copy a metadata key");
        m->kv[2 * m->n] = key;
        m->kv[2 * m->n + 1] = NULL;
        m->n++;
        snprintf(p->ctx, sizeof p->ctx, "__metadata__ key '" NAME_SHOWN "'", SHOWN(key));
        gad__json_skip_ws(p);
        if (gad__json_peek(p) != '"') {
            char b[32];
            return gad__json_fail(p, GAD_ERR_FORMAT, "the value is not a string (found %s; "
                                  "metadata maps strings to strings)",
                                  gad__json_here(p, b, sizeof b));
        }
        if (!gad__json_string(p, "a metadata value")) return false;
        char *val = copy_str(p->str, p->str_len);
        if (!val) return gad__json_fail(p, GAD_ERR_MEMORY, "cannot copy a metadata value");
        m->kv[2 * m->n - 1] = val;
        gad__json_skip_ws(p);
        if (gad__json_peek(p) == ',') {
            p->i++;
            continue;
        }
        return gad__json_expect(p, '}', "',' or '}'");
    }
}

/* "[d0, d1, ...]" into e. */
static bool parse_shape(gad_json *p, entry *e) {
    if (!gad__json_expect(p, '[', "'[' (shape is an array of integers)"))
        return false;
    e->rank = 0;
    e->numel = 1;
    gad__json_skip_ws(p);
    if (gad__json_peek(p) == ']') {
        p->i++;
        return true;
    }
    for (;;) {
        bool neg;
        uint64_t d;
        if (!gad__json_int(p, "a dim", &neg, &d)) return false;
        if (neg && d != 0)
            return gad__json_fail(p, GAD_ERR_FORMAT, "negative dim -%llu",
                                  (unsigned long long)d);
        if (d > (uint64_t)INT64_MAX)
            return gad__json_fail(p, GAD_ERR_FORMAT, "dim %llu is too large",
                                  (unsigned long long)d);
        if (e->rank == INT_MAX)
            return gad__json_fail(p, GAD_ERR_FORMAT, "too many dims");
        if (e->rank < GAD_MAX_RANK) e->shape[e->rank] = (int64_t)d;
        e->rank++;
        if (d == 0) e->zero = true;
        else if (e->numel > UINT64_MAX / d) e->overflow = true;
        else if (!e->overflow) e->numel *= d;
        gad__json_skip_ws(p);
        if (gad__json_peek(p) == ',') {
            p->i++;
            continue;
        }
        return gad__json_expect(p, ']', "',' or ']'");
    }
}

static bool parse_offsets(gad_json *p, entry *e) {
    if (!gad__json_expect(p, '[', "'[' (data_offsets is [begin, end])"))
        return false;
    uint64_t v[2];
    for (int k = 0; k < 2; k++) {
        bool neg;
        if (k && !gad__json_expect(p, ',',
                                   "',' (data_offsets is [begin, end])"))
            return false;
        if (!gad__json_int(p, k ? "the end offset" : "the begin offset", &neg,
                           &v[k]))
            return false;
        if (neg && v[k] != 0)
            return gad__json_fail(p, GAD_ERR_FORMAT, "negative offset -%llu",
                                  (unsigned long long)v[k]);
    }
    if (!gad__json_expect(p, ']', "']' (data_offsets is [begin, end])"))
        return false;
    e->begin = v[0];
    e->end = v[1];
    return true;
}

/* {"dtype": .., "shape": [..], "data_offsets": [b, e]}; other fields are
 * checked for syntax and ignored. */
static bool parse_entry(gad_json *p, entry *e) {
    snprintf(p->ctx, sizeof p->ctx, "tensor '" NAME_SHOWN "'", SHOWN(e->name));
    gad__json_skip_ws(p);
    if (gad__json_peek(p) != '{') {
        char b[32];
        return gad__json_fail(p, GAD_ERR_FORMAT, "expected an object, found %s",
                              gad__json_here(p, b, sizeof b));
    }
    p->i++;
    unsigned have = 0;
    gad__json_skip_ws(p);
    if (gad__json_peek(p) == '}') p->i++;
    else
        for (;;) {
            if (!gad__json_string(p, "a field name") ||
                !gad__json_expect(p, ':', "':'"))
                return false;
            unsigned bit = strcmp(p->str, "dtype") == 0          ? 1u
                           : strcmp(p->str, "shape") == 0        ? 2u
                           : strcmp(p->str, "data_offsets") == 0 ? 4u
                                                                 : 0u;
            if (bit & have)
                return gad__json_fail(p, GAD_ERR_FORMAT,
                                      "duplicate field \"%s\"", SHOWN(p->str));
            have |= bit;
            if (bit == 1) {
                if (!gad__json_string(p, "dtype")) return false;
                e->dt = -1;
                for (int k = 0; k < N_DTYPES; k++)
                    if (strcmp(p->str, dtypes[k].name) == 0) e->dt = k;
                if (e->dt < 0)
                    return gad__json_fail(p, GAD_ERR_FORMAT,
                                          "unknown dtype \"%s\"",
                                          gad__json_shown((char[32]){0}, 32, p->str));
            } else if (bit == 2) {
                if (!parse_shape(p, e)) return false;
            } else if (bit == 4) {
                if (!parse_offsets(p, e)) return false;
            } else if (!gad__json_skip_value(p, 3))
                return false;
            gad__json_skip_ws(p);
            if (gad__json_peek(p) == ',') {
                p->i++;
                continue;
            }
            if (!gad__json_expect(p, '}', "',' or '}'")) return false;
            break;
        }
    if (have != 7)
        return gad__json_fail(p, GAD_ERR_FORMAT, "missing \"%s\"",
                              !(have & 1)   ? "dtype"
                              : !(have & 2) ? "shape"
                                            : "data_offsets");
    return true;
}

/* The whole header: one object, then only whitespace. Its tensor entries
 * go to ents. */
static bool parse_header(gad_json *p, entry_list *ents, meta_list *meta) {
    if (p->n == 0 || p->s[0] != '{') {
        char b[32];
        return gad__json_fail(p, GAD_ERR_FORMAT,
                              "the header is not a JSON object (it starts "
                              "with %s)", gad__json_here(p, b, sizeof b));
    }
    p->i = 1;
    bool seen_meta = false;
    gad__json_skip_ws(p);
    if (gad__json_peek(p) == '}') p->i++;
    else
        for (;;) {
            p->ctx[0] = 0;
            if (!gad__json_string(p, "a tensor name") ||
                !gad__json_expect(p, ':', "':'"))
                return false;
            if (strcmp(p->str, "__metadata__") == 0) {
                if (seen_meta)
                    return gad__json_fail(p, GAD_ERR_FORMAT,
                                          "duplicate \"__metadata__\"");
                seen_meta = true;
                if (!parse_metadata(p, meta)) return false;
            } else {
                if (ents->n == ents->cap) {
                    size_t ncap = ents->cap ? ents->cap * 2 : 16;
                    entry *ne = gad_mem_realloc(ents->v, ncap * sizeof *ne);
                    if (!ne)
                        return gad__json_fail(p, GAD_ERR_MEMORY,
                                              "cannot allocate %zu entries",
                                              ncap);
                    ents->v = ne;
                    ents->cap = ncap;
                }
                entry *e = &ents->v[ents->n];
                memset(e, 0, sizeof *e);
                e->name = gad_mem_alloc(p->str_len + 1);
                if (!e->name)
                    return gad__json_fail(p, GAD_ERR_MEMORY,
                                          "cannot copy a name");
                memcpy(e->name, p->str, p->str_len + 1);
                ents->n++;
                if (!parse_entry(p, e)) return false;
            }
            p->ctx[0] = 0;
            gad__json_skip_ws(p);
            if (gad__json_peek(p) == ',') {
                p->i++;
                continue;
            }
            if (!gad__json_expect(p, '}', "',' or '}'")) return false;
            break;
        }
    p->ctx[0] = 0;
    gad__json_skip_ws(p);
    if (p->i != p->n) {
        char b[32];
        return gad__json_fail(p, GAD_ERR_FORMAT,
                              "%s after the header object (only spaces may "
                              "pad it)", gad__json_here(p, b, sizeof b));
    }
    return true;
}

/* ======================================================================== */
/* Load                                                                      */
/* ======================================================================== */

/* A validated header and the file it came from, kept open: the tensors'
 * bytes are read by gad_checkpoint_get, each straight into its tensor. */
struct gad_checkpoint {
    int n;
    entry *ents;     /* header order */
    entry **byname;  /* sorted by name, for lookups */
    gad_read_file f; /* the file, open until gad_checkpoint_free */
    uint64_t data_at; /* where the data buffer starts in it: 8 + the header */
    char path[128];   /* the file's name as given (cut), for later errors */
    int n_meta;
    char **meta;      /* "__metadata__": key, value, key, value, ... (header order) */
    char ***meta_sorted; /* the pairs (&meta[2i]) sorted by key, for lookups */
};

static int cmp_pair_key(const void *a, const void *b) {
    return strcmp(**(char **const *)a, **(char **const *)b);
}

static void free_entries(entry *ents, size_t n) {
    for (size_t i = 0; i < n; i++) gad_mem_free(ents[i].name);
    gad_mem_free(ents);
}

void gad_checkpoint_free(gad_checkpoint *cp) {
    if (!cp) return;
    free_entries(cp->ents, (size_t)cp->n);
    gad_mem_free(cp->byname);
    free_meta(cp->meta, (size_t)cp->n_meta);
    gad_mem_free(cp->meta_sorted);
    gad__read_file_close(&cp->f);
    gad_mem_free(cp);
}

static int cmp_entry_name(const void *a, const void *b) {
    return strcmp((*(entry *const *)a)->name, (*(entry *const *)b)->name);
}

static int cmp_entry_offsets(const void *a, const void *b) {
    const entry *x = *(entry *const *)a, *y = *(entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* Check the entries against each other and the data size. Fills byname
 * (sorted by name). GAD_OK, or the kind with msg set. */
static gad_status validate(entry *ents, size_t n, uint64_t data_len,
                           entry **byname, char *msg, size_t cap) {
    /* 160 bytes, not GAD_SHAPE_FORMAT_CAP: the messages stay as they were,
     * where a shape of eight 19-digit dims is cut short. */
    char sb[160];
    if (n > (size_t)INT_MAX) {
        msgf(msg, cap, "%zu tensors are too many", n);
        return GAD_ERR_FORMAT;
    }
    for (size_t i = 0; i < n; i++) byname[i] = &ents[i];
    qsort(byname, n, sizeof *byname, cmp_entry_name);
    for (size_t i = 1; i < n; i++)
        if (strcmp(byname[i - 1]->name, byname[i]->name) == 0) {
            msgf(msg, cap, "duplicate tensor name '" NAME_SHOWN "'",
                     SHOWN(byname[i]->name));
            return GAD_ERR_FORMAT;
        }
    for (size_t i = 0; i < n; i++) {
        const entry *e = &ents[i];
        const dtype_info *dt = &dtypes[e->dt];
        gad_shape_format(sb, sizeof sb, e->shape, e->rank);
        uint64_t bits = 0;
        /* The product of the nonzero dims must fit even when a zero dim
         * makes the tensor empty, the tensor core's rule (INT64_MAX / 8
         * elements, src/core/shape.c), or the tensor could not be built. */
        bool big = e->overflow || e->numel > (uint64_t)INT64_MAX / 8 ||
                   e->numel > UINT64_MAX / dt->bits;
        if (!big && !e->zero) bits = e->numel * dt->bits;
        if (big) {
            msgf(msg, cap, "tensor '" NAME_SHOWN "': shape %s has too "
                     "many elements", SHOWN(e->name), sb);
            return GAD_ERR_FORMAT;
        }
        if (bits % 8 != 0) {
            msgf(msg, cap, "tensor '" NAME_SHOWN "': %s with shape %s "
                     "does not fill whole bytes", SHOWN(e->name), dt->name, sb);
            return GAD_ERR_FORMAT;
        }
        if (e->end < e->begin) {
            msgf(msg, cap, "tensor '" NAME_SHOWN "': data_offsets "
                     "[%llu, %llu] end before they begin", SHOWN(e->name),
                     (unsigned long long)e->begin, (unsigned long long)e->end);
            return GAD_ERR_FORMAT;
        }
        if (e->end > data_len) {
            msgf(msg, cap, "tensor '" NAME_SHOWN "': data_offsets "
                     "[%llu, %llu] run past the end of the data (%llu bytes)",
                     SHOWN(e->name), (unsigned long long)e->begin,
                     (unsigned long long)e->end, (unsigned long long)data_len);
            return GAD_ERR_FORMAT;
        }
        if (e->end - e->begin != bits / 8) {
            msgf(msg, cap, "tensor '" NAME_SHOWN "': data_offsets "
                     "[%llu, %llu] hold %llu bytes, but %s with shape %s "
                     "needs %llu", SHOWN(e->name), (unsigned long long)e->begin,
                     (unsigned long long)e->end,
                     (unsigned long long)(e->end - e->begin), dt->name, sb,
                     (unsigned long long)(bits / 8));
            return GAD_ERR_FORMAT;
        }
    }
    /* The reference implementation sorts the entries by offset and needs
     * them to tile the buffer; the header itself may list them in any
     * order. */
    entry **byoff = gad_mem_alloc((n ? n : 1) * sizeof *byoff);
    if (!byoff) {
        msgf(msg, cap, "cannot allocate %zu pointers", n);
        return GAD_ERR_MEMORY;
    }
    for (size_t i = 0; i < n; i++) byoff[i] = &ents[i];
    qsort(byoff, n, sizeof *byoff, cmp_entry_offsets);
    uint64_t at = 0;
    const entry *prev = NULL;
    gad_status st = GAD_OK;
    for (size_t i = 0; i < n && st == GAD_OK; i++) {
        const entry *e = byoff[i];
        if (e->begin < at) {
            msgf(msg, cap, "tensor '" NAME_SHOWN "' (data_offsets [%llu, "
                     "%llu]) overlaps tensor '" NAME_SHOWN "' (ending at %llu)",
                     SHOWN(e->name), (unsigned long long)e->begin,
                     (unsigned long long)e->end, SHOWN(prev->name),
                     (unsigned long long)at);
            st = GAD_ERR_FORMAT;
        } else if (e->begin > at) {
            msgf(msg, cap, "a gap of %llu bytes before tensor '" NAME_SHOWN
                     "' (data_offsets [%llu, %llu]; the data before ends at "
                     "%llu)", (unsigned long long)(e->begin - at), SHOWN(e->name),
                     (unsigned long long)e->begin, (unsigned long long)e->end,
                     (unsigned long long)at);
            st = GAD_ERR_FORMAT;
        }
        at = e->end;
        prev = e;
    }
    gad_mem_free(byoff);
    if (st != GAD_OK) return st;
    if (at != data_len) {
        msgf(msg, cap, "the tensors cover %llu of the %llu data bytes "
                 "(%llu bytes at the end belong to no tensor)",
                 (unsigned long long)at, (unsigned long long)data_len,
                 (unsigned long long)(data_len - at));
        return GAD_ERR_FORMAT;
    }
    return GAD_OK;
}

/* Whether gad can hold tensor e: GAD_OK, or unsupported with msg set. */
static gad_status representable(const entry *e, bool whole, char *msg, size_t cap) {
    if (dtypes[e->dt].gad == GAD_DTYPE_INVALID) {
        msgf(msg, cap, "tensor '" NAME_SHOWN "' has dtype %s, which gad cannot represent%s",
                 SHOWN(e->name), dtypes[e->dt].name,
                 whole ? " (gad_load_names reads the other tensors)" : "");
        return GAD_ERR_UNSUPPORTED;
    }
    if (e->rank > GAD_MAX_RANK) {
        msgf(msg, cap, "tensor '" NAME_SHOWN "' has rank %d; gad "
                 "supports ranks up to %d", SHOWN(e->name), e->rank,
                 GAD_MAX_RANK);
        return GAD_ERR_UNSUPPORTED;
    }
    return GAD_OK;
}

static void *load_err(gad_status kind, const char *path, const char *msg) {
    return gad_error_set(kind, "load", "%s (%.120s)", msg, path);
}

static void *load_io(const char *what, const char *path, int err) {
    if (err == GAD_READ_NOT_REGULAR) /* what says what path is */
        return gad_error_set(GAD_ERR_IO, "load", "cannot load %.180s: it is "
                             "%s, not a regular file", path, what);
    return gad_error_set(GAD_ERR_IO, "load", "cannot %s %.180s: %s", what,
                         path, err < 0 ? "the file ended early (did it change "
                                         "while being read?)"
                                       : strerror(err));
}

/* Load path's header; names (n of them), when not NULL, select the tensors
 * the checkpoint holds: the whole header is validated, but only those must
 * be representable. */
static gad_checkpoint *load_impl(const char *path, const char *const *names, int n) {
    gad_read_file f;
    const char *what;
    int err = gad__read_file_open(&f, path, &what);
    if (err) return load_io(what, path, err);

    gad_checkpoint *cp = NULL;
    gad_json p = {0};
    entry_list ents = {0};
    meta_list meta = {0};
    entry **byname = NULL;
    char ***msorted = NULL;
    unsigned char *hdr = NULL;
    char msg[320];
    uint64_t size = f.size;
    if (size < 8) {
        msgf(msg, sizeof msg, "the file has %llu bytes, fewer than the "
                 "8 of the header length", (unsigned long long)size);
        load_err(GAD_ERR_FORMAT, path, msg);
        goto done;
    }
    unsigned char len8[8];
    if ((err = gad__read_file_read(&f, len8, 8)) != 0) {
        load_io("read", path, err);
        goto done;
    }
    uint64_t hlen = load_le64(len8);
    if (hlen > size - 8) {
        msgf(msg, sizeof msg, "the header length %llu exceeds the %llu "
                 "bytes that follow it", (unsigned long long)hlen,
                 (unsigned long long)(size - 8));
        load_err(GAD_ERR_FORMAT, path, msg);
        goto done;
    }
    if (hlen > HEADER_MAX) {
        msgf(msg, sizeof msg, "the header length %llu exceeds the limit "
                 "of %llu bytes", (unsigned long long)hlen,
                 (unsigned long long)HEADER_MAX);
        load_err(GAD_ERR_FORMAT, path, msg);
        goto done;
    }
    uint64_t data_len = size - 8 - hlen;
    hdr = gad_mem_alloc(hlen ? (size_t)hlen : 1);
    if (!hdr) {
        load_err(GAD_ERR_MEMORY, path, "cannot allocate the header");
        goto done;
    }
    if ((err = gad__read_file_read(&f, hdr, (size_t)hlen)) != 0) {
        load_io("read", path, err);
        goto done;
    }

    p.s = hdr;
    p.n = (size_t)hlen;
    if (!parse_header(&p, &ents, &meta)) {
        load_err(p.kind, path, p.msg);
        goto done;
    }
    if (meta.n > (size_t)INT_MAX) {
        load_err(GAD_ERR_FORMAT, path, "__metadata__ holds too many keys");
        goto done;
    }
    msorted = gad_mem_alloc((meta.n ? meta.n : 1) * sizeof *msorted);
    if (!msorted) {
        load_err(GAD_ERR_MEMORY, path, "cannot allocate the metadata index");
        goto done;
    }
    for (size_t i = 0; i < meta.n; i++) msorted[i] = &meta.kv[2 * i];
    qsort(msorted, meta.n, sizeof *msorted, cmp_pair_key);
    for (size_t i = 1; i < meta.n; i++)
        if (strcmp(*msorted[i - 1], *msorted[i]) == 0) {
            msgf(msg, sizeof msg, "__metadata__: duplicate key '" NAME_SHOWN "'",
                 SHOWN(*msorted[i]));
            load_err(GAD_ERR_FORMAT, path, msg);
            goto done;
        }
    byname = gad_mem_alloc((ents.n ? ents.n : 1) * sizeof *byname);
    if (!byname) {
        load_err(GAD_ERR_MEMORY, path, "cannot allocate the name index");
        goto done;
    }
    gad_status vs = validate(ents.v, ents.n, data_len, byname, msg,
                             sizeof msg);
    if (vs != GAD_OK) {
        load_err(vs, path, msg);
        goto done;
    }
    if (!names) {
        for (size_t i = 0; i < ents.n && vs == GAD_OK; i++)
            vs = representable(&ents.v[i], true, msg, sizeof msg);
        if (vs != GAD_OK) {
            load_err(vs, path, msg);
            goto done;
        }
    } else {
        /* Keep the named entries (in header order): mark them through the
         * name index, then compact. */
        bool *keep = gad_mem_alloc(ents.n ? ents.n : 1);
        if (!keep) {
            load_err(GAD_ERR_MEMORY, path, "cannot allocate the selection");
            goto done;
        }
        memset(keep, 0, ents.n ? ents.n : 1);
        for (int k = 0; k < n && vs == GAD_OK; k++) {
            if (!names[k]) {
                msgf(msg, sizeof msg, "names[%d] is NULL", k);
                vs = GAD_ERR_DOMAIN;
                break;
            }
            size_t lo = 0, hi = ents.n;
            entry *e = NULL;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(names[k], byname[mid]->name);
                if (c == 0) {
                    e = byname[mid];
                    break;
                }
                if (c < 0) hi = mid;
                else lo = mid + 1;
            }
            if (!e) {
                msgf(msg, sizeof msg, "no tensor named '" NAME_SHOWN "' among the %zu in "
                     "the file", SHOWN(names[k]), ents.n);
                vs = GAD_ERR_INDEX;
            } else if (keep[e - ents.v]) {
                msgf(msg, sizeof msg, "'" NAME_SHOWN "' is named twice", SHOWN(names[k]));
                vs = GAD_ERR_DOMAIN;
            } else {
                keep[e - ents.v] = true;
                vs = representable(e, false, msg, sizeof msg);
            }
        }
        if (vs != GAD_OK) {
            gad_mem_free(keep);
            load_err(vs, path, msg);
            goto done;
        }
        size_t m = 0;
        for (size_t i = 0; i < ents.n; i++) {
            if (keep[i]) ents.v[m++] = ents.v[i];
            else gad_mem_free(ents.v[i].name);
        }
        gad_mem_free(keep);
        ents.n = m;
        for (size_t i = 0; i < m; i++) byname[i] = &ents.v[i];
        qsort(byname, m, sizeof *byname, cmp_entry_name);
    }

    /* Every tensor lies inside the file's real size (validate); its bytes
     * are read when it is asked for. */
    cp = gad_mem_alloc(sizeof *cp);
    if (!cp) {
        load_err(GAD_ERR_MEMORY, path, "cannot allocate the checkpoint");
        goto done;
    }
    cp->n = (int)ents.n;
    cp->ents = ents.v;
    cp->byname = byname;
    cp->f = f;
    cp->data_at = 8 + hlen;
    snprintf(cp->path, sizeof cp->path, "%s", path);
    cp->n_meta = (int)meta.n;
    cp->meta = meta.kv;
    cp->meta_sorted = msorted;
    f.fd = -1; /* the checkpoint's now */
    ents.v = NULL;
    ents.n = 0;
    byname = NULL;
    meta.kv = NULL;
    meta.n = 0;
    msorted = NULL;
done:
    gad__read_file_close(&f);
    gad_mem_free(hdr);
    gad__json_free(&p);
    free_entries(ents.v, ents.n);
    free_meta(meta.kv, meta.n);
    gad_mem_free(msorted);
    gad_mem_free(byname);
    return cp;
}

gad_checkpoint *gad_load(const char *path) {
    if (!path) return gad_error_set(GAD_ERR_DOMAIN, "load", "path is NULL");
    return load_impl(path, NULL, 0);
}

gad_checkpoint *gad_load_names(const char *path, const char *const *names, int n) {
    if (!path) return gad_error_set(GAD_ERR_DOMAIN, "load_names", "path is NULL");
    if (n < 0) return gad_error_set(GAD_ERR_DOMAIN, "load_names", "n = %d is negative", n);
    if (n > 0 && !names)
        return gad_error_set(GAD_ERR_DOMAIN, "load_names", "names is NULL for n = %d", n);
    static const char *const none[1] = {NULL};
    return load_impl(path, n ? names : none, n);
}

int gad_checkpoint_meta_count(const gad_checkpoint *cp) { return cp ? cp->n_meta : 0; }

const char *gad_checkpoint_meta_key(const gad_checkpoint *cp, int i) {
    if (!cp) return gad_error_set(GAD_ERR_DOMAIN, "checkpoint_meta_key", "checkpoint is NULL");
    if (i < 0 || i >= cp->n_meta)
        return gad_error_set(GAD_ERR_INDEX, "checkpoint_meta_key",
                             "index %d outside [0, %d)", i, cp->n_meta);
    return cp->meta[2 * i];
}

const char *gad_checkpoint_meta(const gad_checkpoint *cp, const char *key) {
    if (!cp || !key)
        return gad_error_set(GAD_ERR_DOMAIN, "checkpoint_meta", "%s is NULL",
                             cp ? "key" : "checkpoint");
    size_t lo = 0, hi = (size_t)cp->n_meta;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key, cp->meta_sorted[mid][0]);
        if (c == 0) return cp->meta_sorted[mid][1]; /* the value follows its key */
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

int gad_checkpoint_count(const gad_checkpoint *cp) { return cp ? cp->n : 0; }

const char *gad_checkpoint_name(const gad_checkpoint *cp, int i) {
    if (!cp) return gad_error_set(GAD_ERR_DOMAIN, "checkpoint_name", "checkpoint is NULL");
    if (i < 0 || i >= cp->n)
        return gad_error_set(GAD_ERR_INDEX, "checkpoint_name",
                             "index %d outside [0, %d)", i, cp->n);
    return cp->ents[i].name;
}

gad_tensor *gad_checkpoint_get_on(const gad_checkpoint *cp, const char *name, gad_device dev) {
    if (gad_device_type_of(dev) < 0)
        return gad_error_set(GAD_ERR_DEVICE, "checkpoint_get_on", "%d names no device", dev);
    gad_scope_begin();
    gad_tensor *t = gad_checkpoint_get(cp, name);
    gad_tensor *y = t ? gad_keep(gad_to_device(t, dev)) : NULL;
    gad_scope_end();
    return y;
}

static void read_failed(const gad_checkpoint *cp, const entry *e, int err) {
    gad_error_set(GAD_ERR_IO, "checkpoint_get",
                  "cannot read tensor '" NAME_SHOWN "' from the "
                  "checkpoint's file: %s", SHOWN(e->name),
                  err < 0 ? "the file ended early (was it changed "
                            "in place after gad_load?)"
                          : strerror(err));
    (void)cp;
}

/* Read tensor e of a dtype gad widens or decodes (fi->conv) into dst, of
 * fi->gad, through a buffer of whole elements: 0, or -1 with the error
 * set (io, or a U64 value past INT64_MAX). */
static int read_converted(const gad_checkpoint *cp, const entry *e, const dtype_info *fi,
                          void *dst) {
    unsigned char buf[16384];
    size_t fes = fi->bits / 8; /* the file's element size: 1, 2, 4 or 8 */
    uint64_t total = e->numel, done = 0;
    while (done < total) {
        size_t k = sizeof buf / fes;
        if ((uint64_t)k > total - done) k = (size_t)(total - done);
        int err = gad__read_file_pread(&cp->f, buf, k * fes, cp->data_at + e->begin + done * fes);
        if (err) {
            read_failed(cp, e, err);
            return -1;
        }
        if (!host_is_le()) swap_elems(buf, k * fes, fes);
        for (size_t i = 0; i < k; i++) {
            const unsigned char *q = buf + i * fes;
            uint64_t j = done + i;
            switch (fi->conv) {
            case CV_I8: ((int32_t *)dst)[j] = (int8_t)q[0]; break;
            case CV_I16: {
                int16_t v;
                memcpy(&v, q, 2);
                ((int32_t *)dst)[j] = v;
                break;
            }
            case CV_U16: {
                uint16_t v;
                memcpy(&v, q, 2);
                ((int32_t *)dst)[j] = v;
                break;
            }
            case CV_U32: {
                uint32_t v;
                memcpy(&v, q, 4);
                ((int64_t *)dst)[j] = v;
                break;
            }
            case CV_U64: {
                uint64_t v;
                memcpy(&v, q, 8);
                if (v > (uint64_t)INT64_MAX) {
                    gad_error_set(GAD_ERR_UNSUPPORTED, "checkpoint_get",
                                  "tensor '" NAME_SHOWN "' (U64, read as i64) holds %llu at "
                                  "element %llu, past INT64_MAX (%s)", SHOWN(e->name),
                                  (unsigned long long)v, (unsigned long long)j, cp->path);
                    return -1;
                }
                ((int64_t *)dst)[j] = (int64_t)v;
                break;
            }
            case CV_E4M3: ((float *)dst)[j] = e4m3_to_f32(q[0]); break;
            case CV_E5M2: ((float *)dst)[j] = e5m2_to_f32(q[0]); break;
            default: break;
            }
        }
        done += k;
    }
    return 0;
}

gad_tensor *gad_checkpoint_get(const gad_checkpoint *cp, const char *name) {
    if (!cp || !name)
        return gad_error_set(GAD_ERR_DOMAIN, "checkpoint_get", "%s is NULL",
                             cp ? "name" : "checkpoint");
    size_t lo = 0, hi = (size_t)cp->n;
    const entry *e = NULL;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, cp->byname[mid]->name);
        if (c == 0) {
            e = cp->byname[mid];
            break;
        }
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    if (!e)
        return gad_error_set(GAD_ERR_INDEX, "checkpoint_get",
                             "no tensor named '" NAME_SHOWN "' among the %d "
                             "in the checkpoint", SHOWN(name), cp->n);
    const dtype_info *fi = &dtypes[e->dt];
    gad_dtype_t dt = fi->gad;
    size_t es = gad_dtype_size(dt);
    /* in gad's dtype (the file's is e->end - e->begin); no overflow:
     * numel <= INT64_MAX / 8 (validate) */
    uint64_t bytes = e->zero ? 0 : e->numel * es;
    if (bytes > (uint64_t)SIZE_MAX)
        return gad_error_set(GAD_ERR_MEMORY, "checkpoint_get",
                             "tensor '" NAME_SHOWN "' holds %llu elements, more "
                             "than memory can address", SHOWN(name),
                             (unsigned long long)e->numel);
    /* A tensor of the shape, then its bytes read straight into it (or, for
     * a dtype converted on the way, through a small buffer): nothing else
     * of the size is allocated. */
    const gad_error *pending = gad_last_error();
    gad_scope_begin();
    gad_device was = gad_set_default_device(GAD_CPU); /* loads land on the host */
    gad_tensor *t = gad_zeros(e->shape, e->rank, dt);
    gad_set_default_device(was);
    void *dst = t && bytes ? gad_data_mut(t) : NULL;
    if (!t || (bytes && !dst)) {
        if (!pending) { /* name the tensor and this op, not zeros */
            gad_clear_error();
            gad_error_set(GAD_ERR_MEMORY, "checkpoint_get",
                          "cannot allocate %llu bytes for tensor '"
                          NAME_SHOWN "'", (unsigned long long)bytes, SHOWN(name));
        }
        gad_scope_end();
        return NULL;
    }
    if (bytes && fi->conv != CV_NONE) {
        if (read_converted(cp, e, fi, dst) != 0) {
            gad_scope_end();
            return NULL;
        }
    } else if (bytes) {
        int err = gad__read_file_pread(&cp->f, dst, (size_t)bytes,
                                       cp->data_at + e->begin);
        if (err) {
            read_failed(cp, e, err);
            gad_scope_end();
            return NULL;
        }
        if (!host_is_le()) swap_elems(dst, (size_t)bytes, es);
        if (dt == GAD_BOOL) { /* a byte other than 0 or 1 is no bool */
            const unsigned char *b = dst;
            for (uint64_t i = 0; i < bytes; i++) {
                if (b[i] <= 1) continue;
                gad_error_set(GAD_ERR_FORMAT, "checkpoint_get",
                              "tensor '" NAME_SHOWN "' (BOOL) holds byte %u at element "
                              "%llu; a BOOL is 0 or 1 (%s)",
                              SHOWN(name), b[i], (unsigned long long)i, cp->path);
                gad_scope_end();
                return NULL;
            }
        }
    }
    gad_keep(t);
    gad_scope_end();
    return t;
}
