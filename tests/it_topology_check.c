/*
 * The topology check before an adapter starts (topology.check): on the
 * test cluster, a chain whose tier has fewer partitions than the source,
 * whose tier, DLQ or version changelog is missing, or (real Kafka only)
 * whose changelog is not compacted, is refused with one error per problem
 * naming the fix — by kretry_adapter_new() here, by `kretry run` here and
 * in blackbox_topology_check.py — and the check itself creates no topic
 * (the mock cluster auto-creates any topic a Metadata request names).
 */
#include "it_harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Log lines at warning or worse, kept for the test to read. */
static char logged[8192];

static void keep_log(kretry_log_level_t level,
                     const char *fac,
                     const char *msg,
                     void *opaque) {
        (void)opaque;
        size_t len = strlen(logged);
        if (level <= KRETRY_LOG_WARNING && len < sizeof(logged))
                snprintf(logged + len, sizeof(logged) - len, "%s: %s\n", fac,
                         msg);
}

/* Does the cluster list @p topic? Reads every topic's metadata, which
 * creates none. */
static int topic_exists(it_env_t *env, const char *topic) {
        char errstr[256];
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_PRODUCER, kt_rdkafka_conf(env->c), errstr,
                             sizeof(errstr));
        KT_REQUIRE(rk != NULL);
        const struct rd_kafka_metadata *md = NULL;
        KT_REQUIRE(rd_kafka_metadata(rk, 1, NULL, &md, 5000) == 0);
        int found = 0;
        for (int i = 0; i < md->topic_cnt; i++)
                found |= !strcmp(md->topics[i].topic, topic);
        rd_kafka_metadata_destroy(md);
        rd_kafka_destroy(rk);
        return found;
}

/* Tier 2 with one partition where the source has 4, tier 3 missing. */
static it_env_t *misshaped(char *tier2, char *tier3, size_t size) {
        it_env_t *env = it_env_new("50ms", 4);
        snprintf(tier2, size, "%s.retry.2", env->source);
        snprintf(tier3, size, "%s.retry.3", env->source);
        KT_REQUIRE(kt_cluster_topic_named(env->c, tier2, 1) == 0);
        return env;
}

static void test_fewer_partitions_refused(void) {
        char tier2[200], tier3[200], err[4096], want[512];
        it_env_t *env = misshaped(tier2, tier3, sizeof(tier2));
        kretry_conf_t *conf =
                it_conf(env, "retry.tiers", "50ms,100ms,200ms", NULL);
        logged[0] = '\0';
        kretry_conf_set_log_cb(conf, keep_log, NULL);
        kretry_adapter_t *a = kretry_adapter_new(conf, err, sizeof(err));
        KT_REQUIRE(a == NULL);
        snprintf(want, sizeof(want),
                 "tier 2 topic %s has 1 partition, fewer than the source %s "
                 "(4)",
                 tier2, env->source);
        KT_CHECK_MSG(strstr(err, want) != NULL, CU_FALSE,
                     "expected \"%s\" in: %s", want, err);
        KT_ASSERT(strstr(err, "kretry topology apply") != NULL);
        snprintf(want, sizeof(want), "tier 3 topic %s does not exist", tier3);
        KT_CHECK_MSG(strstr(err, want) != NULL, CU_FALSE,
                     "expected \"%s\" in: %s", want, err);
        /* The tiers that fit are not reported; the check created nothing. */
        KT_ASSERT(strstr(err, ".retry.1 ") == NULL);
        KT_ASSERT(!topic_exists(env, tier3));
        kretry_conf_destroy(conf);
        it_env_destroy(env);
}

/* topology.check=warn: the problems are logged and the adapter starts. */
static void test_warn_starts(void) {
        char tier2[200], tier3[200], err[4096];
        it_env_t *env       = misshaped(tier2, tier3, sizeof(tier2));
        kretry_conf_t *conf = it_conf(env, "retry.tiers", "50ms,100ms",
                                      "topology.check", "warn", NULL);
        logged[0]           = '\0';
        kretry_conf_set_log_cb(conf, keep_log, NULL);
        kretry_adapter_t *a = kretry_adapter_new(conf, err, sizeof(err));
        KT_REQUIRE(a != NULL);
        KT_ASSERT(strstr(logged, "TOPOLOGY: tier 2 topic") != NULL);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* A configuration for a cluster nobody listens at, group @p group, then
 * @p name = @p value. */
static kretry_conf_t *
offline_conf(const char *group, const char *name, const char *value) {
        kretry_conf_t *conf = kretry_conf_new();
        KT_REQUIRE(conf != NULL);
        kretry_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", NULL, 0);
        kretry_conf_set(conf, "group.id", group, NULL, 0);
        kretry_conf_set(conf, "source.topic", "orders", NULL, 0);
        kretry_conf_set(conf, name, value, NULL, 0);
        kretry_conf_set_handler(conf, it_handler, NULL);
        return conf;
}

/* A cluster that does not answer: refused within the check's timeout. */
static void test_no_cluster(void) {
        char err[4096];
        kretry_conf_t *conf =
                offline_conf("g", "topology.check.timeout.ms", "300");
        int64_t t0          = kt_now_ms();
        kretry_adapter_t *a = kretry_adapter_new(conf, err, sizeof(err));
        KT_REQUIRE(a == NULL);
        KT_CHECK_MSG(strstr(err, "cannot read the cluster's metadata within "
                                 "300 ms") != NULL,
                     CU_FALSE, "got: %s", err);
        KT_ASSERT(kt_now_ms() - t0 < 3000);
        kretry_conf_destroy(conf);
}

/* A group id that makes an illegal changelog name is refused before any
 * client exists, with the name and the rule. */
static void test_changelog_name_refused(void) {
        char err[4096];
        kretry_conf_t *conf =
                offline_conf("team:orders", "versioning.header", "version");
        KT_REQUIRE(kretry_adapter_new(conf, err, sizeof(err)) == NULL);
        KT_CHECK_MSG(strstr(err, "group.id \"team:orders\" makes no valid "
                                 "Kafka topic name (1..249 of a-z A-Z 0-9 . "
                                 "_ -)") != NULL,
                     CU_FALSE, "got: %s", err);
        kretry_conf_destroy(conf);
}

/* kretry_adapter_new() with @p conf refused, its error naming @p problem
 * and the fix and nothing about the tiers that fit; @p missing still absent
 * afterwards: the check asked for no topic by name (the mock cluster
 * creates any topic a Metadata request names; real Kafka here too, with
 * auto.create.topics.enable). */
static void expect_refused(it_env_t *env,
                           kretry_conf_t *conf,
                           const char *problem,
                           const char *missing) {
        char err[4096];
        kretry_adapter_t *a = kretry_adapter_new(conf, err, sizeof(err));
        if (a)
                kretry_adapter_destroy(a);
        else
                kretry_conf_destroy(conf);
        KT_CHECK_MSG(!topic_exists(env, missing), CU_FALSE,
                     "%s exists after the check", missing);
        KT_CHECK_MSG(a == NULL, CU_TRUE, "started; expected refused with: %s",
                     problem);
        KT_CHECK_MSG(strstr(err, problem) != NULL, CU_FALSE,
                     "expected \"%s\" in: %s", problem, err);
        KT_CHECK_MSG(strstr(err, "run `kretry topology apply FILE`") != NULL,
                     CU_FALSE, "expected the fix in: %s", err);
        KT_CHECK_MSG(strstr(err, "tier 1 ") == NULL, CU_FALSE,
                     "a tier that fits reported: %s", err);
}

/* A DLQ that does not exist: refused, and the check did not create it. */
static void test_missing_dlq_refused(void) {
        char dlq[200], want[512];
        it_env_t *env = it_env_new("50ms", 2);
        snprintf(dlq, sizeof(dlq), "%s.dead", env->source);
        kretry_conf_t *conf = it_conf(env, "dlq.topic", dlq, NULL);
        snprintf(want, sizeof(want), "DLQ topic %s does not exist", dlq);
        expect_refused(env, conf, want, dlq);
        it_env_destroy(env);
}

/* Versioning on, its changelog missing: refused, and not created. */
static void test_missing_changelog_refused(void) {
        char vt[300], want[512];
        it_env_t *env = it_env_new("50ms", 2);
        snprintf(vt, sizeof(vt), "%s.%s.versions", env->group, env->source);
        kretry_conf_t *conf =
                it_conf(env, "versioning.header", "version", NULL);
        snprintf(want, sizeof(want),
                 "version changelog topic %s does not exist", vt);
        expect_refused(env, conf, want, vt);
        it_env_destroy(env);
}

/* park_key without its parked keys' topic: refused, naming it. */
static void test_missing_parked_refused(void) {
        char pt[300], want[512];
        it_env_t *env = it_env_new("50ms", 2);
        snprintf(pt, sizeof(pt), "%s.%s.parked", env->group, env->source);
        kretry_conf_t *conf =
                it_conf(env, "ordering", "key", "ordering.on.dead.letter",
                        "park_key", NULL);
        snprintf(want, sizeof(want), "parked-keys topic %s does not exist", pt);
        expect_refused(env, conf, want, pt);
        it_env_destroy(env);
}

/* The mock cluster cannot answer DescribeConfigs: the changelog's
 * cleanup.policy is unknown, which is a warning, at once, and the adapter
 * starts. */
static void test_changelog_policy_unknown(void) {
        char vt[300], err[4096];
        it_env_t *env = it_env_new("50ms", 2);
        if (!kt_cluster_mock(env->c)) {
                kt_skip("needs the mock cluster (it cannot answer "
                        "DescribeConfigs; a real one does); on real Kafka: "
                        "it_topology_check."
                        "test_changelog_not_compacted_refused");
                it_env_destroy(env);
                return;
        }
        snprintf(vt, sizeof(vt), "%s.%s.versions", env->group, env->source);
        KT_REQUIRE(kt_cluster_topic_named(env->c, vt, 2) == 0);
        kretry_conf_t *conf =
                it_conf(env, "versioning.header", "version", NULL);
        logged[0] = '\0';
        kretry_conf_set_log_cb(conf, keep_log, NULL);
        int64_t t0          = kt_now_ms();
        kretry_adapter_t *a = kretry_adapter_new(conf, err, sizeof(err));
        KT_CHECK_MSG(a != NULL, CU_TRUE, "refused: %s", err);
        KT_ASSERT(strstr(logged, "cannot tell whether version "
                                 "changelog") != NULL);
        KT_ASSERT(kt_now_ms() - t0 < 3000);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* On real Kafka (the mock cluster cannot answer DescribeConfigs, so only a
 * real cluster can prove this): a changelog created with delete cleanup
 * is refused. */
static void test_changelog_not_compacted_refused(void) {
        char vt[300], err[4096], want[512];
        if (!kt_real_only("the mock cluster cannot answer DescribeConfigs, so "
                          "cleanup.policy is unknown there "
                          "(test_changelog_policy_unknown)"))
                return;
        it_env_t *env = it_env_new("50ms", 2);
        snprintf(vt, sizeof(vt), "%s.%s.versions", env->group, env->source);
        /* Not kt_cluster_changelog(): this one must have delete cleanup. */
        KT_REQUIRE(kt_cluster_topic_named(env->c, vt, 2) == 0);
        kretry_conf_t *conf =
                it_conf(env, "versioning.header", "version", NULL);
        kretry_adapter_t *a = kretry_adapter_new(conf, err, sizeof(err));
        if (a)
                kretry_adapter_destroy(a);
        else
                kretry_conf_destroy(conf);
        KT_CHECK_MSG(a == NULL, CU_TRUE, "started with %s not compacted", vt);
        snprintf(want, sizeof(want),
                 "version changelog %s is not compacted: its cleanup.policy "
                 "must be compact",
                 vt);
        KT_CHECK_MSG(strstr(err, want) != NULL, CU_FALSE,
                     "expected \"%s\" in: %s", want, err);
        it_env_destroy(env);
}

/* `kretry run` exits non-zero, naming the tier and the fix. */
static void test_kretry_run_refuses(void) {
        char tier2[200], tier3[200], want[512], path[64], out[8192];
        it_env_t *env = misshaped(tier2, tier3, sizeof(tier2));
        snprintf(path, sizeof(path), "/tmp/it_topology_check-%d.yaml",
                 (int)getpid());
        kt_write_topology(env->c, path, env->source, env->group,
                          "[50ms, 100ms]", "");
        const char *argv[] = {"kretry", "run",  "--topology", path,
                              "--exec", "true", NULL};
        int rc             = kt_run(KRETRY_CLI_PATH, argv, 1, out, sizeof(out));
        unlink(path);
        KT_ASSERT(rc != 0 && rc != -1);
        snprintf(want, sizeof(want), "tier 2 topic %s has 1 partition", tier2);
        KT_CHECK_MSG(strstr(out, want) != NULL, CU_FALSE,
                     "expected \"%s\" in: %s", want, out);
        snprintf(want, sizeof(want), "`kretry topology apply %s`", path);
        KT_CHECK_MSG(strstr(out, want) != NULL, CU_FALSE,
                     "expected \"%s\" in: %s", want, out);
        it_env_destroy(env);
}

/* On real Kafka, what an operator does: `kretry topology apply` grows the
 * short tier, creates the missing one and sets every topic's retention,
 * and returns only once the cluster shows it all: a `kretry topology plan`
 * right after finds nothing to do, and an adapter started right after
 * passes its check. (Kafka answers CreatePartitions and AlterConfigs
 * before every broker shows the change; the mock has no admin API.) */
static void test_apply_then_start(void) {
        char tier2[200], tier3[200], path[64], out[8192], err[4096];
        if (!kt_real_only(NULL))
                return;
        it_env_t *env = misshaped(tier2, tier3, sizeof(tier2));
        snprintf(path, sizeof(path), "/tmp/it_topology_check-%d.yaml",
                 (int)getpid());
        kt_write_topology(env->c, path, env->source, env->group,
                          "[50ms, 100ms, 200ms]",
                          "    topics: { retention: 2d }\n");
        const char *apply[] = {"kretry", "topology", "apply",
                               "--yes",  path,       NULL};
        int rc = kt_run(KRETRY_CLI_PATH, apply, 1, out, sizeof(out));
        KT_CHECK_MSG(rc == 0, CU_TRUE, "apply exited %d: %s", rc, out);
        const char *plan[] = {"kretry", "topology", "plan", path, NULL};
        rc                 = kt_run(KRETRY_CLI_PATH, plan, 1, out, sizeof(out));
        unlink(path);
        KT_CHECK_MSG(rc == 0 && strstr(out, "nothing to do") != NULL, CU_FALSE,
                     "plan right after apply (exit %d): %s", rc, out);
        kretry_conf_t *conf =
                it_conf(env, "retry.tiers", "50ms,100ms,200ms", NULL);
        kretry_adapter_t *a = kretry_adapter_new(conf, err, sizeof(err));
        KT_CHECK_MSG(a != NULL, CU_FALSE, "refused right after apply: %s", err);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* A topology whose source does not exist yet: the source takes the
 * cluster's default max.message.bytes, unknown to the first plan, so
 * apply raises the new tiers' and DLQ's by the copies' headroom once the
 * cluster shows it (before, a second apply was needed and kretry run
 * warned at every start): a plan right after finds nothing to do. */
static void test_apply_new_source(void) {
        char src[220], path[64], out[8192];
        if (!kt_real_only(NULL))
                return;
        it_env_t *env = it_env_new("50ms", 1);
        snprintf(src, sizeof(src), "%s-new", env->source);
        snprintf(path, sizeof(path), "/tmp/it_topology_check-%d.yaml",
                 (int)getpid());
        kt_write_topology(env->c, path, src, env->group, "[50ms]",
                          "    topics: { partitions: 2 }\n");
        const char *apply[] = {"kretry", "topology", "apply",
                               "--yes",  path,       NULL};
        int rc = kt_run(KRETRY_CLI_PATH, apply, 1, out, sizeof(out));
        KT_CHECK_MSG(rc == 0 && strstr(out, "raising its tiers' and DLQ's"),
                     CU_FALSE, "apply exited %d: %s", rc, out);
        const char *plan[] = {"kretry", "topology", "plan", path, NULL};
        rc                 = kt_run(KRETRY_CLI_PATH, plan, 1, out, sizeof(out));
        unlink(path);
        KT_CHECK_MSG(rc == 0 && strstr(out, "nothing to do") != NULL, CU_FALSE,
                     "plan right after apply (exit %d): %s", rc, out);
        it_env_destroy(env);
}

/* A chain (source, one tier, DLQ; 4 partitions) created or (@p del)
 * deleted in one admin request, returning as soon as the broker answers:
 * no wait until the brokers list it. */
static void chain_admin(it_env_t *env, char names[3][200], int del) {
        char errstr[256];
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_PRODUCER, kt_rdkafka_conf(env->c), errstr,
                             sizeof(errstr));
        KT_REQUIRE(rk != NULL);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_NewTopic_t *nt[3];
        rd_kafka_DeleteTopic_t *dt[3];
        for (int i = 0; i < 3; i++) {
                if (del) {
                        dt[i] = rd_kafka_DeleteTopic_new(names[i]);
                        continue;
                }
                nt[i] = rd_kafka_NewTopic_new(names[i], 4, -1, errstr,
                                              sizeof(errstr));
                rd_kafka_NewTopic_set_config(nt[i], "max.message.bytes",
                                             i ? "8519680" : "8388608");
        }
        if (del)
                rd_kafka_DeleteTopics(rk, dt, 3, NULL, q);
        else
                rd_kafka_CreateTopics(rk, nt, 3, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
        KT_CHECK_MSG(ev && !rd_kafka_event_error(ev), CU_TRUE, "%s %s: %s",
                     del ? "delete" : "create", names[0],
                     ev ? rd_kafka_event_error_string(ev) : "no answer");
        rd_kafka_event_destroy(ev);
        if (del)
                rd_kafka_DeleteTopic_destroy_array(dt, 3);
        else
                rd_kafka_NewTopic_destroy_array(nt, 3);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
}

/* On real Kafka: an adapter started the moment CreateTopics has answered
 * starts, ten times out of ten. The broker lists a new topic in its
 * metadata a moment after it answers (a bench run was refused: "source
 * topic ... does not exist"; without the second look, most rounds here
 * were); the topology check looks again for up to 2 s before it refuses. */
static void test_start_right_after_create(void) {
        enum { ROUNDS = 10 };
        if (!kt_real_only(NULL))
                return;
        it_env_t *env = it_env_new("50ms", 1);
        int started   = 0;
        for (int round = 0; round < ROUNDS; round++) {
                char names[3][200], err[4096];
                kt_unique_name("fresh", names[0], sizeof(names[0]));
                snprintf(names[1], sizeof(names[1]), "%s.retry.1", names[0]);
                snprintf(names[2], sizeof(names[2]), "%s.dlq", names[0]);
                chain_admin(env, names, 0);
                kretry_conf_t *conf = it_conf(env, "source.topic", names[0],
                                              "retry.tiers", "50ms", NULL);
                kretry_adapter_t *a =
                        kretry_adapter_new(conf, err, sizeof(err));
                if (a)
                        started++;
                else
                        fprintf(stderr, "  round %d: %s\n", round + 1, err);
                if (a)
                        kretry_adapter_destroy(a);
                else
                        kretry_conf_destroy(conf);
                chain_admin(env, names, 1);
        }
        KT_ASSERT_INT_EQ(started, ROUNDS);
        it_env_destroy(env);
}

/* The broker cuts the check's connection while its Metadata request is out
 * (on a loaded machine, a broker that drops a connection answers "Broker
 * transport failure"): the check asks again within its bound and the
 * adapter starts. Before, topology.check=fail refused to start on the first
 * such error. */
struct cut {
        rd_kafka_mock_cluster_t *mock;
        int done;
};

static void *cut_connection(void *arg) {
        struct cut *cut = arg;
        /* The Metadata requests wait 2 s for their answers (set below);
         * the cut falls inside that wait. */
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
        rd_kafka_mock_broker_set_down(cut->mock, 1);
        rd_kafka_mock_broker_set_rtt(cut->mock, 1, 0);
        rd_kafka_mock_broker_set_up(cut->mock, 1);
        __atomic_store_n(&cut->done, 1, __ATOMIC_RELEASE);
        return NULL;
}

static void test_connection_lost_asks_again(void) {
        it_env_t *env = it_env_new("50ms", 1);
        rd_kafka_mock_cluster_t *mock =
                it_mock_or_skip(env, "test_start_right_after_create starts "
                                     "on a real broker; the mock alone can "
                                     "cut a connection mid-request");
        if (!mock)
                return;
        char err[4096];
        kretry_conf_t *conf =
                it_conf(env, "retry.tiers", "50ms", "topology.check", "fail",
                        "topology.check.timeout.ms", "10000", NULL);
        KT_REQUIRE(rd_kafka_mock_broker_set_rtt(mock, 1, 2000) == 0);
        struct cut cut = {mock, 0};
        pthread_t t;
        KT_REQUIRE(pthread_create(&t, NULL, cut_connection, &cut) == 0);
        kretry_adapter_t *a = kretry_adapter_new(conf, err, sizeof(err));
        pthread_join(t, NULL);
        KT_CHECK_MSG(a != NULL, CU_TRUE, "refused: %s", err);
        KT_ASSERT(__atomic_load_n(&cut.done, __ATOMIC_ACQUIRE));
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_fewer_partitions_refused),
                KT_TEST(test_warn_starts),
                KT_TEST(test_no_cluster),
                KT_TEST(test_changelog_name_refused),
                KT_TEST(test_missing_dlq_refused),
                KT_TEST(test_missing_changelog_refused),
                KT_TEST(test_missing_parked_refused),
                KT_TEST(test_changelog_policy_unknown),
                KT_TEST(test_changelog_not_compacted_refused),
                KT_TEST(test_kretry_run_refuses),
                KT_TEST(test_apply_then_start),
                KT_TEST(test_apply_new_source),
                KT_TEST(test_start_right_after_create),
                KT_TEST(test_connection_lost_asks_again),
                KT_END};
        return kt_main("it_topology_check", tests, argc, argv);
}
