/* embedding.c: the CPU's embedding family: its kernels, stamped for f32 and
 * f64 from embedding_tmpl.h, the wrappers from the seam's tensors to their
 * raw arrays, and its sub-table (backend/embedding.h), which the CPU's table
 * points to. */
#include "backend/embedding.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"

#include <tgmath.h>

#define GAD_STAMP "embedding_tmpl.h"
#include "cpu/stamp.h"

#define F32(t) ((t)->dtype == GAD_F32)
#define P(t) gad__ptr(t)

static void cpu_emb_fwd(const gad_tensor *table, const gad_tensor *idx, gad_tensor *y) {
    int64_t D = table->shape[1];
    if (F32(y)) gad__emb_fwd_f32(P(table), P(idx), P(y), idx->numel, D);
    else gad__emb_fwd_f64(P(table), P(idx), P(y), idx->numel, D);
}

static void cpu_emb_bwd(const gad_tensor *idx, const gad_tensor *gy, gad_tensor *gt) {
    int64_t D = gt->shape[1];
    if (F32(gt)) gad__emb_bwd_f32(P(idx), P(gy), P(gt), idx->numel, D);
    else gad__emb_bwd_f64(P(idx), P(gy), P(gt), idx->numel, D);
}

const gad_be_embedding gad__cpu_embedding = {.fwd = cpu_emb_fwd, .bwd = cpu_emb_bwd};
