/* test_registry.h: walking the gradcheck samples of the op registry
 * (src/ops/ops.def), for the tests that run every op. Include after test.h
 * and ops/ops_int.h. */
#ifndef GAD_TEST_REGISTRY_H
#define GAD_TEST_REGISTRY_H

/* Case v of op's samples in *s, made inside a scope this opens: 1, and the
 * caller ends that scope when done with the case; or 0 when op has no case
 * v (the scope is closed again). */
static inline int test_sample(int op, gad_rng *r, int v, gad_op_sample *s) {
    gad_scope_begin();
    memset(s, 0, sizeof *s);
    if (gad__ops[op].sample(s, r, v)) return 1;
    gad_scope_end();
    return 0;
}

#endif
