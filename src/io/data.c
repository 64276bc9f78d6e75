/* data.c: data for training (gad.h, "Data"): whole files read into memory,
 * plain or gzip; CSV files of numbers as tensors; a seeded, shuffled
 * minibatch sampler. Written on the public API only (DESIGN §1), over the
 * file reading of atomic_file.h, like safetensors.c.
 *
 * Files are hostile. A file is opened only when it is a regular file
 * (atomic_file.c refuses a FIFO, socket, directory or device without
 * opening it, so nothing blocks). A plain file's size is known before
 * anything is allocated and is checked against the caller's limit; a
 * gzip file (RFC 1952, found by its magic bytes 1f 8b, never by its name)
 * is inflated into a buffer that grows by doubling up to the limit and no
 * further, so that a gzip bomb costs at most the limit. zlib's own state
 * is allocated through gad's allocator too. Counts are size_t and bounded
 * by the bytes read, so they cannot overflow; the CSV parser copies each
 * field into a bounded buffer before strtod reads it (strtod needs a NUL
 * and would read past the field otherwise). */
#include "gad.h"

#include "atomic_file.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GAD_HAVE_ZLIB
#include <zlib.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
#define DATA_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define DATA_PRINTF(f, a)
#endif

/* A path as messages show it: its first 120 bytes. */
#define PATH_FMT "%.120s"

int gad_zlib_available(void) {
#ifdef GAD_HAVE_ZLIB
    return 1;
#else
    return 0;
#endif
}

/* ======================================================================== */
/* Whole files                                                               */
/* ======================================================================== */

static gad_status io_err(const char *op, const char *what, const char *path, int err) {
    if (err == GAD_READ_NOT_REGULAR) /* what says what path is */
        gad_error_set(GAD_ERR_IO, op, "cannot read " PATH_FMT ": it is %s, not a regular file",
                      path, what);
    else
        gad_error_set(GAD_ERR_IO, op, "cannot %s " PATH_FMT ": %s", what, path,
                      err < 0 ? "the file ended early (did it change while being read?)"
                              : strerror(err));
    return GAD_ERR_IO;
}

static gad_status too_big(const char *op, const char *path, size_t max, const char *how) {
    gad_error_set(GAD_ERR_FORMAT, op, PATH_FMT " %s more than the limit of %zu bytes "
                  "(max_bytes)", path, how, max);
    return GAD_ERR_FORMAT;
}

#ifdef GAD_HAVE_ZLIB
/* zlib's allocations go through gad's allocator (gad_set_allocator). */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
    (void)opaque;
    if (size && items > SIZE_MAX / size) return Z_NULL;
    return gad_mem_alloc((size_t)items * size);
}

static void z_free(voidpf opaque, voidpf p) {
    (void)opaque;
    gad_mem_free(p);
}

#define ZCHUNK ((size_t)1 << 16) /* compressed bytes read at a time */

/* Inflate every gzip member of f (whose first two bytes, 1f 8b, are in
 * magic) into a new buffer of at most max bytes (and a NUL). */
static gad_status inflate_file(const char *op, const char *path, gad_read_file *f,
                               size_t max, unsigned char **out, size_t *nout) {
    gad_status st = GAD_OK;
    unsigned char *in = gad_mem_alloc(ZCHUNK), *buf = NULL;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    zs.zalloc = z_alloc;
    zs.zfree = z_free;
    bool live = false;
    if (!in) goto nomem;
    int zr = inflateInit2(&zs, 16 + MAX_WBITS); /* gzip framing only */
    if (zr != Z_OK) {
        if (zr == Z_MEM_ERROR) goto nomem;
        gad_error_set(GAD_ERR_UNSUPPORTED, op, "zlib cannot start for " PATH_FMT ": %s",
                      path, zs.msg ? zs.msg : "inflateInit2 failed");
        st = GAD_ERR_UNSUPPORTED;
        goto done;
    }
    live = true;
    /* the output: a first guess of 4x the input, at most max + 1 bytes
     * (the + 1 tells "exactly max" from "more") plus the NUL */
    uint64_t left = f->size - 2; /* compressed bytes not yet read */
    size_t cap = f->size < (max + 1) / 4 ? (size_t)f->size * 4 : max + 1;
    if (cap < 4096) cap = max + 1 < 4096 ? max + 1 : 4096;
    buf = gad_mem_alloc(cap + 1);
    if (!buf) goto nomem;
    in[0] = 0x1f, in[1] = 0x8b;
    zs.next_in = in;
    zs.avail_in = 2;
    uint64_t fed = 2; /* compressed bytes handed to zs so far */
    size_t made = 0;
    for (;;) {
        if (zs.avail_in == 0 && left > 0) {
            size_t k = left < ZCHUNK ? (size_t)left : ZCHUNK;
            int err = gad__read_file_read(f, in, k);
            if (err) {
                st = io_err(op, "read", path, err);
                goto done;
            }
            left -= k, fed += k;
            zs.next_in = in;
            zs.avail_in = (uInt)k;
        }
        if (made == cap) { /* full: grow, up to max + 1 */
            if (cap == max + 1) {
                st = too_big(op, path, max, "inflates to");
                goto done;
            }
            /* doubling, or the whole limit at once when the doubling
             * after this one would pass it: growing costs the old and the
             * new buffer at once (gad's allocator has no realloc), so the
             * peak stays under 1.5 times the limit */
            size_t ncap = cap <= (max + 1) / 4 ? cap * 2 : max + 1;
            unsigned char *nb = gad_mem_realloc(buf, ncap + 1);
            if (!nb) goto nomem;
            buf = nb, cap = ncap;
        }
        zs.next_out = buf + made;
        zs.avail_out = (uInt)(cap - made < UINT32_MAX ? cap - made : UINT32_MAX);
        uInt room = zs.avail_out;
        zr = inflate(&zs, Z_NO_FLUSH);
        made += room - zs.avail_out;
        uint64_t at = fed - zs.avail_in; /* compressed offset reached */
        if (zr == Z_OK) continue;
        if (zr == Z_STREAM_END) {
            /* another member, or the end; a lone trailing byte is read on */
            if (zs.avail_in < 2 && left > 0) {
                memmove(in, zs.next_in, zs.avail_in);
                size_t k = left < ZCHUNK - zs.avail_in ? (size_t)left : ZCHUNK - zs.avail_in;
                int err = gad__read_file_read(f, in + zs.avail_in, k);
                if (err) {
                    st = io_err(op, "read", path, err);
                    goto done;
                }
                left -= k, fed += k;
                zs.next_in = in;
                zs.avail_in += (uInt)k;
            }
            if (zs.avail_in == 0) break;
            if (zs.avail_in >= 2 && zs.next_in[0] == 0x1f && zs.next_in[1] == 0x8b) {
                inflateReset(&zs);
                continue;
            }
            gad_error_set(GAD_ERR_FORMAT, op, PATH_FMT ": %llu bytes after the gzip "
                          "stream, at byte %llu, are not another gzip member", path,
                          (unsigned long long)(zs.avail_in + left), (unsigned long long)at);
            st = GAD_ERR_FORMAT;
            goto done;
        }
        if (zr == Z_BUF_ERROR && zs.avail_out > 0) { /* no input left */
            gad_error_set(GAD_ERR_FORMAT, op, PATH_FMT " is truncated: its gzip stream "
                          "ends early, at byte %llu", path, (unsigned long long)at);
            st = GAD_ERR_FORMAT;
            goto done;
        }
        if (zr == Z_BUF_ERROR) continue; /* output full: grown above */
        if (zr == Z_MEM_ERROR) goto nomem;
        gad_error_set(GAD_ERR_FORMAT, op, PATH_FMT " is not a valid gzip file: %s near "
                      "byte %llu", path, zs.msg ? zs.msg : "a corrupt stream",
                      (unsigned long long)at);
        st = GAD_ERR_FORMAT;
        goto done;
    }
    if (made > max) { /* the last member ended just past the limit */
        st = too_big(op, path, max, "inflates to");
        goto done;
    }
    buf[made] = 0;
    *out = buf, *nout = made;
    buf = NULL;
    goto done;
nomem:
    gad_error_set(GAD_ERR_MEMORY, op, "cannot allocate memory to inflate " PATH_FMT, path);
    st = GAD_ERR_MEMORY;
done:
    if (live) inflateEnd(&zs);
    gad_mem_free(in);
    gad_mem_free(buf);
    return st;
}
#endif

/* gad_read_bytes under the name of op ("read_bytes", "read_csv"). */
static gad_status read_whole(const char *op, const char *path, size_t max,
                             unsigned char **data, size_t *n) {
    if (data) *data = NULL;
    if (n) *n = 0;
    if (!path || !data || !n) {
        gad_error_set(GAD_ERR_DOMAIN, op, "%s is NULL", !path ? "path" : !data ? "data" : "n");
        return GAD_ERR_DOMAIN;
    }
    if (max == 0) max = GAD_READ_MAX_DEFAULT;
    if (max >= SIZE_MAX - 1) max = SIZE_MAX - 2; /* room for + 1 and the NUL */
    gad_read_file f;
    const char *what;
    int err = gad__read_file_open(&f, path, &what);
    if (err) return io_err(op, what, path, err);
    gad_status st = GAD_OK;
    unsigned char magic[2] = {0, 0};
    if (f.size >= 2 && (err = gad__read_file_read(&f, magic, 2)) != 0) {
        st = io_err(op, "read", path, err);
        goto done;
    }
    if (magic[0] == 0x1f && magic[1] == 0x8b) {
#ifdef GAD_HAVE_ZLIB
        st = inflate_file(op, path, &f, max, data, n);
#else
        gad_error_set(GAD_ERR_UNSUPPORTED, op, PATH_FMT " is gzip-compressed (it starts "
                      "with 1f 8b), and this gad was built without zlib: decompress it, "
                      "or rebuild gad with zlib (zlib1g-dev)", path);
        st = GAD_ERR_UNSUPPORTED;
#endif
        goto done;
    }
    if (f.size > max) {
        st = too_big(op, path, max, "holds");
        goto done;
    }
    size_t size = (size_t)f.size, got = size >= 2 ? 2 : 0;
    unsigned char *buf = gad_mem_alloc(size + 1);
    if (!buf) {
        gad_error_set(GAD_ERR_MEMORY, op, "cannot allocate %zu bytes for " PATH_FMT,
                      size + 1, path);
        st = GAD_ERR_MEMORY;
        goto done;
    }
    memcpy(buf, magic, got);
    if ((err = gad__read_file_read(&f, buf + got, size - got)) != 0) {
        gad_mem_free(buf);
        st = io_err(op, "read", path, err);
        goto done;
    }
    buf[size] = 0;
    *data = buf, *n = size;
done:
    gad__read_file_close(&f);
    return st;
}

gad_status gad_read_bytes(const char *path, size_t max_bytes, unsigned char **data,
                         size_t *n) {
    return read_whole("read_bytes", path, max_bytes, data, n);
}

/* ======================================================================== */
/* CSV                                                                       */
/* ======================================================================== */

#define FIELD_MAX 256 /* the longest field read as a number */

/* s[0..n) quoted for a message, unprintable bytes as \xNN, cut at ~40. */
static const char *shown(char *out, size_t cap, const unsigned char *s, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < cap; i++) {
        if (o > 40) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x7f && c != '\'')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
    }
    out[o] = 0;
    return out;
}

typedef struct csv {
    const char *path;
    gad_dtype_t dtype;
    void *v; /* float or double values, row-major */
    size_t n, cap;
} csv;

static void *csv_err(const csv *c, const char *fmt, ...) DATA_PRINTF(2, 3);
static void *csv_err(const csv *c, const char *fmt, ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gad_error_set(GAD_ERR_FORMAT, "read_csv", PATH_FMT ": %s", c->path, msg);
}

static bool is_blank(unsigned char ch) { return ch == ' ' || ch == '\t'; }

/* Parse s[0..n) (one field, untrimmed) and append its value; false with
 * the error recorded. */
static bool csv_field(csv *c, const unsigned char *s, size_t n, size_t line, size_t col) {
    while (n && is_blank(*s)) s++, n--;
    while (n && is_blank(s[n - 1])) n--;
    char q[64];
    if (n == 0) {
        csv_err(c, "line %zu, column %zu: an empty field", line, col);
        return false;
    }
    if (n > FIELD_MAX) {
        csv_err(c, "line %zu, column %zu: a field of %zu characters (at most %d) '%s'",
                line, col, n, FIELD_MAX, shown(q, sizeof q, s, n));
        return false;
    }
    char tmp[FIELD_MAX + 1];
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *end;
    errno = 0;
    double d = 0;
    float f = 0;
    if (c->dtype == GAD_F32)
        f = strtof(tmp, &end);
    else
        d = strtod(tmp, &end);
    if (end != tmp + n) {
        csv_err(c, "line %zu, column %zu: '%s' is not a number", line, col,
                shown(q, sizeof q, s, n));
        return false;
    }
    /* overflow is an error; underflow (to a subnormal or 0) is not */
    if (errno == ERANGE && (c->dtype == GAD_F32 ? isinf(f) : isinf(d))) {
        csv_err(c, "line %zu, column %zu: '%s' is out of the range of %s", line, col,
                shown(q, sizeof q, s, n), gad_dtype_name(c->dtype));
        return false;
    }
    size_t es = gad_dtype_size(c->dtype);
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 1024;
        void *nv = ncap <= SIZE_MAX / es ? gad_mem_realloc(c->v, ncap * es) : NULL;
        if (!nv) {
            gad_error_set(GAD_ERR_MEMORY, "read_csv", "cannot allocate %zu values for "
                          PATH_FMT, ncap, c->path);
            return false;
        }
        c->v = nv, c->cap = ncap;
    }
    if (c->dtype == GAD_F32)
        ((float *)c->v)[c->n++] = f;
    else
        ((double *)c->v)[c->n++] = d;
    return true;
}

/* The rows of buf[0..n) into c: the number of rows, and of columns in
 * *ncols; false with the error recorded. */
static bool csv_parse(csv *c, const unsigned char *buf, size_t n, int header, char delim,
                      size_t *nrows, size_t *ncols) {
    size_t pos = 0, line = 1, rows = 0, cols = 0, first = 0;
    if (header) {
        const unsigned char *e = memchr(buf, '\n', n);
        pos = e ? (size_t)(e - buf) + 1 : n;
        line = 2;
    }
    for (; pos < n; line++) {
        const unsigned char *e = memchr(buf + pos, '\n', n - pos);
        size_t end = e ? (size_t)(e - buf) : n, next = e ? end + 1 : n;
        if (end > pos && buf[end - 1] == '\r') end--;
        size_t k = pos;
        while (k < end && is_blank(buf[k])) k++;
        if (k == end) { /* an empty line */
            pos = next;
            continue;
        }
        size_t col = 0;
        for (size_t p = pos;;) {
            const unsigned char *d = memchr(buf + p, (unsigned char)delim, end - p);
            size_t fe = d ? (size_t)(d - buf) : end;
            col++;
            if (rows > 0 && col > cols) {
                csv_err(c, "line %zu has more fields than the %zu of line %zu", line, cols,
                        first);
                return false;
            }
            if (!csv_field(c, buf + p, fe - p, line, col)) return false;
            if (!d) break;
            p = fe + 1;
        }
        if (rows == 0) {
            cols = col, first = line;
        } else if (col != cols) {
            csv_err(c, "line %zu has %zu field%s, line %zu has %zu", line, col,
                    col == 1 ? "" : "s", first, cols);
            return false;
        }
        rows++;
        pos = next;
    }
    if (rows == 0) {
        csv_err(c, "no rows of numbers (%s)", n == 0 ? "the file is empty"
                                               : header ? "only a header or empty lines"
                                                        : "only empty lines");
        return false;
    }
    *nrows = rows, *ncols = cols;
    return true;
}

gad_tensor *gad_read_csv(const char *path, const gad_csv_opts *opts) {
    const char *op = "read_csv";
    gad_csv_opts o = opts ? *opts : (gad_csv_opts){0};
    char delim = o.delimiter ? o.delimiter : ',';
    if (o.dtype != GAD_F32 && o.dtype != GAD_F64)
        return gad_error_set(GAD_ERR_DOMAIN, op, "dtype must be f32 or f64, got %s",
                             gad_dtype_name(o.dtype));
    if (strchr("0123456789+-.eE \r\n", delim))
        return gad_error_set(GAD_ERR_DOMAIN, op, "the delimiter '\\x%02x' can be part of "
                             "a number or a line", (unsigned char)delim);
    if (!path) return gad_error_set(GAD_ERR_DOMAIN, op, "path is NULL");
    unsigned char *buf;
    size_t n;
    if (read_whole(op, path, o.max_bytes, &buf, &n) != GAD_OK) return NULL;
    /* numbers in the "C" locale, whatever the program set (setlocale
     * could make ',' the decimal point); for this thread only */
    locale_t cl = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t old = cl ? uselocale(cl) : (locale_t)0;
    csv c = {.path = path, .dtype = o.dtype};
    size_t rows = 0, cols = 0;
    bool ok = csv_parse(&c, buf, n, o.header, delim, &rows, &cols);
    if (cl) {
        uselocale(old);
        freelocale(cl);
    }
    gad_mem_free(buf);
    gad_tensor *t = NULL;
    if (ok) {
        /* rows * cols = c.n values, each of at least one byte of the file */
        int64_t shape[2] = {(int64_t)rows, (int64_t)cols};
        t = o.dtype == GAD_F32 ? gad_from_f32(c.v, shape, 2) : gad_from_f64(c.v, shape, 2);
    }
    gad_mem_free(c.v);
    return t;
}

/* ======================================================================== */
/* The minibatch sampler                                                     */
/* ======================================================================== */

struct gad_sampler {
    int64_t n, batch, nb;   /* examples, batch size, batches per epoch */
    int64_t epoch, next;    /* the epoch served, its batches given */
    uint64_t seed;
    int sequential;
    int64_t built;          /* the epoch perm holds, -1: none */
    int64_t *perm;          /* n example numbers */
    gad_rng *rng;
};

uint64_t gad_sampler_epoch_seed(uint64_t seed, int64_t epoch) {
    uint64_t z = seed + ((uint64_t)epoch + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

gad_sampler *gad_sampler_new(int64_t n, int64_t batch, uint64_t seed,
                             const gad_sampler_opts *opts) {
    const char *op = "sampler_new";
    if (n < 0) return gad_error_set(GAD_ERR_DOMAIN, op, "n = %lld is negative", (long long)n);
    if (batch < 1)
        return gad_error_set(GAD_ERR_DOMAIN, op, "batch = %lld must be at least 1",
                             (long long)batch);
    if ((uint64_t)n > SIZE_MAX / sizeof(int64_t))
        return gad_error_set(GAD_ERR_MEMORY, op, "cannot allocate a permutation of %lld "
                             "examples", (long long)n);
    gad_sampler_opts o = opts ? *opts : (gad_sampler_opts){0};
    gad_sampler *s = gad_mem_alloc(sizeof *s);
    int64_t *perm = gad_mem_alloc(n ? (size_t)n * sizeof *perm : 1);
    /* the generator last: when only it fails, its error (rng_new) stands */
    gad_rng *rng = s && perm ? gad_rng_new(seed) : NULL;
    if (!s || !perm || !rng) {
        gad_mem_free(s);
        gad_mem_free(perm);
        gad_rng_free(rng);
        return gad_error_set(GAD_ERR_MEMORY, op, "cannot allocate a sampler of %lld "
                             "examples", (long long)n);
    }
    *s = (gad_sampler){.n = n, .batch = batch, .seed = seed, .sequential = o.sequential != 0,
                       .built = -1, .perm = perm, .rng = rng};
    s->nb = o.drop_last ? n / batch : n / batch + (n % batch != 0);
    return s;
}

void gad_sampler_free(gad_sampler *s) {
    if (!s) return;
    gad_mem_free(s->perm);
    gad_rng_free(s->rng);
    gad_mem_free(s);
}

/* perm = epoch s->epoch's order (gad.h gives the algorithm). */
static void build_epoch(gad_sampler *s) {
    for (int64_t i = 0; i < s->n; i++) s->perm[i] = i;
    if (!s->sequential) {
        gad_rng_seed(s->rng, gad_sampler_epoch_seed(s->seed, s->epoch));
        for (int64_t i = s->n - 1; i > 0; i--) {
            int64_t j = gad_rng_int(s->rng, 0, i + 1), t = s->perm[i];
            s->perm[i] = s->perm[j];
            s->perm[j] = t;
        }
    }
    s->built = s->epoch;
}

int gad_sampler_next(gad_sampler *s, gad_tensor **batch) {
    if (batch) *batch = NULL;
    if (!s || !batch) {
        gad_error_set(GAD_ERR_DOMAIN, "sampler_next", "%s is NULL", !s ? "sampler" : "batch");
        return -1;
    }
    if (s->next >= s->nb) { /* the epoch is over: the next call starts another */
        s->epoch++;
        s->next = 0;
        return 0;
    }
    if (s->built != s->epoch) build_epoch(s);
    int64_t start = s->next * s->batch;
    int64_t len = s->n - start < s->batch ? s->n - start : s->batch;
    gad_tensor *t = gad_from_i64(s->perm + start, &len, 1);
    if (!t) return -1;
    s->next++;
    *batch = t;
    return 1;
}

int64_t gad_sampler_num_batches(const gad_sampler *s) { return s ? s->nb : 0; }
int64_t gad_sampler_epoch(const gad_sampler *s) { return s ? s->epoch : 0; }
int64_t gad_sampler_batch_index(const gad_sampler *s) { return s ? s->next : 0; }

gad_status gad_sampler_seek(gad_sampler *s, int64_t epoch, int64_t b) {
    const char *op = "sampler_seek";
    if (!s) return gad_error_set(GAD_ERR_DOMAIN, op, "sampler is NULL"), GAD_ERR_DOMAIN;
    if (epoch < 0 || b < 0 || b > s->nb) {
        gad_error_set(GAD_ERR_DOMAIN, op, "epoch %lld, batch %lld: want epoch >= 0 and "
                      "batch in [0, %lld]", (long long)epoch, (long long)b, (long long)s->nb);
        return GAD_ERR_DOMAIN;
    }
    s->epoch = epoch;
    s->next = b;
    return GAD_OK;
}
