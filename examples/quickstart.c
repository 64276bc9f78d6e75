/* quickstart.c: a first look at gad (build/examples/quickstart after `make`).
 *
 * Tensors are values; every function returns a new one that belongs to the
 * open scope, so the whole program below frees everything at gad_scope_end.
 * Errors never abort: a failing op returns NULL and the first error is kept
 * for the end. */
#include <stdio.h>

#include "gad.h"

int main(void) {
    gad_scope_begin();

    /* A 2x3 matrix from C data, and a 3-vector. */
    const float xv[] = {1, 2, 3, 4, 5, 6};
    gad_tensor *x = gad_from_f32(xv, (int64_t[]){2, 3}, 2);
    gad_tensor *w = gad_from_f32((float[]){0.5f, -1.0f, 2.0f}, (int64_t[]){3}, 1);

    /* Broadcasting, activations and reductions read like the math. */
    gad_tensor *y = gad_tanh(gad_mul(x, w));       /* [2,3] * [3] -> [2,3] */
    gad_tensor *row_sums = gad_sum(y, (int[]){1}, 1, 0); /* over axis 1 -> [2] */
    gad_tensor *xxT = gad_matmul(x, gad_transpose(x));   /* [2,2] */

    printf("x =\n");
    gad_print(x);
    printf("tanh(x * w) =\n");
    gad_print(y);
    printf("row sums = ");
    gad_print(row_sums);
    printf("x @ x^T =\n");
    gad_print(xxT);

    /* A mistake is an error value, not a crash: [2,3] @ [2,3] does not fit. */
    gad_tensor *bad = gad_matmul(x, x);
    const gad_error *e = gad_last_error();
    printf("bad = %s; %s\n", bad ? "a tensor" : "NULL", e ? e->text : "no error");
    gad_clear_error();

    gad_scope_end();
    return bad == NULL ? 0 : 1;
}
