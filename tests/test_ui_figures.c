/* kretry ui's figures thread on the mock cluster, at a fast pace: while
 * nobody watches it takes one round per idle interval, not one per
 * interval; a watcher brings the interval back; a request after a quiet
 * spell wakes it and gets figures taken after it arrived. */
#include "diag.h"
#include "testutil.h"
#include "ui_figures.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define INTERVAL_MS 200
#define IDLE_MS 60000 /* no idle round falls inside the test */
#define WATCH_MS 600

typedef struct {
        kt_cluster_t *c;
        char yaml[256];
        kretry_topology_file_t *f;
        ui_figures_t *g;
} env_t;

static void nap_ms(int64_t ms) {
        struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
        while (nanosleep(&ts, &ts) == -1)
                ;
}

static env_t *env_new(void) {
        env_t *e = calloc(1, sizeof(*e));
        char source[128], group[128], name[256];
        kretry_diags_t d;
        ui_figures_pace_t pace = {INTERVAL_MS, IDLE_MS, WATCH_MS};
        e->c                   = kt_cluster_new(1);
        KT_REQUIRE(kt_cluster_topic(e->c, "orders", 2, source,
                                    sizeof(source)) == 0);
        kt_unique_name("svc", group, sizeof(group));
        snprintf(name, sizeof(name), "%s.retry.1", source);
        KT_REQUIRE(kt_cluster_topic_named(e->c, name, 2) == 0);
        snprintf(name, sizeof(name), "%s.dlq", source);
        KT_REQUIRE(kt_cluster_topic_named(e->c, name, 2) == 0);
        snprintf(e->yaml, sizeof(e->yaml), "/tmp/kretry-ui-figures-%d-%s.yaml",
                 (int)getpid(), group);
        kt_write_topology(e->c, e->yaml, source, group, "[1s]", "");
        kretry_diags_init(&d);
        e->f = kretry_topology_file_load(e->yaml, &d);
        kretry_diags_clear(&d);
        KT_REQUIRE(e->f != NULL);
        e->g = ui_figures_start(e->f, kt_cluster_bootstrap(e->c), 0, 5000,
                                &pace);
        KT_REQUIRE(e->g != NULL);
        return e;
}

static void env_destroy(env_t *e) {
        ui_figures_stop(e->g);
        kretry_topology_file_destroy(e->f);
        unlink(e->yaml);
        kt_cluster_destroy(e->c);
        free(e);
}

/* The first round, then @p ms with nobody watching: no further round
 * (every interval would be 10 of them). */
static void test_idle_rounds(void) {
        env_t *e      = env_new();
        int64_t until = kt_wall_ms() + 10000;
        while (!ui_figures_rounds(e->g) && kt_wall_ms() < until)
                nap_ms(20);
        KT_ASSERT_INT_EQ(ui_figures_rounds(e->g), 1);
        nap_ms(10 * INTERVAL_MS);
        KT_ASSERT_INT_EQ(ui_figures_rounds(e->g), 1);
        env_destroy(e);
}

/* Watched every interval for 10 intervals: rounds at the interval (at
 * least 4 of the 10 on a loaded machine); then quiet again once the
 * watch window has passed. */
static void test_watched_rounds(void) {
        env_t *e      = env_new();
        int64_t until = kt_wall_ms() + 10000;
        while (!ui_figures_rounds(e->g) && kt_wall_ms() < until)
                nap_ms(20);
        uint64_t before = ui_figures_rounds(e->g);
        for (int i = 0; i < 10; i++) {
                ui_figures_watch(e->g);
                nap_ms(INTERVAL_MS);
        }
        uint64_t watched = ui_figures_rounds(e->g) - before;
        KT_CHECK_MSG(watched >= 4, CU_FALSE, "%llu rounds while watched",
                     (unsigned long long)watched);
        nap_ms(WATCH_MS + 2 * INTERVAL_MS); /* the window passes */
        before = ui_figures_rounds(e->g);
        nap_ms(10 * INTERVAL_MS);
        KT_ASSERT_INT_EQ(ui_figures_rounds(e->g), before);
        env_destroy(e);
}

/* A request after a quiet spell: answered with a round taken after it
 * arrived (not the idle one), promptly. */
static void test_request_wakes(void) {
        env_t *e = env_new();
        char errstr[256];
        int64_t at;
        int64_t until = kt_wall_ms() + 10000;
        while (!ui_figures_rounds(e->g) && kt_wall_ms() < until)
                nap_ms(20);
        nap_ms(5 * INTERVAL_MS);
        KT_ASSERT(!ui_figures_fresh(e->g));
        int64_t asked = kt_wall_ms();
        json_t *j     = ui_figures_reports(e->g, NULL, 10000, &at, errstr,
                                           sizeof(errstr));
        int64_t took  = kt_wall_ms() - asked;
        KT_CHECK_MSG(j != NULL, CU_FALSE, "%s", errstr);
        KT_ASSERT_INT_EQ(ui_figures_rounds(e->g), 2);
        KT_CHECK_MSG(at >= asked, CU_FALSE,
                     "figures taken %lld ms before the request",
                     (long long)(asked - at));
        KT_CHECK_MSG(took < 5000, CU_FALSE, "answered after %lld ms",
                     (long long)took);
        KT_ASSERT(ui_figures_fresh(e->g));
        json_decref(j);
        env_destroy(e);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_idle_rounds),
                                          KT_TEST(test_watched_rounds),
                                          KT_TEST(test_request_wakes), KT_END};
        return kt_main("ui_figures", tests, argc, argv);
}
