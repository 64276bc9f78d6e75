/* stamp_int.h: includes the template GAD_STAMP for the integer dtypes, once
 * with T int64_t (SFX i64) and once with T uint8_t (SFX u8: gad's bool,
 * 0 or 1), with SFX_IS_INT 1 and SFX_IS_F32 0, for the families whose
 * kernels also take integers (stamp.h stamps the floats with SFX_IS_INT 0).
 * SFX_UNSIGNED is the unsigned type of T's size and SFX_SIGNED says whether
 * T has a sign (its order is then that of the bits with the sign flipped).
 * Templates that are stamped here test SFX_IS_INT where integers differ
 * (no NaN, exact arithmetic):
 *     #define GAD_STAMP "sort_tmpl.h"
 *     #include "cpu/stamp_int.h"
 * No include guard: each family's file includes it for its own template. */
#define SFX_IS_INT 1
#define SFX_IS_F32 0

#define T int64_t
#define SFX i64
#define SFX_UNSIGNED uint64_t
#define SFX_SIGNED 1
#include GAD_STAMP
#undef T
#undef SFX
#undef SFX_UNSIGNED
#undef SFX_SIGNED

#define T uint8_t
#define SFX u8
#define SFX_UNSIGNED uint8_t
#define SFX_SIGNED 0
#include GAD_STAMP
#undef T
#undef SFX
#undef SFX_UNSIGNED
#undef SFX_SIGNED

#undef SFX_IS_INT
#undef SFX_IS_F32
#undef GAD_STAMP
