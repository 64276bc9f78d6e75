/* grain-bench: where a second thread starts to pay, per kernel family
 * (issue 31's grains). For each op and size, calls on 1 thread and on 2
 * threads alternate in rounds; prints one line per (op, n) with both
 * medians (us per call) and their ratio t2/t1: below 1, splitting pays.
 *   grain-bench [rounds] [op...]
 * ops: add mul_row relu gelu exp pow relu_grad gelu_grad sum_all sum_rows
 * gt where gt_row where_row clamp copy_t cast (default: all; the last seven
 * are the select family's compare and where (of same-shape operands, then
 * with a broadcast row) and clamp (tensor bounds, a row), a transposed copy
 * and an f32 to f64 cast). Sizes: 16K to 1M elements, f32. Run it with both builds
 * whose grains differ to see where the grain took effect: at sizes below
 * the family's split point both threads' times are the same by design. */
#include "gad.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>



/* the CPU's name, from /proc/cpuinfo where there is one */
static void cpu_name(char *buf, size_t cap) {
    snprintf(buf, cap, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *c = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !c) continue;
        snprintf(buf, cap, "%s", c + 2);
        buf[strcspn(buf, "\n")] = 0;
        break;
    }
    if (f) fclose(f);
}

typedef struct args {
    gad_tensor *x, *y, *row, *gy, *leaf, *cond;
} args;

static gad_tensor *grad_of(gad_tensor *(*f)(gad_tensor *), args *a) {
    gad_tensor *g = NULL;
    gad_tensor *out = f(a->leaf);
    gad_grad_ex(out, a->gy, &a->leaf, 1, &g, 0);
    return g;
}

static gad_tensor *run(const char *op, args *a) {
    if (!strcmp(op, "add")) return gad_add(a->x, a->y);
    if (!strcmp(op, "mul_row")) return gad_mul(a->x, a->row);
    if (!strcmp(op, "relu")) return gad_relu(a->x);
    if (!strcmp(op, "gelu")) return gad_gelu(a->x);
    if (!strcmp(op, "exp")) return gad_exp(a->x);
    if (!strcmp(op, "pow")) return gad_pow(gad_abs(a->x), a->y);
    if (!strcmp(op, "relu_grad")) return grad_of(gad_relu, a);
    if (!strcmp(op, "gelu_grad")) return grad_of(gad_gelu, a);
    if (!strcmp(op, "sum_all")) return gad_sum_all(a->x);
    if (!strcmp(op, "sum_rows")) return gad_sum(a->x, (int[]){1}, 1, 0);
    if (!strcmp(op, "gt")) return gad_gt(a->x, a->y);
    if (!strcmp(op, "where")) return gad_where(a->cond, a->x, a->y);
    if (!strcmp(op, "gt_row")) return gad_gt(a->x, a->row);
    if (!strcmp(op, "where_row")) return gad_where(a->cond, a->x, a->row);
    if (!strcmp(op, "clamp")) return gad_clamp_tensor(a->x, a->row, NULL);
    if (!strcmp(op, "copy_t")) return gad_contiguous(gad_transpose(a->x));
    if (!strcmp(op, "cast")) return gad_cast(a->x, GAD_F64);
    return NULL;
}

static const char *const all_ops[] = {"add",       "mul_row",   "relu",    "gelu",
                                      "exp",       "pow",       "relu_grad", "gelu_grad",
                                      "sum_all",   "sum_rows",  "gt",      "where",
                                      "gt_row",    "where_row", "clamp",   "copy_t",
                                      "cast"};

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 15;
    if (rounds < 3 || rounds > 201) rounds = 15;
    const char *const *ops = all_ops;
    int nops = (int)(sizeof all_ops / sizeof all_ops[0]);
    if (argc > 2) {
        ops = (const char *const *)(argv + 2);
        nops = argc - 2;
    }
    char cpu[256];
    cpu_name(cpu, sizeof cpu);
    printf("# %s; t1, t2: median us per call over %d rounds (1 and 2 threads, "
           "alternating)\n",
           cpu, rounds);
    printf("%-10s %9s %10s %10s %7s\n", "op", "n", "t1_us", "t2_us", "t2/t1");
    for (int o = 0; o < nops; o++) {
        for (int64_t n = 16384; n <= (1 << 20); n *= 2) {
            gad_scope_begin();
            int64_t sh[2] = {n / 256, 256};
            args a = {gad_randn(sh, 2, 1), gad_randn(sh, 2, 2), gad_randn(sh + 1, 1, 3),
                      gad_randn(sh, 2, 4), NULL, NULL};
            a.leaf = gad_requires_grad(gad_clone(a.x));
            a.cond = gad_gt(a.x, a.y);
            if (!run(ops[o], &a)) {
                fprintf(stderr, "grain-bench: %s: %s\n", ops[o],
                        gad_last_error() ? gad_last_error()->text : "unknown op");
                return 1;
            }
            /* calls per timing: about 2 ms of single-thread work */
            double t0 = now_s();
            int calls = 0;
            gad_set_num_threads(1);
            while (now_s() - t0 < 2e-3 || calls < 3) {
                gad_scope_begin();
                run(ops[o], &a);
                gad_scope_end();
                calls++;
            }
            double t[2][201];
            for (int r = 0; r < rounds; r++)
                for (int k = 0; k < 2; k++) {
                    gad_set_num_threads(k + 1);
                    gad_scope_begin();
                    run(ops[o], &a); /* warm the thread count */
                    gad_scope_end();
                    double s = now_s();
                    for (int c = 0; c < calls; c++) {
                        gad_scope_begin();
                        run(ops[o], &a);
                        gad_scope_end();
                    }
                    t[k][r] = (now_s() - s) / calls * 1e6;
                }
            qsort(t[0], (size_t)rounds, sizeof t[0][0], cmp_double);
            qsort(t[1], (size_t)rounds, sizeof t[1][0], cmp_double);
            double m1 = t[0][rounds / 2], m2 = t[1][rounds / 2];
            printf("%-10s %9lld %10.2f %10.2f %7.3f\n", ops[o], (long long)n, m1, m2, m2 / m1);
            fflush(stdout);
            gad_scope_end();
        }
    }
    return 0;
}
