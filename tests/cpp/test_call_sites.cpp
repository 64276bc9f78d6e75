// SPDX-License-Identifier: MIT
// test_call_sites.cpp: GAD_CALL_SITES from C++: a failing call's error
// carries this file and the line of the call, as in C
// (tests/test_call_sites.c has the full set); gad.hpp compiles with it, and
// gad::unique holds a parameter set.
#define GAD_CALL_SITES
#include "gad.hpp" /* gad.h through gad.hpp: its inline code takes the macros too */

#include <cstdio>
#include <cstring>

static int failures = 0;
#define EXPECT(c)                                                              \
    do {                                                                       \
        if (!(c)) {                                                            \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,       \
                         __LINE__, #c);                                        \
            failures++;                                                        \
        }                                                                      \
    } while (0)

int main() {
    gad_scope_begin();
    const int64_t shape[2] = {2, 3};
    gad_tensor *a = gad_zeros(shape, 2, GAD_F32);
    int line = __LINE__ + 1;
    gad_tensor *y = gad_matmul(a, a);
    const gad_error *e = gad_last_error();
    EXPECT(y == nullptr && e != nullptr);
    if (e) {
        EXPECT(e->file && std::strstr(e->file, "test_call_sites.cpp"));
        EXPECT(e->line == line);
        char want[64];
        std::snprintf(want, sizeof want, "test_call_sites.cpp:%d)", line);
        EXPECT(std::strstr(e->text, want) != nullptr);
        std::printf("%s\n", e->text);
    }
    gad_clear_error();
    // a set held by gad::unique; a failing call on it reports its line
    gad::unique<gad_params> ps{gad_params_new()};
    line = __LINE__ + 1;
    EXPECT(gad_params_get(ps.get(), "absent") == nullptr);
    e = gad_last_error();
    EXPECT(e && e->kind == GAD_ERR_INDEX && e->line == line);
    gad_clear_error();
    gad_scope_end();
    std::printf(failures ? "FAILED\n" : "ok\n");
    return failures ? 1 : 0;
}
