/* kernels.h: the ids of the elementwise kernels every back end implements,
 * one per row of elementwise.def (beside this file), which gives each one's
 * element expression, and the parameters they take. Part of the seam
 * (backend.h): the ops name kernels by these ids, a back end maps them to
 * its code. */
#ifndef GAD_KERNELS_H
#define GAD_KERNELS_H

/* The kernels of the elementwise ops and of their VJPs: one per row of
 * elementwise.def, which gives each one's element expression.
 * GAD_EW_##vjp(...), vjp a row's field, keeps its arguments for a row whose
 * VJP is generated (AUTO) and drops them for one written by hand (HAND). */
#define GAD_EW_AUTO(...) __VA_ARGS__
#define GAD_EW_HAND(...)

/* Unary kernels: y = f(x), one per UNARY and UKERNEL row. */
typedef enum gad_ukernel {
#define UNARY(ID, ...) GAD_UK_##ID,
#define UKERNEL(ID, ...) GAD_UK_##ID,
#include "backend/elementwise.def"
    GAD_UK_COUNT_
} gad_ukernel;

/* The parameters a, b of the unary kernels (leaky_relu's slope, clamp's
 * bounds, the scalar of mul/add/pow_scalar). */
typedef struct gad_uparams {
    double a, b;
} gad_uparams;

/* Binary kernels: y = a op b with broadcasting, one per BINARY and BKERNEL
 * row. MAXIMUM and MINIMUM propagate NaN from either side. */
typedef enum gad_bkernel {
#define BINARY(ID, ...) GAD_BK_##ID,
#define BKERNEL(ID, ...) GAD_BK_##ID,
#include "backend/elementwise.def"
    GAD_BK_COUNT_
} gad_bkernel;

/* Fused first derivatives for VJPs: out = gy * f'(v), where v is what the
 * op saved (its input x or its output y), with the op's parameters; one
 * per UNARY row whose VJP is generated (AUTO). gy and v broadcast to out's
 * shape. One pass instead of the several ops the derivative would take. */
typedef enum gad_gkernel {
#define UNARY(ID, name, args, pwords, save, fwd, cost, vjp, ...) GAD_EW_##vjp(GAD_GK_##ID,)
#include "backend/elementwise.def"
    GAD_GK_COUNT_
} gad_gkernel;

#endif
