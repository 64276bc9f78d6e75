/* json.c: the JSON of a safetensors header (json.h): the reader's
 * primitives (strings with their escapes and UTF-8 checks, integers without
 * overflow, any value skipped to a bounded depth, each failure a message
 * naming the header byte) and the growable string the writer fills.
 * Nothing outside s[0..n) is ever read. Written on the public API only
 * (DESIGN §1): memory comes from gad_mem_alloc. */
#include "json.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The length (1..4) of the valid UTF-8 sequence at p (avail bytes there),
 * or 0 if it is not one (overlong forms, surrogates and code points past
 * U+10FFFF are invalid). */
size_t gad__utf8_seq(const unsigned char *p, size_t avail) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return 0;
    if (avail < len || p[1] < lo || p[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if (p[k] < 0x80 || p[k] > 0xBF) return 0;
    return len;
}

const char *gad__json_shown(char *buf, size_t cap, const char *s) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t avail = strlen(s), o = 0;
    while (avail > 0) {
        size_t k = gad__utf8_seq(p, avail);
        bool esc = k == 0 || p[0] < 0x20 || p[0] == 0x7f ||
                   (k == 2 && p[0] == 0xc2 && p[1] < 0xa0);
        if (k == 0) k = 1; /* one byte that is not UTF-8 */
        size_t need = esc ? 4 * k : k;
        /* room for the NUL, and for "..." unless this is the last one */
        if (o + need > cap - (avail == k ? 1 : 4)) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        for (size_t j = 0; j < k; j++) {
            if (esc) {
                buf[o++] = '\\';
                buf[o++] = 'x';
                buf[o++] = hex[p[j] >> 4];
                buf[o++] = hex[p[j] & 15];
            } else {
                buf[o++] = (char)p[j];
            }
        }
        p += k;
        avail -= k;
    }
    buf[o] = 0;
    return buf;
}

/* snprintf for messages that may be cut short (which is fine). */
static void msgf(char *buf, size_t cap, const char *fmt, ...)
    JSON_PRINTF(3, 4);
static void msgf(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

/* ======================================================================== */
/* The reader                                                                */
/* ======================================================================== */

bool gad__json_fail(gad_json *p, gad_status kind, const char *fmt, ...) {
    if (p->kind != GAD_OK) return false;
    p->kind = kind;
    char m[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (kind == GAD_ERR_MEMORY)
        msgf(p->msg, sizeof p->msg, "%s", m);
    else
        msgf(p->msg, sizeof p->msg, "%s%s%s at header byte %zu", p->ctx,
             p->ctx[0] ? ": " : "", m, p->i);
    return false;
}

/* A description of the byte at the cursor, for messages. */
const char *gad__json_here(const gad_json *p, char *buf, size_t cap) {
    if (p->i >= p->n) snprintf(buf, cap, "the end of the header");
    else if (p->s[p->i] >= 0x20 && p->s[p->i] < 0x7f)
        snprintf(buf, cap, "'%c'", p->s[p->i]);
    else snprintf(buf, cap, "byte 0x%02x", p->s[p->i]);
    return buf;
}

bool gad__json_expect(gad_json *p, int c, const char *what) {
    gad__json_skip_ws(p);
    if (gad__json_peek(p) == c) {
        p->i++;
        return true;
    }
    char b[32];
    return gad__json_fail(p, GAD_ERR_FORMAT, "expected %s, found %s", what,
                          gad__json_here(p, b, sizeof b));
}

static bool str_put(gad_json *p, const void *bytes, size_t k) {
    if (p->str_cap - p->str_len < k + 1) {
        size_t ncap = p->str_cap ? p->str_cap : 64;
        while (ncap - p->str_len < k + 1) ncap *= 2;
        char *np = gad_mem_realloc(p->str, ncap);
        if (!np)
            return gad__json_fail(p, GAD_ERR_MEMORY,
                                  "cannot allocate %zu bytes", ncap);
        p->str = np;
        p->str_cap = ncap;
    }
    memcpy(p->str + p->str_len, bytes, k);
    p->str_len += k;
    p->str[p->str_len] = 0;
    return true;
}

/* Four hex digits at the cursor as a code unit, or -1. */
static long hex4(gad_json *p) {
    if (p->n - p->i < 4) return -1;
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int c = p->s[p->i + (size_t)k], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return -1;
        v = v * 16 + d;
    }
    p->i += 4;
    return v;
}

/* A string at the cursor into p->str. Rejects raw control characters,
 * invalid UTF-8, unknown escapes, unpaired surrogates and NUL (\u0000). */
bool gad__json_string(gad_json *p, const char *what) {
    gad__json_skip_ws(p);
    if (gad__json_peek(p) != '"') {
        char b[32];
        return gad__json_fail(p, GAD_ERR_FORMAT,
                              "expected %s (a string), found %s", what,
                              gad__json_here(p, b, sizeof b));
    }
    p->i++;
    p->str_len = 0;
    if (!str_put(p, "", 0)) return false;
    for (;;) {
        if (p->i >= p->n)
            return gad__json_fail(p, GAD_ERR_FORMAT, "unterminated string");
        unsigned char c = p->s[p->i];
        if (c == '"') {
            p->i++;
            return true;
        }
        if (c < 0x20)
            return gad__json_fail(p, GAD_ERR_FORMAT,
                                  "control character 0x%02x in a string", c);
        if (c != '\\') {
            size_t k = gad__utf8_seq(p->s + p->i, p->n - p->i);
            if (!k)
                return gad__json_fail(p, GAD_ERR_FORMAT,
                                      "invalid UTF-8 in a string");
            if (!str_put(p, p->s + p->i, k)) return false;
            p->i += k;
            continue;
        }
        p->i++;
        if (p->i >= p->n)
            return gad__json_fail(p, GAD_ERR_FORMAT, "unterminated string");
        unsigned char e = p->s[p->i++];
        char one;
        switch (e) {
        case '"': one = '"'; break;
        case '\\': one = '\\'; break;
        case '/': one = '/'; break;
        case 'b': one = '\b'; break;
        case 'f': one = '\f'; break;
        case 'n': one = '\n'; break;
        case 'r': one = '\r'; break;
        case 't': one = '\t'; break;
        case 'u': {
            long cp = hex4(p);
            if (cp < 0)
                return gad__json_fail(p, GAD_ERR_FORMAT,
                                      "\\u needs four hex digits");
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return gad__json_fail(p, GAD_ERR_FORMAT,
                                      "unpaired surrogate \\u%04lx", cp);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo = -1;
                if (p->n - p->i >= 2 && p->s[p->i] == '\\' &&
                    p->s[p->i + 1] == 'u') {
                    p->i += 2;
                    lo = hex4(p);
                }
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return gad__json_fail(p, GAD_ERR_FORMAT,
                                          "unpaired surrogate \\u%04lx", cp);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0)
                return gad__json_fail(p, GAD_ERR_FORMAT,
                                      "NUL (\\u0000) in a string");
            unsigned char u[4];
            size_t k;
            if (cp < 0x80) u[0] = (unsigned char)cp, k = 1;
            else if (cp < 0x800) {
                u[0] = (unsigned char)(0xC0 | cp >> 6);
                u[1] = (unsigned char)(0x80 | (cp & 0x3F));
                k = 2;
            } else if (cp < 0x10000) {
                u[0] = (unsigned char)(0xE0 | cp >> 12);
                u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
                u[2] = (unsigned char)(0x80 | (cp & 0x3F));
                k = 3;
            } else {
                u[0] = (unsigned char)(0xF0 | cp >> 18);
                u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
                u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
                u[3] = (unsigned char)(0x80 | (cp & 0x3F));
                k = 4;
            }
            if (!str_put(p, u, k)) return false;
            continue;
        }
        default:
            p->i--;
            return gad__json_fail(p, GAD_ERR_FORMAT, "invalid escape \\%c",
                                  e >= 0x20 && e < 0x7f ? e : '?');
        }
        if (!str_put(p, &one, 1)) return false;
    }
}

/* An integer at the cursor: optional '-', digits without a leading zero,
 * no fraction or exponent, magnitude below 2^64. */
bool gad__json_int(gad_json *p, const char *what, bool *neg, uint64_t *mag) {
    gad__json_skip_ws(p);
    *neg = false;
    *mag = 0;
    if (gad__json_peek(p) == '-') {
        *neg = true;
        p->i++;
    }
    int c = gad__json_peek(p);
    if (c < '0' || c > '9') {
        char b[32];
        return gad__json_fail(p, GAD_ERR_FORMAT,
                              "expected %s (an integer), found %s", what,
                              gad__json_here(p, b, sizeof b));
    }
    if (c == '0' && p->i + 1 < p->n && p->s[p->i + 1] >= '0' &&
        p->s[p->i + 1] <= '9')
        return gad__json_fail(p, GAD_ERR_FORMAT, "%s has a leading zero",
                              what);
    while ((c = gad__json_peek(p)) >= '0' && c <= '9') {
        unsigned d = (unsigned)(c - '0');
        if (*mag > (UINT64_MAX - d) / 10)
            return gad__json_fail(p, GAD_ERR_FORMAT, "%s is too large", what);
        *mag = *mag * 10 + d;
        p->i++;
    }
    if (c == '.' || c == 'e' || c == 'E')
        return gad__json_fail(p, GAD_ERR_FORMAT, "%s is not an integer", what);
    return true;
}

/* Any value (checked, then dropped): unknown fields of a tensor entry. */
bool gad__json_skip_value(gad_json *p, int depth) {
    if (depth > JSON_DEPTH_MAX)
        return gad__json_fail(p, GAD_ERR_FORMAT,
                              "nesting deeper than %d levels", JSON_DEPTH_MAX);
    gad__json_skip_ws(p);
    int c = gad__json_peek(p);
    if (c == '"') return gad__json_string(p, "a value");
    if (c == '-' || (c >= '0' && c <= '9')) {
        bool neg;
        uint64_t mag;
        return gad__json_int(p, "a value", &neg, &mag);
    }
    if (c == '{' || c == '[') {
        int close = c == '{' ? '}' : ']';
        p->i++;
        gad__json_skip_ws(p);
        if (gad__json_peek(p) == close) {
            p->i++;
            return true;
        }
        for (;;) {
            if (c == '{' && (!gad__json_string(p, "a field name") ||
                             !gad__json_expect(p, ':', "':'")))
                return false;
            if (!gad__json_skip_value(p, depth + 1)) return false;
            gad__json_skip_ws(p);
            if (gad__json_peek(p) == ',') {
                p->i++;
                continue;
            }
            return gad__json_expect(p, close, close == '}' ? "',' or '}'"
                                                           : "',' or ']'");
        }
    }
    char b[32];
    return gad__json_fail(p, GAD_ERR_FORMAT,
                          "expected a value (object, array, string or "
                          "integer), found %s", gad__json_here(p, b, sizeof b));
}

void gad__json_free(gad_json *p) {
    gad_mem_free(p->str);
    p->str = NULL;
    p->str_len = p->str_cap = 0;
}

/* ======================================================================== */
/* The writer                                                                */
/* ======================================================================== */

static bool reserve(gad_json_out *b, size_t extra) {
    if (b->oom) return false;
    if (extra <= b->cap - b->len) return true;
    if (extra > SIZE_MAX / 2 - b->len) return !(b->oom = true);
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap - b->len < extra) ncap *= 2;
    char *np = gad_mem_realloc(b->p, ncap);
    if (!np) return !(b->oom = true);
    b->p = np;
    b->cap = ncap;
    return true;
}

void gad__json_put(gad_json_out *b, const void *s, size_t n) {
    if (!reserve(b, n + 1)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void gad__json_puts(gad_json_out *b, const char *s) {
    gad__json_put(b, s, strlen(s));
}

void gad__json_printf(gad_json_out *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) { /* only short numbers go here */
        b->oom = true;
        return;
    }
    gad__json_put(b, tmp, (size_t)n);
}

void gad__json_put_string(gad_json_out *b, const char *s) {
    static const char hex[] = "0123456789abcdef";
    gad__json_put(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c < 0x20 || *c == 0x7f) {
            const char u[6] = {'\\', 'u', '0', '0', hex[*c >> 4], hex[*c & 15]};
            gad__json_put(b, u, 6);
            continue;
        }
        if (*c == '"' || *c == '\\') gad__json_put(b, "\\", 1);
        gad__json_put(b, c, 1);
    }
    gad__json_put(b, "\"", 1);
}
