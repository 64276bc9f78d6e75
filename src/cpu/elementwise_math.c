/* elementwise_math.c: the kernels of elementwise.def's math family (sin
 * ... pow, elu ... gelu_erf and their helper kernels), apart from the
 * others (why: elementwise_kern.h); cpu/elementwise.c runs them through
 * these tables. */
#define EW_EMIT_CORE(...)
#define EW_EMIT_MATH(...) __VA_ARGS__
#define EW_TABLE_STORAGE
#define EW_UNARY_TABLE gad__ew_math_unary
#define EW_BINARY_TABLE gad__ew_math_binary
#define EW_GRAD_TABLE gad__ew_math_grad
#include "cpu/elementwise_kern.h"
