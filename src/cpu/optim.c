/* optim.c: the optimizers' update kernels (optim.h), stamped for f32 and f64
 * from optim_tmpl.h.
 *
 * CMakeLists.txt compiles this file with -ffp-contract=off, after the
 * library's -ffp-contract=fast: GCC and clang then keep every a * b + c
 * below as a multiply and an add, each rounded, even where the target has
 * fused multiply-adds (-march=native, AArch64). That is what makes the
 * updates the same bits on every build, as tests/test_optim.c checks
 * against a scalar reference. (clang's "#pragma STDC FP_CONTRACT OFF" would
 * not do: under -ffp-contract=fast clang ignores it, and GCC ignores it
 * always.) */
#include "cpu.h"
#include "cpu/optim.h"

#include <math.h>

#define T float
#define SFX f32
#define SQRT sqrtf
#include "optim_tmpl.h"
#undef T
#undef SFX
#undef SQRT

#define T double
#define SFX f64
#define SQRT sqrt
#include "optim_tmpl.h"
#undef T
#undef SFX
#undef SQRT
