/* test_call_sites.c: errors that say where (gad.h, "Call sites"). This
 * file is compiled with GAD_CALL_SITES, so every gad call in it goes
 * through gad_call_sites.h: a failing call's error carries this file and
 * the line of the call; nested calls, helpers and callbacks report their
 * own lines; a call that bypasses the macro records no site. Then, without
 * Python, that every function gad.h declares has its macro (the list
 * cannot rot; tools/gen_call_sites.py --check, a ctest of its own, also
 * compares the wrappers' signatures). */
#define GAD_CALL_SITES
#include "test.h"

#include <ctype.h>
#include <pthread.h>

static gad_tensor *m23(void) { return gad_zeros((int64_t[]){2, 3}, 2, GAD_F32); }

/* The error is a shape error in op at this file's line `line`. */
static void check_site(const char *op, int line) {
    const gad_error *e = gad_last_error();
    CHECK(e != NULL);
    if (!e) return;
    CHECK_MSG(strcmp(e->op, op) == 0, "op %s, expected %s", e->op, op);
    CHECK_MSG(e->file && strstr(e->file, "test_call_sites.c"), "file %s",
              e->file ? e->file : "(none)");
    CHECK_MSG(e->line == line, "line %d, expected %d", e->line, line);
    char want[64];
    snprintf(want, sizeof want, "test_call_sites.c:%d)", line);
    CHECK_MSG(strstr(e->text, want) && strstr(e->text, " (at "), "text: %s", e->text);
    /* the usual text comes first, unchanged */
    char head[64];
    snprintf(head, sizeof head, "%s error in %s: ", gad_status_str(e->kind), op);
    CHECK_MSG(strncmp(e->text, head, strlen(head)) == 0, "text: %s", e->text);
    gad_clear_error();
}

TEST(a_failing_call_reports_its_line) {
    gad_scope_begin();
    gad_tensor *a = m23(), *b = m23();
    int line = __LINE__ + 1;
    gad_tensor *y = gad_matmul(a, b);
    CHECK(y == NULL);
    check_site("matmul", line);
    /* a status-returning function too */
    gad_tensor *g[1];
    line = __LINE__ + 1;
    CHECK(gad_grad(a, &a, 1, g) != GAD_OK);
    check_site("grad", line);
    /* an error from deep inside gad (the nn layer calling matmul) is
     * reported at the user's call */
    line = __LINE__ + 1;
    CHECK(gad_linear(a, b, NULL) == NULL);
    check_site("linear", line);
    /* no error: nothing pending, and the site is gone after the call */
    CHECK(gad_add(a, b) != NULL);
    CHECK_OK();
    gad_scope_end();
}

/* The arguments run before the call's site is set: a helper that calls gad
 * (on its own line) and then an outer call that fails report the outer
 * call's line, and an inner call that fails reports its own. */
static gad_tensor *helper(gad_tensor *t) { return gad_neg(t); } /* helper_line */
static const int helper_line = __LINE__ - 1;

static gad_tensor *failing_helper(gad_tensor *t) { return gad_matmul(t, t); }
static const int failing_helper_line = __LINE__ - 1;

TEST(nested_calls_report_their_own_lines) {
    gad_scope_begin();
    gad_tensor *a = m23(), *b = m23();
    int line = __LINE__ + 1;
    CHECK(gad_matmul(helper(a), b) == NULL);
    check_site("matmul", line);
    CHECK(gad_sum_all(failing_helper(a)) == NULL);
    check_site("matmul", failing_helper_line);
    (void)helper_line;
    line = __LINE__ + 1;
    CHECK(gad_sum_all(gad_matmul(a, b)) == NULL); /* the inner one fails */
    check_site("matmul", line);
    gad_scope_end();
}

/* A callback's calls report their lines; the caller's site is back after. */
static int cb_line;
static gad_tensor *bad_fn(void *ctx, gad_tensor *const *in, int n) {
    (void)ctx, (void)n;
    cb_line = __LINE__ + 1;
    return gad_matmul(in[0], in[0]);
}

TEST(callbacks_and_restoring) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_zeros((int64_t[]){2, 3}, 2, GAD_F64));
    gad_gradcheck_result res;
    CHECK(gad_gradcheck(bad_fn, NULL, &x, 1, NULL, &res) != GAD_OK);
    check_site("matmul", cb_line);
    /* a site set by hand stays in place around recorded calls, and a call
     * that bypasses the macro reports it */
    gad_call_site prev = gad_call_site_enter("by_hand.c", 7);
    CHECK(prev.file == NULL && prev.line == 0);
    CHECK(gad_add(x, x) != NULL); /* recorded: restores by_hand.c:7 after */
    CHECK((gad_matmul)(x, x) == NULL);
    const gad_error *e = gad_last_error();
    CHECK(e && e->file && strcmp(e->file, "by_hand.c") == 0 && e->line == 7);
    CHECK(e && strstr(e->text, " (at by_hand.c:7)"));
    gad_clear_error();
    gad_call_site_leave(prev);
    /* without a site: no file, no line, the text as always */
    CHECK((gad_matmul)(x, x) == NULL);
    e = gad_last_error();
    CHECK(e && e->file == NULL && e->line == 0 && !strstr(e->text, " (at "));
    gad_clear_error();
    /* gad_error_set records where the program called it */
    int line = __LINE__ + 1;
    CHECK(gad_error_set(GAD_ERR_SHAPE, "mine", "bad %d", 3) == NULL);
    check_site("mine", line);
    /* a long path is cut from the left */
    prev = gad_call_site_enter("/a/very/long/path/that/goes/on/and/on/and/on/and/on/and/on/and/"
                               "on/and/on/and/on/and/on/and/on/and/on/and/on/and/on/and/on/end.c",
                               12);
    CHECK((gad_matmul)(x, x) == NULL);
    gad_call_site_leave(prev);
    e = gad_last_error();
    CHECK(e && strstr(e->text, " (at ...") && strstr(e->text, "/and/on/end.c:12)"));
    CHECK(e && e->line == 12);
    gad_clear_error();
    /* a message that fills the record gives way to the site */
    char longmsg[400];
    memset(longmsg, 'm', sizeof longmsg - 1); /* filler */
    longmsg[sizeof longmsg - 1] = 0;
    line = __LINE__ + 1;
    CHECK(gad_error_set(GAD_ERR_DOMAIN, "long", "%s", longmsg) == NULL);
    e = gad_last_error();
    CHECK(e && strlen(e->text) < sizeof e->text && strlen(e->message) == sizeof e->message - 1);
    check_site("long", line);
    /* taking a function's address is not a call: no macro there */
    gad_tensor *(*fp)(gad_tensor *) = gad_neg;
    CHECK(fp(x) != NULL);
    gad_scope_end();
}

/* Sites are per thread: another thread's errors carry its own. */
static int thread_line;
static void *thread_main(void *arg) {
    (void)arg;
    gad_scope_begin();
    gad_tensor *a = m23();
    thread_line = __LINE__ + 1;
    gad_tensor *y = gad_matmul(a, a);
    const gad_error *e = gad_last_error();
    int ok = !y && e && e->line == thread_line;
    gad_scope_end();
    return ok ? arg : NULL;
}

TEST(sites_are_per_thread) {
    gad_call_site prev = gad_call_site_enter("main_thread.c", 1);
    pthread_t th;
    int tag = 1;
    void *ret = NULL;
    CHECK(pthread_create(&th, NULL, thread_main, &tag) == 0 && pthread_join(th, &ret) == 0);
    CHECK(ret == &tag);
    CHECK(!gad_last_error()); /* its error stayed in that thread */
    gad_call_site_leave(prev);
}

/* ---------------------------------------------------------- the list */

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

/* Blank out C comments (keeping the length), so that names in prose do
 * not count. */
static void strip_comments(char *s) {
    for (char *p = s; *p; p++) {
        if (p[0] == '/' && p[1] == '*') {
            char *e = strstr(p + 2, "*/");
            char *end = e ? e + 2 : p + strlen(p);
            memset(p, ' ', (size_t)(end - p));
            p = end - 1;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') *p++ = ' ';
            if (!*p) break;
        }
    }
}

TEST(every_function_of_gad_h_has_its_macro) {
    char *h = read_all(GAD_SOURCE_DIR "/include/gad.h");
    char *w = read_all(GAD_SOURCE_DIR "/include/gad_call_sites.h");
    CHECK(h && w);
    if (!h || !w) {
        free(h), free(w);
        return;
    }
    strip_comments(h);
    static const char *const exempt[] = {"gad_call_site_enter", "gad_call_site_leave",
                                         "gad_error_set_at"};
    int functions = 0, missing = 0;
    for (char *p = h; (p = strstr(p, "gad_")) != NULL; p++) {
        if (p > h && (p[-1] == '_' || isalnum((unsigned char)p[-1]))) continue;
        size_t n = 4;
        while (p[n] == '_' || isalnum((unsigned char)p[n])) n++;
        if (p[n] != '(') continue; /* a call or declaration: "gad_name(" */
        /* lines of #define bodies are macros, not declarations */
        char *bol = p;
        while (bol > h && bol[-1] != '\n') bol--;
        while (*bol == ' ') bol++;
        if (*bol == '#') continue;
        char name[64];
        if (n >= sizeof name) continue;
        memcpy(name, p, n);
        name[n] = 0;
        int skip = 0;
        for (size_t k = 0; k < sizeof exempt / sizeof *exempt; k++) skip |= !strcmp(name, exempt[k]);
        if (skip) continue;
        functions++;
        char want[96];
        snprintf(want, sizeof want, "#define %s(", name);
        if (!strstr(w, want)) {
            missing++;
            fprintf(stderr, "MISSING: %s (declared in gad.h) has no call-site macro; run "
                            "python3 tools/gen_call_sites.py\n", name);
        }
    }
    CHECK_MSG(functions >= 200, "only %d functions found in gad.h", functions);
    CHECK_MSG(missing == 0, "%d functions of gad.h lack a call-site macro", missing);
    printf("call sites: %d functions of gad.h, %d without a macro\n", functions, missing);
    free(h), free(w);
}

int main(void) {
    RUN(a_failing_call_reports_its_line);
    RUN(nested_calls_report_their_own_lines);
    RUN(callbacks_and_restoring);
    RUN(sites_are_per_thread);
    RUN(every_function_of_gad_h_has_its_macro);
    return test_summary();
}
