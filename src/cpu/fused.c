/* fused.c: the fused kernels of docs/helix.md, stamped for f32 and f64
 * from fused_tmpl.h. */
#include "cpu.h"
#include "cpu/fused.h"
#include "cpu/gemm.h"
#include "cpu/vmath.h"

#include <tgmath.h>

#define T float
#define SFX f32
#define SFX_IS_F32 1
#include "fused_tmpl.h"
#undef T
#undef SFX
#undef SFX_IS_F32

#define T double
#define SFX f64
#define SFX_IS_F32 0
#include "fused_tmpl.h"
#undef T
#undef SFX
#undef SFX_IS_F32
