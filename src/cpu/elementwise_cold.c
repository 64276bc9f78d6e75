/* elementwise_cold.c: the elementwise kernels most programs never run,
 * apart from the others (why: elementwise_kern.h): the math family's rows
 * (sin ... pow, elu ... gelu_erf and their helper kernels) and every row's
 * f64 kernels. cpu/elementwise.c runs them through these tables. */
#define EW_EMIT_CORE_f32(...)
#define EW_EMIT_CORE_f64(...) __VA_ARGS__
#define EW_EMIT_MATH_f32(...) __VA_ARGS__
#define EW_EMIT_MATH_f64(...) __VA_ARGS__
#define EW_TABLE_STORAGE
#define EW_UNARY_TABLE gad__ew_cold_unary
#define EW_BINARY_TABLE gad__ew_cold_binary
#define EW_GRAD_TABLE gad__ew_cold_grad
#include "cpu/elementwise_kern.h"
