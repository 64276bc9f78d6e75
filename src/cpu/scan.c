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

static void cpu_scan_fwd(const gad_tensor *a, const gad_tensor *b, gad_tensor *h) {
    int64_t B = a->shape[0], T = a->shape[1], D = a->shape[2];
    if (F32(a)) gad__scan_fwd_f32(P(a), P(b), P(h), B, T, D);
    else gad__scan_fwd_f64(P(a), P(b), P(h), B, T, D);
}

static void cpu_scan_bwd(const gad_tensor *a, const gad_tensor *h, const gad_tensor *gh,
                         gad_tensor *ga, gad_tensor *gb) {
    int64_t B = a->shape[0], T = a->shape[1], D = a->shape[2];
    void *pa = ga ? P(ga) : NULL, *pb = gb ? P(gb) : NULL;
    if (F32(a)) gad__scan_bwd_f32(P(a), P(h), P(gh), pa, pb, B, T, D);
    else gad__scan_bwd_f64(P(a), P(h), P(gh), pa, pb, B, T, D);
}

const gad_be_scan gad__cpu_scan = {.fwd = cpu_scan_fwd, .bwd = cpu_scan_bwd};
