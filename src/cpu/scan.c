/* scan.c: the CPU's gated scan family: its kernels, stamped for f32 and f64
 * from scan_tmpl.h, the wrappers from the seam's tensors to their raw
 * arrays, and its sub-table (backend/scan.h), which the CPU's table points
 * to. */
#include "backend/scan.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"

#include <tgmath.h>

#define GAD_STAMP "scan_tmpl.h"
#include "cpu/stamp.h"

#define F32(t) ((t)->dtype == GAD_F32)
#define P(t) gad__ptr(t)

/* f16/bf16 (issue 29): the f32 kernel on f32 copies (cpu.h's half set),
 * its outputs rounded once; the backward reads the saved h as rounded. */
static int half_scan(const gad_tensor *a, const gad_tensor *b, const gad_tensor *h,
                     const gad_tensor *gh, gad_tensor *out0, gad_tensor *out1) {
    int64_t B = a->shape[0], T = a->shape[1], D = a->shape[2];
    int fwd = gh == NULL;
    const gad_tensor *t[5] = {a, fwd ? b : h, gh, out0, out1};
    const bool in[5] = {1, 1, 1, 0, 0};
    gad_half_set s;
    if (gad__half_set_new("gated_scan", &s, 5, t, in)) return -1;
    if (fwd) gad__scan_fwd_f32(s.p[0], s.p[1], s.p[3], B, T, D);
    else gad__scan_bwd_f32(s.p[0], s.p[1], s.p[2], s.p[3], s.p[4], B, T, D);
    if (out0) gad__half_set_out(&s, 3, out0);
    if (out1) gad__half_set_out(&s, 4, out1);
    gad__half_set_free(&s);
    return 0;
}

static int cpu_scan_fwd(const gad_tensor *a, const gad_tensor *b, gad_tensor *h) {
    int64_t B = a->shape[0], T = a->shape[1], D = a->shape[2];
    if (gad__is_half(a->dtype)) return half_scan(a, b, NULL, NULL, h, NULL);
    if (F32(a)) gad__scan_fwd_f32(P(a), P(b), P(h), B, T, D);
    else gad__scan_fwd_f64(P(a), P(b), P(h), B, T, D);
    return 0;
}

static int cpu_scan_bwd(const gad_tensor *a, const gad_tensor *h, const gad_tensor *gh,
                        gad_tensor *ga, gad_tensor *gb) {
    int64_t B = a->shape[0], T = a->shape[1], D = a->shape[2];
    if (gad__is_half(a->dtype)) return half_scan(a, NULL, h, gh, ga, gb);
    void *pa = ga ? P(ga) : NULL, *pb = gb ? P(gb) : NULL;
    if (F32(a)) gad__scan_bwd_f32(P(a), P(h), P(gh), pa, pb, B, T, D);
    else gad__scan_bwd_f64(P(a), P(h), P(gh), pa, pb, B, T, D);
    return 0;
}

const gad_be_scan gad__cpu_scan = {.fwd = cpu_scan_fwd, .bwd = cpu_scan_bwd, .half = 1};
