/*
 * Topology files: every case under tests/topology/{valid,invalid} is loaded
 * and its rendered diagnostics compared with <case>.expected beside it
 * (paths shown as the bare file name). Valid cases without .expected must
 * load without any diagnostic. KRETRY_GOLDEN_WRITE=1 writes missing
 * .expected files (review them before committing).
 */
#include "testutil.h"
#include "topology.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_DIR KRETRY_SOURCE_DIR "/tests/topology"

static char *slurp(const char *path) {
        FILE *fp = fopen(path, "rb");
        if (!fp)
                return NULL;
        char *buf = calloc(1, 65536);
        size_t n  = buf ? fread(buf, 1, 65535, fp) : 0;
        fclose(fp);
        while (buf && n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        return buf;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.yaml names in @p dir, sorted; returns the count. */
static size_t cases(const char *dir, char ***namesp) {
        DIR *d       = opendir(dir);
        char **names = NULL;
        size_t n     = 0;
        struct dirent *e;
        while (d && (e = readdir(d))) {
                size_t len = strlen(e->d_name);
                if (len < 6 || strcmp(e->d_name + len - 5, ".yaml"))
                        continue;
                names      = realloc(names, (n + 1) * sizeof(*names));
                names[n++] = strdup(e->d_name);
        }
        if (d)
                closedir(d);
        qsort(names, n, sizeof(*names), cmp_str);
        *namesp = names;
        return n;
}

static void run_case(const char *dir, const char *name, int valid) {
        char path[1024], exp_path[1024], got[16384];
        kretry_diags_t d;
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        snprintf(exp_path, sizeof(exp_path), "%.*s.expected",
                 (int)(strlen(path) - 5), path);
        kretry_diags_init(&d);
        kretry_topology_file_t *f = kretry_topology_file_load(path, &d);
        kretry_diags_render(&d, name, 0, got, sizeof(got));
        KT_CHECK_MSG(valid ? f != NULL : f == NULL, CU_FALSE,
                     "%s must be %s; diagnostics:\n%.1500s", name,
                     valid ? "valid" : "refused", got);
        char *exp = slurp(exp_path);
        if (!exp && getenv("KRETRY_GOLDEN_WRITE") && (!valid || d.cnt)) {
                FILE *fp = fopen(exp_path, "w");
                if (fp) {
                        fprintf(fp, "%s\n", got);
                        fclose(fp);
                }
        }
        KT_CHECK_MSG(exp || (valid && !d.cnt), CU_FALSE,
                     "%s: no .expected; got:\n%.1500s", name, got);
        if (exp)
                KT_CHECK_MSG(!strcmp(exp, got), CU_FALSE,
                             "%s:\nexpected:\n%.900s\ngot:\n%.900s", name, exp,
                             got);
        /* An invalid case must point at a line and column. */
        for (size_t i = 0; !valid && i < d.cnt; i++)
                KT_CHECK_MSG(d.items[i].line > 0 && d.items[i].col > 0,
                             CU_FALSE, "%s: diagnostic without position: %s",
                             name, d.items[i].text);
        free(exp);
        kretry_topology_file_destroy(f);
        kretry_diags_clear(&d);
}

static void run_dir(const char *dir, int valid, size_t min_cases) {
        char **names;
        unsetenv("KRETRY_TEST_UNDEFINED_BOOTSTRAP");
        unsetenv("KRETRY_TEST_UNDEFINED_SOURCE");
        unsetenv("KRETRY_TEST_UNDEFINED_GROUP");
        size_t n = cases(dir, &names);
        KT_CHECK_MSG(n >= min_cases, CU_FALSE, "%s: %zu cases", dir, n);
        for (size_t i = 0; i < n; i++) {
                run_case(dir, names[i], valid);
                free(names[i]);
        }
        free(names);
}

static void test_invalid_files(void) {
        run_dir(GOLDEN_DIR "/invalid", 0, 30);
}

static void test_valid_files(void) {
        run_dir(GOLDEN_DIR "/valid", 1, 4);
}

static void test_examples_validate(void) {
        char **names;
        const char *dir = KRETRY_SOURCE_DIR "/topology/examples";
        size_t n        = cases(dir, &names);
        KT_ASSERT(n >= 2);
        for (size_t i = 0; i < n; i++) {
                char path[1024], got[4096];
                kretry_diags_t d;
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                kretry_diags_init(&d);
                kretry_topology_file_t *f = kretry_topology_file_load(path, &d);
                kretry_diags_render(&d, names[i], 0, got, sizeof(got));
                KT_CHECK_MSG(f && d.cnt == 0, CU_FALSE, "%s:\n%.1500s",
                             names[i], got);
                kretry_topology_file_destroy(f);
                kretry_diags_clear(&d);
                free(names[i]);
        }
        free(names);
}

static void test_missing_file(void) {
        kretry_diags_t d;
        char got[1024];
        kretry_diags_init(&d);
        KT_ASSERT(!kretry_topology_file_load(GOLDEN_DIR "/no-such-file.yaml",
                                             &d));
        kretry_diags_render(&d, "no-such-file.yaml", 0, got, sizeof(got));
        KT_ASSERT_STR_EQ(got, "no-such-file.yaml: cannot open: No such file "
                              "or directory");
        kretry_diags_clear(&d);
}

static kretry_topology_file_t *parse(const char *yaml, kretry_diags_t *d) {
        kretry_diags_init(d);
        return kretry_topology_file_parse(yaml, strlen(yaml), "t.yaml", d);
}

/* The worst case reuses the last tier and adds jitter to every delay. */
static void test_worst_case(void) {
        kretry_diags_t d;
        kretry_topology_file_t *f = parse(
                "topologies:\n"
                "  - source: o\n    group: g\n"
                "    retry: { tiers: [1s, 10s, 1m, 10m], max_attempts: 6, "
                "jitter: 20% }\n"
                "  - source: p\n    group: g\n"
                "    retry: { tiers: [1s, 10s], max_attempts: 1 }\n"
                "  - source: q\n    group: g\n"
                "    retry: { tiers: [1s, 10s, 1m] }\n",
                &d);
        KT_REQUIRE(f != NULL);
        /* 1s + 10s + 1m + 10m + 10m = 1271s, +20% */
        KT_ASSERT_INT_EQ(
                kretry_topology_worst_case_ms(kretry_topology_at(f, 0)),
                1525200);
        KT_ASSERT_INT_EQ(
                kretry_topology_worst_case_ms(kretry_topology_at(f, 1)), 0);
        /* default max_attempts = tiers + 1: 1s + 10s + 1m, +10% */
        KT_ASSERT_INT_EQ(
                kretry_topology_worst_case_ms(kretry_topology_at(f, 2)), 78100);
        KT_ASSERT_INT_EQ(kretry_topology_at(f, 2)->max_attempts, 4);
        kretry_topology_file_destroy(f);
        kretry_diags_clear(&d);
}

/* Retention arithmetic at the boundary, in milliseconds: worst case 60000
 * must be < 80% of retention; 75000 * 0.8 = 60000 is refused, 75001 is
 * not (60000.8). */
static void test_retention_boundary(void) {
        const char *fmt = "topologies:\n  - source: o\n    group: g\n"
                          "    retry: { tiers: [1m], jitter: 0%% }\n"
                          "    topics: { retention: %s }\n";
        const struct {
                const char *retention;
                int valid;
        } cases[] = {{"75000ms", 0}, {"75001ms", 1}, {"74999ms", 0}, {"1d", 1}};
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char yaml[512];
                kretry_diags_t d;
                snprintf(yaml, sizeof(yaml), fmt, cases[i].retention);
                kretry_topology_file_t *f = parse(yaml, &d);
                KT_CHECK_MSG(!!f == cases[i].valid, CU_FALSE,
                             "retention %s: expected %s", cases[i].retention,
                             cases[i].valid ? "valid" : "refused");
                kretry_topology_file_destroy(f);
                kretry_diags_clear(&d);
        }
}

static void test_env_expansion(void) {
        kretry_diags_t d;
        setenv("KRETRY_TEST_SRC", "events", 1);
        setenv("KRETRY_TEST_EMPTY", "", 1);
        kretry_topology_file_t *f =
                parse("kafka:\n  bootstrap.servers: ${KRETRY_TEST_EMPTY:-h:1}\n"
                      "topologies:\n  - source: ${KRETRY_TEST_SRC}\n"
                      "    group: g$$1\n    retry: { tiers: [1s] }\n",
                      &d);
        KT_REQUIRE(f != NULL);
        const kretry_topology_t *t = kretry_topology_at(f, 0);
        KT_ASSERT_STR_EQ(t->source, "events");
        KT_ASSERT_STR_EQ(t->group, "g$1");
        KT_ASSERT_STR_EQ(t->dlq, "events.dlq");
        KT_ASSERT_STR_EQ(t->tier_topics[0], "events.retry.1");
        KT_ASSERT_STR_EQ(kretry_topology_prop_at(f, 0)->value, "h:1");
        kretry_topology_file_destroy(f);
        kretry_diags_clear(&d);
        unsetenv("KRETRY_TEST_SRC");
        unsetenv("KRETRY_TEST_EMPTY");
}

static void test_topics_list(void) {
        kretry_topology_topic_t *v = NULL;
        size_t cnt                 = 0;
        char err[512];
        KT_REQUIRE(kretry_topology_topics(KRETRY_SOURCE_DIR
                                          "/tests/topology/valid/"
                                          "shared-topics.yaml",
                                          4, &v, &cnt, err, sizeof(err)) == 0);
        /* orders once, then billing's 2 tiers + DLQ, shipping's 1 + DLQ */
        KT_ASSERT_INT_EQ(cnt, 6);
        KT_ASSERT_STR_EQ(v[0].name, "orders");
        KT_ASSERT_STR_EQ(v[1].name, "orders.billing.retry.1");
        KT_ASSERT_STR_EQ(v[3].name, "orders.billing.dlq");
        KT_ASSERT_STR_EQ(v[5].name, "orders.shipping.dlq");
        KT_ASSERT_INT_EQ(v[5].partitions, 4);
        free(v);
        KT_ASSERT(kretry_topology_topics(KRETRY_SOURCE_DIR
                                         "/tests/topology/invalid/"
                                         "jitter-range.yaml",
                                         4, &v, &cnt, err, sizeof(err)) == -1);
        KT_ASSERT(strstr(err, "jitter-range.yaml:7:15: jitter:") != NULL);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_invalid_files),
                                          KT_TEST(test_valid_files),
                                          KT_TEST(test_examples_validate),
                                          KT_TEST(test_missing_file),
                                          KT_TEST(test_worst_case),
                                          KT_TEST(test_retention_boundary),
                                          KT_TEST(test_env_expansion),
                                          KT_TEST(test_topics_list),
                                          KT_END};
        return kt_main("topology", tests, argc, argv);
}
