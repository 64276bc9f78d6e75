/* json.h: the JSON that a safetensors header needs (src/io/json.c). A
 * reader: a strict, bounds-checked cursor over the header's bytes for
 * strings, integers and any value to skip, whose first failure becomes a
 * message naming what was being parsed and the header byte where it went
 * wrong; the format's own grammar (src/io/safetensors.c) is built on it.
 * A writer: a growable byte string the header is written into. And the
 * UTF-8 check that both strings read and names written must pass. Private
 * to src/io, and to src/nn and src/optim for names in messages; written on the
 * public API only. */
#ifndef GAD_IO_JSON_H
#define GAD_IO_JSON_H

#include "gad.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define JSON_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define JSON_PRINTF(f, a)
#endif

/* The deepest nesting of JSON objects and arrays accepted in a header. */
#define JSON_DEPTH_MAX 64

/* The length (1..4) of the valid UTF-8 sequence at p (avail bytes there),
 * or 0 if it is not one (overlong forms, surrogates and code points past
 * U+10FFFF are invalid). */
size_t gad__utf8_seq(const unsigned char *p, size_t avail);

/* s as a message may quote it, in buf (cap bytes, at least 8): printable
 * text as it is; as \xNN each byte of a C0 control character, DEL, a C1
 * control character (U+0080..U+009F, which a terminal may take as the start
 * of a control sequence) and each byte that is not valid UTF-8; cut after a
 * whole character, with "...", where it does not fit. Names in files are
 * hostile: a message quoting one must not carry a terminal's escape
 * sequences to whoever prints it. Returns buf. */
const char *gad__json_shown(char *buf, size_t cap, const char *s);

/* ------------------------------------------------------------ the reader */

/* A cursor over s[0..n). Zero it, set s and n, parse, then free it with
 * gad__json_free. */
typedef struct gad_json {
    const unsigned char *s; /* the header, s[0..n) */
    size_t n, i;
    char *str; /* the last string parsed, decoded, NUL-terminated */
    size_t str_len, str_cap;
    char ctx[128];   /* what is being parsed, for messages ("" at the top) */
    gad_status kind; /* GAD_OK until the first failure */
    char msg[240];
} gad_json;

/* Record the first failure: kind, and msg, which (but for a memory error)
 * starts with ctx and ends with the byte position, "at header byte 12".
 * Always returns false, so that a parser can `return gad__json_fail(..)`. */
bool gad__json_fail(gad_json *p, gad_status kind, const char *fmt, ...)
    JSON_PRINTF(3, 4);

/* A description of the byte at the cursor, for messages. */
const char *gad__json_here(const gad_json *p, char *buf, size_t cap);

/* The byte at the cursor, or -1 at the end. */
static inline int gad__json_peek(const gad_json *p) {
    return p->i < p->n ? p->s[p->i] : -1;
}

/* Step over JSON whitespace. */
static inline void gad__json_skip_ws(gad_json *p) {
    while (p->i < p->n) {
        unsigned char c = p->s[p->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->i++;
    }
}

/* Whitespace, then the byte c (what names it in the message if not). */
bool gad__json_expect(gad_json *p, int c, const char *what);

/* A string at the cursor into p->str. Rejects raw control characters,
 * invalid UTF-8, unknown escapes, unpaired surrogates and NUL (\u0000). */
bool gad__json_string(gad_json *p, const char *what);

/* An integer at the cursor: optional '-', digits without a leading zero,
 * no fraction or exponent, magnitude below 2^64. */
bool gad__json_int(gad_json *p, const char *what, bool *neg, uint64_t *mag);

/* Any value (checked, then dropped), nested depth levels down already:
 * unknown fields of a tensor entry. */
bool gad__json_skip_value(gad_json *p, int depth);

/* Free what the reader holds (its string). */
void gad__json_free(gad_json *p);

/* ------------------------------------------------------------ the writer */

/* A growable byte string; `oom` records a failed allocation. Zero it to
 * start; p (NUL-terminated once anything is put) is freed with
 * gad_mem_free. */
typedef struct gad_json_out {
    char *p;
    size_t len, cap;
    bool oom;
} gad_json_out;

void gad__json_put(gad_json_out *b, const void *s, size_t n);
void gad__json_puts(gad_json_out *b, const char *s);
/* Only short pieces (numbers, under 64 bytes): a longer one sets oom. */
void gad__json_printf(gad_json_out *b, const char *fmt, ...) JSON_PRINTF(2, 3);
/* s as a JSON string, quoted: '"' and '\' escaped with a backslash, every
 * control character (below 0x20) and DEL as \u00XX; the rest (valid UTF-8,
 * which the caller checks) as it is. */
void gad__json_put_string(gad_json_out *b, const char *s);

#endif /* GAD_IO_JSON_H */
