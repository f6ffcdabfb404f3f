#include "testutil.h"

#include <CUnit/Basic.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t kt_clock_ms(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t kt_now_ms(void) {
        return kt_clock_ms(CLOCK_MONOTONIC);
}

int64_t kt_wall_ms(void) {
        return kt_clock_ms(CLOCK_REALTIME);
}

static int kt_skipped;

void kt_skip(const char *fmt, ...) {
        CU_pTest t = CU_get_current_test();
        va_list ap;
        va_start(ap, fmt);
        printf("\nSKIPPED: %s: ", t ? t->pName : "?");
        vprintf(fmt, ap);
        printf("\n");
        fflush(stdout);
        va_end(ap);
        kt_skipped++;
}

/* Is @p name selected by argv: argv[1] alone names the one test to run;
 * "--except NAME" (repeatable) leaves NAME out. */
static int kt_selected(const char *name, int argc, char **argv) {
        if (argc > 1 && strcmp(argv[1], "--except"))
                return !strcmp(argv[1], name);
        for (int i = 1; i + 1 < argc; i += 2)
                if (!strcmp(argv[i], "--except") && !strcmp(argv[i + 1], name))
                        return 0;
        return 1;
}

int kt_main(const char *suite, const kt_test_t *tests, int argc, char **argv) {
        if (CU_initialize_registry() != CUE_SUCCESS)
                return 1;
        CU_pSuite s = CU_add_suite(suite, NULL, NULL);
        for (const kt_test_t *t = tests; t->name; t++)
                if (kt_selected(t->name, argc, argv))
                        CU_add_test(s, t->name, t->fn);
        CU_basic_set_mode(CU_BRM_VERBOSE);
        CU_basic_run_tests();
        int failed = (int)CU_get_number_of_failures();
        int ran    = (int)CU_get_number_of_tests_run();
        CU_cleanup_registry();
        if (ran == 0) {
                fprintf(stderr, "%s: no test ran\n", suite);
                return 1;
        }
        if (failed)
                return 1;
        if (kt_skipped) {
                printf("%s: %d of %d tests skipped (see SKIPPED above)\n",
                       suite, kt_skipped, ran);
                return KT_SKIPPED;
        }
        return 0;
}

struct kt_cluster_s {
        rd_kafka_t *rk; /* owns the mock cluster, NULL on a real cluster */
        rd_kafka_t *producer; /* kt_produce's, created on first use */
        rd_kafka_mock_cluster_t *mock;
        char bootstrap[512];
        char **created; /* a real cluster: topics to delete at the end */
        size_t created_cnt;
};

static struct {
        pthread_mutex_t lock;
        int64_t at[KT_TRACE_LINES];
        char line[KT_TRACE_LINES][240];
        unsigned next;
} kt_tr = {.lock = PTHREAD_MUTEX_INITIALIZER};

void kt_trace(const char *fac, const char *msg) {
        /* Asked for by the tests' own waits, many times a second. */
        if (strstr(msg, "op GET_REBALANCE_PROTOCOL"))
                return;
        pthread_mutex_lock(&kt_tr.lock);
        unsigned i  = kt_tr.next++ % KT_TRACE_LINES;
        kt_tr.at[i] = kt_wall_ms();
        snprintf(kt_tr.line[i], sizeof(kt_tr.line[i]), "%s %s", fac, msg);
        pthread_mutex_unlock(&kt_tr.lock);
}

void kt_trace_dump(const char *why, int ms) {
        pthread_mutex_lock(&kt_tr.lock);
        int64_t from = kt_wall_ms() - ms;
        unsigned n = kt_tr.next < KT_TRACE_LINES ? kt_tr.next : KT_TRACE_LINES;
        fprintf(stderr, "  [trace] %s: group debug lines of the last %d ms\n",
                why, ms);
        for (unsigned k = kt_tr.next - n; k != kt_tr.next; k++) {
                unsigned i = k % KT_TRACE_LINES;
                if (kt_tr.at[i] >= from)
                        fprintf(stderr, "  [trace %lld] %s\n",
                                (long long)(kt_tr.at[i] % 100000),
                                kt_tr.line[i]);
        }
        pthread_mutex_unlock(&kt_tr.lock);
}

/* The mock cluster's own debug lines: only those about groups and their
 * members (log appends and commits would crowd them out). */
static void
kt_mock_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
        (void)rk;
        (void)level;
        if (strstr(buf, "group") || strstr(buf, "ember"))
                kt_trace(fac, buf);
}

static void kt_fatal(const char *what, const char *detail) {
        fprintf(stderr, "test setup: %s: %s\n", what, detail);
        abort();
}

kt_cluster_t *kt_cluster_new(int brokers) {
        kt_cluster_t *c  = calloc(1, sizeof(*c));
        const char *real = getenv("KRETRY_TEST_BOOTSTRAP");
        if (real && *real) {
                snprintf(c->bootstrap, sizeof(c->bootstrap), "%s", real);
                return c;
        }
        char errstr[256];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_conf_set(conf, "log_level", "7", NULL, 0);
        rd_kafka_conf_set(conf, "debug", "mock", NULL, 0);
        rd_kafka_conf_set_log_cb(conf, kt_mock_log);
        c->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!c->rk)
                kt_fatal("rd_kafka_new", errstr);
        c->mock = rd_kafka_mock_cluster_new(c->rk, brokers);
        if (!c->mock)
                kt_fatal("mock cluster", "could not start");
        /* As the real test cluster (scripts/kafka.sh): a group's first
         * join is not held back 3 s waiting for more members. */
        rd_kafka_mock_group_initial_rebalance_delay_ms(c->mock, 0);
        snprintf(c->bootstrap, sizeof(c->bootstrap), "%s",
                 rd_kafka_mock_cluster_bootstraps(c->mock));
        return c;
}

static void kt_delete_real_topics(kt_cluster_t *c);

void kt_env_props(const char *env,
                  void (*set)(const char *name,
                              const char *value,
                              void *opaque),
                  void *opaque) {
        const char *path = getenv(env);
        if (!path || !*path)
                return;
        FILE *f = fopen(path, "r");
        if (!f)
                kt_fatal(env, path);
        char line[2048];
        while (fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\r\n")] = '\0';
                if (!line[0] || line[0] == '#')
                        continue;
                char *eq = strchr(line, '=');
                if (!eq)
                        kt_fatal(env, line);
                *eq = '\0';
                set(line, eq + 1, opaque);
        }
        fclose(f);
}

/* A property of KRETRY_TEST_KAFKA_PROPS on a test client's conf. */
static void kt_client_prop(const char *name, const char *value, void *opaque) {
        char errstr[256];
        if (rd_kafka_conf_set(opaque, name, value, errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK)
                kt_fatal(name, errstr);
}

/* A property of KRETRY_TEST_SERVICE_PROPS in a topology's kafka: section. */
static void kt_yaml_prop(const char *name, const char *value, void *opaque) {
        fprintf(opaque, "  %s: \"%s\"\n", name, value);
}

void kt_cluster_destroy(kt_cluster_t *c) {
        if (!c)
                return;
        if (c->created_cnt)
                kt_delete_real_topics(c);
        for (size_t i = 0; i < c->created_cnt; i++)
                free(c->created[i]);
        free(c->created);
        if (c->producer)
                rd_kafka_destroy(c->producer);
        if (c->mock)
                rd_kafka_mock_cluster_destroy(c->mock);
        if (c->rk)
                rd_kafka_destroy(c->rk);
        free(c);
}

const char *kt_cluster_bootstrap(const kt_cluster_t *c) {
        return c->bootstrap;
}

rd_kafka_mock_cluster_t *kt_cluster_mock(const kt_cluster_t *c) {
        return c->mock;
}

rd_kafka_mock_cluster_t *kt_mock_only(const kt_cluster_t *c,
                                      const char *on_real) {
        if (!c->mock)
                kt_skip("needs the mock cluster's fault injection; on real "
                        "Kafka: %s",
                        on_real);
        return c->mock;
}

int kt_real_only(const char *why) {
        const char *real = getenv("KRETRY_TEST_BOOTSTRAP");
        if (real && *real)
                return 1;
        kt_skip("needs a real cluster in KRETRY_TEST_BOOTSTRAP%s%s",
                why ? ": " : "", why ? why : "");
        return 0;
}

void kt_lose_assignment(rd_kafka_mock_cluster_t *mock) {
        if (kt_consumer_protocol())
                rd_kafka_mock_push_request_errors(
                        mock, KT_CONSUMER_GROUP_HEARTBEAT, 1,
                        RD_KAFKA_RESP_ERR_FENCED_MEMBER_EPOCH);
        else
                rd_kafka_mock_push_request_errors(
                        mock, 12 /* Heartbeat */, 1,
                        RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID);
}

int kt_classic_protocol(const char *why) {
        if (!kt_consumer_protocol())
                return 1;
        kt_skip("needs the classic group protocol (%s); under "
                "group.protocol=consumer the broker assigns, always "
                "incrementally",
                why);
        return 0;
}

void kt_unique_name(const char *prefix, char *name, size_t name_size) {
        static atomic_int seq;
        /* KRETRY_TEST_NAME_PREFIX: every topic and group of the run starts
         * with it, so that prefixed ACLs can grant the service exactly the
         * suites' names (scripts/test.sh's secured pass). */
        const char *all = getenv("KRETRY_TEST_NAME_PREFIX");
        if (all && !strncmp(prefix, all, strlen(all)))
                all = "";
        snprintf(name, name_size, "%s%s-%d-%lld-%d", all ? all : "", prefix,
                 (int)getpid(), (long long)(kt_wall_ms() % 100000000),
                 atomic_fetch_add(&seq, 1));
}

void kt_copy_grab(const rd_kafka_message_t *m, void *opaque) {
        kt_copies_t *cs = opaque;
        if (cs->n >= cs->max)
                return;
        kt_copy_t *c = &cs->m[cs->n++];
        memset(c, 0, sizeof(*c));
        c->key_null   = m->key == NULL;
        c->value_null = m->payload == NULL;
        c->key_len    = m->key_len;
        c->value_len  = m->len;
        if (m->key)
                memcpy(c->key, m->key, m->key_len < 63 ? m->key_len : 63);
        if (m->payload)
                memcpy(c->value, m->payload, m->len < 63 ? m->len : 63);
        rd_kafka_headers_t *h;
        const char *n;
        const void *v;
        size_t sz;
        if (rd_kafka_message_headers(m, &h))
                return;
        for (size_t i = 0;
             i < 32 && !rd_kafka_header_get_all(h, i, &n, &v, &sz); i++) {
                snprintf(c->names[i], sizeof(c->names[i]), "%s", n);
                if (v)
                        memcpy(c->vals[i], v, sz < 127 ? sz : 127);
                c->lens[i] = sz;
                c->hdr_cnt++;
        }
}

const kt_copy_t *kt_copy_find(const kt_copies_t *cs, const char *value) {
        for (int i = 0; i < cs->n; i++)
                if (!strcmp(cs->m[i].value, value))
                        return &cs->m[i];
        return NULL;
}

const char *kt_copy_hdr(const kt_copy_t *c, const char *name) {
        const char *v = NULL;
        for (int i = 0; c && i < c->hdr_cnt; i++)
                if (!strcmp(c->names[i], name))
                        v = c->vals[i];
        return v;
}

int kt_copy_hdr_cnt(const kt_copy_t *c, const char *name) {
        int n = 0;
        for (int i = 0; c && i < c->hdr_cnt; i++)
                n += !strcmp(c->names[i], name);
        return n;
}

void kt_write_topology(const kt_cluster_t *c,
                       const char *path,
                       const char *source,
                       const char *group,
                       const char *tiers,
                       const char *extra) {
        FILE *f = fopen(path, "w");
        KT_REQUIRE(f != NULL);
        fprintf(f,
                "kafka:\n"
                "  bootstrap.servers: \"%s\"\n"
                "  socket.nagle.disable: \"true\"\n"
                "  consumer.fetch.wait.max.ms: \"10\"\n",
                c->bootstrap);
        kt_env_props("KRETRY_TEST_SERVICE_PROPS", kt_yaml_prop, f);
        fprintf(f,
                "topologies:\n"
                "  - name: orders\n"
                "    source: %s\n"
                "    group: %s\n"
                "    retry:\n"
                "      tiers: %s\n"
                "%s",
                source, group, tiers, extra);
        fclose(f);
}

rd_kafka_conf_t *kt_rdkafka_conf(const kt_cluster_t *c) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        const char *kv[][2]   = {
                  {"bootstrap.servers", c->bootstrap},
                  {"socket.nagle.disable", "true"},
                  {"fetch.wait.max.ms", "10"},
                  {"session.timeout.ms", "6000"},
                  {"heartbeat.interval.ms", "500"},
                  {"topic.metadata.refresh.interval.ms", "1000"},
                  {"log_level", "3"},
        };
        for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
                rd_kafka_conf_set(conf, kv[i][0], kv[i][1], NULL, 0);
        kt_env_props("KRETRY_TEST_KAFKA_PROPS", kt_client_prop, conf);
        return conf;
}

/* The one admin result of @p q within 30 s, or NULL. */
static rd_kafka_event_t *kt_admin_result(rd_kafka_queue_t *q) {
        return rd_kafka_queue_poll(q, 30000);
}

/* A real cluster: wait (10 s at most) until the metadata @p rk reads lists
 * @p name with its partitions: brokers learn of a new topic a moment after
 * CreateTopics returned, and the adapter's topology check reads their
 * metadata. */
static void kt_wait_listed(rd_kafka_t *rk, const char *name, int parts) {
        for (int64_t end = kt_now_ms() + 10000; kt_now_ms() < end;) {
                const struct rd_kafka_metadata *md = NULL;
                int found                          = 0;
                if (!rd_kafka_metadata(rk, 1, NULL, &md, 5000)) {
                        for (int i = 0; i < md->topic_cnt; i++)
                                found |= !strcmp(md->topics[i].topic, name) &&
                                         md->topics[i].partition_cnt == parts;
                        rd_kafka_metadata_destroy(md);
                }
                if (found)
                        return;
                struct timespec ts = {0, 100 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
}

/* A real cluster: create @p name through the admin API. Every test topic
 * takes messages up to 8 MiB (test_null_and_huge's 1 MiB value is over
 * Kafka's default message.max.bytes of 1,048,588), a tier or DLQ 128 KiB
 * more for kretry's headers (what `kretry topology apply` gives them, so
 * the adapter's check does not warn), and a changelog is compacted (the
 * adapter refuses one that is not). The name is kept for deletion when the
 * cluster handle is destroyed. */
static int kt_create_real_topic(kt_cluster_t *c,
                                const char *name,
                                int parts,
                                int compact) {
        char errstr[256];
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, kt_rdkafka_conf(c),
                                      errstr, sizeof(errstr));
        if (!rk)
                return -1;
        rd_kafka_NewTopic_t *nt =
                rd_kafka_NewTopic_new(name, parts, -1, errstr, sizeof(errstr));
        size_t len = strlen(name);
        int copies = strstr(name, ".retry.") ||
                     (len > 4 && !strcmp(name + len - 4, ".dlq"));
        rd_kafka_NewTopic_set_config(nt, "max.message.bytes",
                                     copies ? "8519680" : "8388608");
        if (compact)
                rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
        rd_kafka_event_t *ev = kt_admin_result(q);
        int rc               = -1;
        if (ev) {
                const rd_kafka_CreateTopics_result_t *res =
                        rd_kafka_event_CreateTopics_result(ev);
                size_t n;
                const rd_kafka_topic_result_t **tr =
                        rd_kafka_CreateTopics_result_topics(res, &n);
                rc = (n == 1 &&
                      (rd_kafka_topic_result_error(tr[0]) == 0 ||
                       rd_kafka_topic_result_error(tr[0]) ==
                               RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS))
                             ? 0
                             : -1;
                if (rc)
                        fprintf(stderr, "test setup: create %s: %s\n", name,
                                n == 1 ? rd_kafka_topic_result_error_string(
                                                 tr[0])
                                       : rd_kafka_event_error_string(ev));
                rd_kafka_event_destroy(ev);
        }
        if (!rc)
                kt_wait_listed(rk, name, parts);
        rd_kafka_NewTopic_destroy(nt);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
        char **v = rc ? NULL
                      : realloc(c->created,
                                (c->created_cnt + 1) * sizeof(*c->created));
        if (v) {
                c->created = v;
                if ((v[c->created_cnt] = strdup(name)))
                        c->created_cnt++;
        }
        return rc;
}

/* A real cluster: delete the topics this handle created (unique names:
 * nothing another test uses). What fails is said, never fatal. */
static void kt_delete_real_topics(kt_cluster_t *c) {
        char errstr[256];
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, kt_rdkafka_conf(c),
                                      errstr, sizeof(errstr));
        rd_kafka_DeleteTopic_t **dt = calloc(c->created_cnt, sizeof(*dt));
        if (!rk || !dt) {
                fprintf(stderr, "test teardown: topics left: %s\n", errstr);
                free(dt);
                if (rk)
                        rd_kafka_destroy(rk);
                return;
        }
        for (size_t i = 0; i < c->created_cnt; i++)
                dt[i] = rd_kafka_DeleteTopic_new(c->created[i]);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_DeleteTopics(rk, dt, c->created_cnt, NULL, q);
        rd_kafka_event_t *ev = kt_admin_result(q);
        if (!ev || rd_kafka_event_error(ev))
                fprintf(stderr, "test teardown: DeleteTopics: %s\n",
                        ev ? rd_kafka_event_error_string(ev) : "no answer");
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_DeleteTopic_destroy_array(dt, c->created_cnt);
        free(dt);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
}

int kt_cluster_topic_named(kt_cluster_t *c, const char *name, int partitions) {
        if (c->mock)
                return rd_kafka_mock_topic_create(c->mock, name, partitions,
                                                  1) == 0
                               ? 0
                               : -1;
        return kt_create_real_topic(c, name, partitions, 0);
}

int kt_cluster_changelog(kt_cluster_t *c, const char *name, int partitions) {
        if (c->mock) /* the mock cluster keeps no topic configuration */
                return kt_cluster_topic_named(c, name, partitions);
        return kt_create_real_topic(c, name, partitions, 1);
}

int kt_cluster_topic(kt_cluster_t *c,
                     const char *prefix,
                     int partitions,
                     char *name,
                     size_t name_size) {
        kt_unique_name(prefix, name, name_size);
        return kt_cluster_topic_named(c, name, partitions);
}

static void kt_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        (void)rk;
        (void)opaque;
        *(rd_kafka_resp_err_t *)m->_private = m->err;
}

rd_kafka_resp_err_t kt_produce(const kt_cluster_t *c,
                               const char *topic,
                               int32_t partition,
                               const void *key,
                               size_t key_len,
                               const void *value,
                               size_t value_len,
                               rd_kafka_headers_t *hdrs) {
        char errstr[256];
        rd_kafka_t *rk = c->producer;
        if (!rk) {
                rd_kafka_conf_t *conf = kt_rdkafka_conf(c);
                rd_kafka_conf_set(conf, "linger.ms", "0", NULL, 0);
                rd_kafka_conf_set(conf, "message.max.bytes", "4000000", NULL,
                                  0);
                rd_kafka_conf_set_dr_msg_cb(conf, kt_dr);
                rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr,
                                  sizeof(errstr));
                if (!rk)
                        kt_fatal("producer", errstr);
                ((kt_cluster_t *)c)->producer = rk;
        }
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__IN_PROGRESS;
        rd_kafka_resp_err_t perr;
        if (hdrs)
                perr = rd_kafka_producev(
                        rk, RD_KAFKA_V_TOPIC(topic),
                        RD_KAFKA_V_PARTITION(partition),
                        RD_KAFKA_V_KEY(key, key_len),
                        RD_KAFKA_V_VALUE((void *)value, value_len),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                        RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(&err),
                        RD_KAFKA_V_END);
        else
                perr = rd_kafka_producev(
                        rk, RD_KAFKA_V_TOPIC(topic),
                        RD_KAFKA_V_PARTITION(partition),
                        RD_KAFKA_V_KEY(key, key_len),
                        RD_KAFKA_V_VALUE((void *)value, value_len),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                        RD_KAFKA_V_OPAQUE(&err), RD_KAFKA_V_END);
        if (perr) {
                if (hdrs)
                        rd_kafka_headers_destroy(hdrs);
                return perr;
        }
        while (err == RD_KAFKA_RESP_ERR__IN_PROGRESS)
                rd_kafka_poll(rk, 100);
        return err;
}

int kt_consume(const kt_cluster_t *c,
               const char *topic,
               int expected,
               int timeout_ms,
               void (*cb)(const rd_kafka_message_t *m, void *opaque),
               void *opaque) {
        char group[128];
        /* consumer_poll needs a group; this one never commits (and
         * librdkafka's enable.partition.eof is off by default). */
        kt_unique_name("kt-reader", group, sizeof(group));
        rd_kafka_t *rk                = kt_group_client(c, group);
        const rd_kafka_metadata_t *md = NULL;
        rd_kafka_topic_t *rkt         = rd_kafka_topic_new(rk, topic, NULL);
        if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) || md->topic_cnt != 1)
                kt_fatal("metadata", topic);
        int parts = md->topics[0].partition_cnt;
        rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(parts);
        for (int p = 0; p < parts; p++)
                rd_kafka_topic_partition_list_add(l, topic, p)->offset =
                        RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_assign(rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        int seen         = 0;
        int64_t deadline = kt_now_ms() + timeout_ms;
        while (seen < expected && kt_now_ms() < deadline) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 50);
                if (!m)
                        continue;
                if (!m->err) {
                        seen++;
                        if (cb)
                                cb(m, opaque);
                }
                rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return seen;
}

rd_kafka_t *kt_group_client(const kt_cluster_t *c, const char *group) {
        char errstr[256];
        rd_kafka_conf_t *conf = kt_rdkafka_conf(c);
        rd_kafka_conf_set(conf, "group.id", group, NULL, 0);
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", NULL, 0);
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
        if (!rk)
                kt_fatal("consumer", errstr);
        return rk;
}

void kt_topic_config(const kt_cluster_t *c,
                     const char *topic,
                     const char *name,
                     const char *value) {
        char errstr[256];
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, kt_rdkafka_conf(c),
                                      errstr, sizeof(errstr));
        KT_REQUIRE(rk != NULL);
        rd_kafka_ConfigResource_t *res =
                rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
        rd_kafka_ConfigResource_set_config(res, name, value);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_AlterConfigs(rk, &res, 1, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
        KT_REQUIRE(ev != NULL);
        const rd_kafka_AlterConfigs_result_t *r =
                rd_kafka_event_AlterConfigs_result(ev);
        size_t n = 0;
        const rd_kafka_ConfigResource_t **rs =
                r ? rd_kafka_AlterConfigs_result_resources(r, &n) : NULL;
        KT_CHECK_MSG(n == 1 && !rd_kafka_ConfigResource_error(rs[0]), CU_TRUE,
                     "AlterConfigs %s: %s", topic,
                     n == 1 ? rd_kafka_ConfigResource_error_string(rs[0])
                            : rd_kafka_event_error_string(ev));
        rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_ConfigResource_destroy(res);
        rd_kafka_destroy(rk);
}

rd_kafka_resp_err_t kt_commit(const kt_cluster_t *c,
                              const char *group,
                              const char *topic,
                              int32_t partition,
                              int64_t offset) {
        return kt_commit_md(c, group, topic, partition, offset, NULL);
}

rd_kafka_resp_err_t kt_commit_md(const kt_cluster_t *c,
                                 const char *group,
                                 const char *topic,
                                 int32_t partition,
                                 int64_t offset,
                                 const char *md) {
        rd_kafka_t *rk = kt_group_client(c, group);
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_t *tp =
                rd_kafka_topic_partition_list_add(l, topic, partition);
        tp->offset = offset;
        if (md) { /* freed with the list */
                tp->metadata      = strdup(md);
                tp->metadata_size = strlen(md);
        }
        rd_kafka_resp_err_t err = rd_kafka_commit(rk, l, 0);
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return err;
}

int64_t kt_committed(const kt_cluster_t *c,
                     const char *group,
                     const char *topic,
                     int32_t partition) {
        return kt_committed_md(c, group, topic, partition, NULL, 0);
}

int64_t kt_committed_md(const kt_cluster_t *c,
                        const char *group,
                        const char *topic,
                        int32_t partition,
                        char *md,
                        size_t md_size) {
        rd_kafka_t *rk = kt_group_client(c, group);
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, topic, partition);
        rd_kafka_resp_err_t err = rd_kafka_committed(rk, l, 15000);
        if (!err)
                err = l->elems[0].err;
        int64_t off = l->elems[0].offset;
        if (md && md_size)
                snprintf(md, md_size, "%.*s", (int)l->elems[0].metadata_size,
                         l->elems[0].metadata
                                 ? (const char *)l->elems[0].metadata
                                 : "");
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_destroy(rk);
        if (err) {
                char what[512];
                snprintf(what, sizeof(what),
                         "committed offset of %s on %s [%d]: %s", group, topic,
                         (int)partition, rd_kafka_err2str(err));
                if (!CU_get_current_test())
                        kt_fatal("kt_committed", what);
                KT_CHECK_MSG(0, CU_TRUE, "%s", what); /* leaves the test */
        }
        return off;
}

const char *kt_header(const rd_kafka_message_t *m,
                      const char *name,
                      char *buf,
                      size_t size) {
        rd_kafka_headers_t *h;
        const void *v;
        size_t n;
        if (rd_kafka_message_headers(m, &h) ||
            rd_kafka_header_get_last(h, name, &v, &n))
                return NULL;
        if (n >= size)
                n = size - 1;
        memcpy(buf, v, n);
        buf[n] = '\0';
        return buf;
}

int kt_run(const char *path,
           const char *const *argv,
           int with_stderr,
           char *out,
           size_t out_size) {
        int fds[2];
        KT_REQUIRE(pipe(fds) == 0);
        pid_t pid = fork();
        if (pid == 0) {
                dup2(fds[1], 1);
                if (with_stderr)
                        dup2(fds[1], 2);
                close(fds[0]);
                close(fds[1]);
                execv(path, (char *const *)argv);
                _exit(127);
        }
        close(fds[1]);
        size_t len = 0;
        ssize_t r;
        char sink[4096];
        while ((r = read(fds[0], out && len + 1 < out_size ? out + len : sink,
                         out && len + 1 < out_size ? out_size - len - 1
                                                   : sizeof(sink))) > 0)
                if (out && len + 1 < out_size)
                        len += (size_t)r;
        close(fds[0]);
        if (out)
                out[len] = '\0';
        int st;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int kt_terminate(int pid, int timeout_ms, int *status) {
        kill(pid, SIGTERM);
        int64_t end = kt_now_ms() + timeout_ms;
        while (waitpid(pid, status, WNOHANG) == 0) {
                if (kt_now_ms() >= end) {
                        kill(pid, SIGKILL);
                        waitpid(pid, status, 0);
                        return 0;
                }
                kt_nap_ms(20);
        }
        return 1;
}

unsigned kt_rand_below(uint64_t *state, unsigned n) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        return n ? (unsigned)(*state % n) : 0;
}

void kt_nap_ms(int ms) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000L * 1000};
        nanosleep(&ts, NULL);
}

void kt_put_be(unsigned char *out, int64_t v, int n) {
        for (int i = n - 1; i >= 0; i--, v >>= 8)
                out[i] = (unsigned char)(v & 0xff);
}
