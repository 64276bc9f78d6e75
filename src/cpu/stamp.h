/* stamp.h: includes the template GAD_STAMP names twice, once with T float
 * (SFX f32, SFX_IS_F32 1) and once with T double (SFX f64, SFX_IS_F32 0),
 * so that a family's kernels are written once for both float dtypes
 * (SFX_IS_INT 0; stamp_int.h stamps the integer dtypes with SFX_IS_INT 1):
 *     #define GAD_STAMP "scan_tmpl.h"
 *     #include "cpu/stamp.h"
 * No include guard: each family's file includes it for its own template. */
#define SFX_IS_INT 0

#define T float
#define SFX f32
#define SFX_IS_F32 1
#include GAD_STAMP
#undef T
#undef SFX
#undef SFX_IS_F32

#define T double
#define SFX f64
#define SFX_IS_F32 0
#include GAD_STAMP
#undef T
#undef SFX
#undef SFX_IS_F32
#undef SFX_IS_INT
#undef GAD_STAMP
