#include "it_harness.h"

#include "adapter_int.h" /* the consumer and its queues, for failure reports */

#include <pthread.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

it_env_t *it_env_new(const char *tiers, int parts) {
        return it_env_new_brokers(tiers, parts, 1);
}

it_env_t *it_env_new_brokers(const char *tiers, int parts, int brokers) {
        it_env_t *env = calloc(1, sizeof(*env));
        env->c        = kt_cluster_new(brokers);
        env->parts    = parts;
        KT_REQUIRE(kt_cluster_topic(env->c, "src", parts, env->source,
                                    sizeof(env->source)) == 0);
        kt_unique_name("grp", env->group, sizeof(env->group));
        int n = 1;
        for (const char *s = tiers; *s; s++)
                n += *s == ',';
        env->tier_cnt = n;
        for (int t = 0; t < n; t++) {
                snprintf(env->tiers[t], sizeof(env->tiers[t]), "%s.retry.%d",
                         env->source, t + 1);
                KT_REQUIRE(kt_cluster_topic_named(env->c, env->tiers[t],
                                                  parts) == 0);
        }
        snprintf(env->dlq, sizeof(env->dlq), "%s.dlq", env->source);
        KT_REQUIRE(kt_cluster_topic_named(env->c, env->dlq, parts) == 0);
        /* Stash the tier list for it_conf(). */
        snprintf(env->calls[IT_MAX_CALLS - 1].value,
                 sizeof(env->calls[0].value), "%s", tiers);
        return env;
}

void it_env_destroy(it_env_t *env) {
        if (!env)
                return;
        kt_cluster_destroy(env->c);
        free(env);
}

rd_kafka_mock_cluster_t *it_mock_or_skip(it_env_t *env, const char *on_real) {
        rd_kafka_mock_cluster_t *mock = kt_mock_only(env->c, on_real);
        if (!mock)
                it_env_destroy(env);
        return mock;
}

static pthread_mutex_t record_lock = PTHREAD_MUTEX_INITIALIZER;

static void record_locked(it_env_t *env, kretry_msg_t *msg);

/* The handler runs on a worker thread: a call is filled in before it is
 * counted, so that a test reading env->calls[0 .. call_cnt) sees it whole. */
static void record(it_env_t *env, kretry_msg_t *msg) {
        pthread_mutex_lock(&record_lock);
        record_locked(env, msg);
        pthread_mutex_unlock(&record_lock);
}

static void record_locked(it_env_t *env, kretry_msg_t *msg) {
        if (env->call_cnt >= IT_MAX_CALLS - 1)
                return;
        it_call_t *c = &env->calls[env->call_cnt];
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        memset(c, 0, sizeof(*c));
        c->value_null = v == NULL;
        c->value_len  = len;
        snprintf(c->value, sizeof(c->value), "%.*s", (int)(len < 40 ? len : 40),
                 v ? v : "");
        const char *k = kretry_msg_key(msg, &len);
        c->key_null   = k == NULL;
        snprintf(c->key, sizeof(c->key), "%.*s", (int)(len < 60 ? len : 60),
                 k ? k : "");
        c->ts               = kretry_msg_timestamp(msg);
        c->attempt          = kretry_msg_attempt(msg);
        c->tier             = kretry_msg_tier(msg);
        c->offset           = kretry_msg_offset(msg);
        c->orig_offset      = kretry_msg_original_offset(msg);
        c->first_failure_ts = kretry_msg_first_failure_ts(msg);
        c->now_ms           = kt_wall_ms();
        c->due_ts           = -1;
        snprintf(c->topic, sizeof(c->topic), "%s", kretry_msg_topic(msg));
        snprintf(c->orig_topic, sizeof(c->orig_topic), "%s",
                 kretry_msg_original_topic(msg));
        const void *hv;
        size_t hn;
        if (!kretry_msg_header(msg, "kretry-attempt", &hv, &hn))
                snprintf(c->hdr_attempt, sizeof(c->hdr_attempt), "%.*s",
                         (int)hn, (const char *)hv);
        if (!kretry_msg_header(msg, "trace-id", &hv, &hn))
                snprintf(c->trace, sizeof(c->trace), "%.*s",
                         (int)(hn < 60 ? hn : 60), (const char *)hv);
        if (!kretry_msg_header(msg, "kretry-tier", &hv, &hn))
                snprintf(c->hdr_tier, sizeof(c->hdr_tier), "%.*s", (int)hn,
                         (const char *)hv);
        if (!kretry_msg_header(msg, "kretry-due-ts", &hv, &hn)) {
                char b[32];
                snprintf(b, sizeof(b), "%.*s", (int)hn, (const char *)hv);
                c->due_ts = strtoll(b, NULL, 10);
        }
        __atomic_store_n(&env->call_cnt, env->call_cnt + 1, __ATOMIC_RELEASE);
}

kretry_action_t it_handler(kretry_msg_t *msg, void *opaque) {
        it_env_t *env = opaque;
        record(env, msg);
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        int attempt   = kretry_msg_attempt(msg);
        if (!v)
                return attempt <= 1 ? KRETRY_RETRY : KRETRY_OK;
        if (len >= 5 && !strncmp(v, "retry", 5)) {
                int n = len > 5 ? v[5] - '0' : 1;
                if (attempt <= n) {
                        kretry_msg_set_error(msg, "HTTP_503", "unavailable");
                        return KRETRY_RETRY;
                }
                return KRETRY_OK;
        }
        if (len >= 4 && !strncmp(v, "fail", 4)) {
                kretry_msg_set_error(msg, "VALIDATION", "bad order");
                return KRETRY_FAIL;
        }
        if (len >= 6 && !strncmp(v, "always", 6))
                return KRETRY_RETRY;
        if (len >= 6 && !strncmp(v, "okslow", 6)) {
                /* A handler that costs 200 us: a source backlog that takes
                 * seconds to work through. */
                struct timespec ts = {0, 200 * 1000};
                nanosleep(&ts, NULL);
                return KRETRY_OK;
        }
        if (len >= 5 && !strncmp(v, "work", 4) && v[4] >= '0' && v[4] <= '9') {
                /* "workN": a handler call of N ms, then OK. */
                struct timespec ts = {0, (v[4] - '0') * 1000000L};
                nanosleep(&ts, NULL);
                return KRETRY_OK;
        }
        if (len >= 5 && !strncmp(v, "slow", 4) && attempt == 1) {
                /* "slowN": a handler call that takes N seconds. */
                struct timespec ts = {v[4] - '0', 0};
                nanosleep(&ts, NULL);
        }
        if (len >= 4 && !strncmp(v, "hint", 4) && attempt == 1) {
                kretry_msg_set_retry_after(msg, 150);
                return KRETRY_RETRY;
        }
        return KRETRY_OK;
}

static void it_route(const char *topic,
                     int32_t partition,
                     int64_t offset,
                     kretry_route_t route,
                     int tier,
                     const char *cls,
                     int attempt,
                     void *opaque) {
        (void)topic, (void)partition, (void)offset, (void)tier, (void)cls;
        (void)attempt;
        it_env_t *env = opaque;
        env->routes[route]++;
}

void it_log(kretry_log_level_t level,
            const char *fac,
            const char *msg,
            void *opaque) {
        (void)opaque;
        if (level <= KRETRY_LOG_WARNING || getenv("KRETRY_TEST_DEBUG"))
                fprintf(stderr, "  [kretry %d %s] %s\n", (int)level, fac, msg);
        else if (level == KRETRY_LOG_DEBUG)
                kt_trace(fac, msg);
}

static void set(kretry_conf_t *conf, const char *n, const char *v) {
        char err[512];
        if (kt_consumer_protocol() && kt_classic_only(n))
                return;
        if (kretry_conf_set(conf, n, v, err, sizeof(err))) {
                fprintf(stderr, "conf %s=%s: %s\n", n, v, err);
                KT_REQUIRE(0);
        }
}

static void service_prop(const char *name, const char *value, void *opaque) {
        set(opaque, name, value);
}

kretry_conf_t *it_conf(it_env_t *env, ...) {
        kretry_conf_t *conf = kretry_conf_new();
        set(conf, "bootstrap.servers", kt_cluster_bootstrap(env->c));
        set(conf, "group.id", env->group);
        set(conf, "source.topic", env->source);
        set(conf, "retry.tiers", env->calls[IT_MAX_CALLS - 1].value);
        set(conf, "retry.jitter", "0%");
        set(conf, "socket.nagle.disable", "true");
        set(conf, "consumer.fetch.wait.max.ms", "10");
        if (kt_consumer_protocol())
                set(conf, "consumer.group.protocol", "consumer");
        kt_env_props("KRETRY_TEST_SERVICE_PROPS", service_prop, conf);
        set(conf, "consumer.session.timeout.ms", "6000");
        set(conf, "consumer.heartbeat.interval.ms", "500");
        set(conf, "consumer.auto.commit.interval.ms", "100");
        set(conf, "producer.linger.ms", "1");
        set(conf, "produce.retry.backoff.ms", "50");
        set(conf, "topic.metadata.refresh.interval.ms", "1000");
        /* librdkafka's own debug contexts (with KRETRY_TEST_DEBUG, which
         * prints them); cgrp by default, into the flight recorder
         * (kt_trace), for a group that does not assign. */
        set(conf, "consumer.debug",
            getenv("KRETRY_TEST_RDKAFKA_DEBUG")
                    ? getenv("KRETRY_TEST_RDKAFKA_DEBUG")
                    : "cgrp");
        va_list ap;
        va_start(ap, env);
        const char *n;
        while ((n = va_arg(ap, const char *))) {
                const char *v = va_arg(ap, const char *);
                set(conf, n, v);
        }
        va_end(ap);
        kretry_conf_set_handler(conf, it_handler, env);
        kretry_conf_set_route_cb(conf, it_route);
        kretry_conf_set_log_cb(conf, it_log, NULL);
        return conf;
}

kretry_adapter_t *it_adapter(kretry_conf_t *conf) {
        char err[512];
        kretry_adapter_t *a = kretry_adapter_new(conf, err, sizeof(err));
        if (!a)
                fprintf(stderr, "kretry_adapter_new: %s\n", err);
        KT_REQUIRE(a != NULL);
        return a;
}

/* How much longer a wait goes on when its time is up and the group has not
 * assigned the adapter anything yet. A first join on the test cluster
 * takes 3 s, but under heavy load (the whole suite on two cores) one has
 * stalled past 20 s with the group's protocol already chosen (cause not
 * found); what the tests time is kretry, not the test cluster's group. */
#define IT_JOIN_GRACE_MS 40000

/* Whether @p deadline has passed; once (*@p graced), for an adapter never
 * assigned, it is moved IT_JOIN_GRACE_MS on instead (said on stderr). */
static int
past_deadline(const kretry_adapter_t *a, int64_t *deadline, int *graced) {
        if (kt_now_ms() <= *deadline)
                return 0;
        if (a->synced || *graced)
                return 1;
        fprintf(stderr,
                "  [it] the group has assigned nothing yet: waiting up to %d "
                "ms more\n",
                IT_JOIN_GRACE_MS);
        kt_trace_dump("nothing assigned", 30000);
        *graced   = 1;
        *deadline = kt_now_ms() + IT_JOIN_GRACE_MS;
        return 0;
}

int it_run_until(kretry_adapter_t *a,
                 int (*cond)(kretry_adapter_t *a, it_env_t *env),
                 it_env_t *env,
                 int timeout_ms) {
        int64_t deadline = kt_now_ms() + timeout_ms;
        int graced       = 0;
        while (!cond(a, env)) {
                if (past_deadline(a, &deadline, &graced))
                        return 0;
                kretry_err_t err = kretry_adapter_poll(a, 100);
                if (err != KRETRY_ERR_OK)
                        return cond(a, env);
        }
        return 1;
}

/* For a wait that timed out: whether the group assigned anything, where
 * each partition stands, and what waits in the adapter's queues (a run
 * that consumed nothing for 20 s has been seen under heavy load, cause
 * unknown). */
static void report_consumer(kretry_adapter_t *a) {
        rd_kafka_topic_partition_list_t *l = NULL;
        const char *proto = rd_kafka_rebalance_protocol(a->consumer);
        fprintf(stderr,
                "  [it] protocol %s, %s, queues: consumer %d tier %d source "
                "%d\n",
                proto ? proto : "(none)",
                a->synced ? "assigned before" : "never assigned",
                (int)rd_kafka_queue_length(a->cq),
                (int)rd_kafka_queue_length(a->tq),
                (int)rd_kafka_queue_length(a->sq));
        if (!a->synced)
                kt_trace_dump("never assigned", 60000);
        if (rd_kafka_assignment(a->consumer, &l))
                return;
        rd_kafka_position(a->consumer, l);
        fprintf(stderr, "  [it] assigned %d:", l->cnt);
        for (int i = 0; i < l->cnt; i++)
                fprintf(stderr, " %s[%d]@%lld", l->elems[i].topic,
                        (int)l->elems[i].partition,
                        (long long)l->elems[i].offset);
        fprintf(stderr, "\n");
        rd_kafka_topic_partition_list_destroy(l);
}

int it_wait_counter(kretry_adapter_t *a,
                    kretry_counter_t c,
                    int64_t n,
                    int timeout_ms) {
        int64_t deadline = kt_now_ms() + timeout_ms;
        kretry_err_t err = KRETRY_ERR_OK;
        int graced       = 0;
        while (kretry_adapter_counter(a, c, 0) < n) {
                if (past_deadline(a, &deadline, &graced) ||
                    (err = kretry_adapter_poll(a, 100)) != KRETRY_ERR_OK)
                        break;
        }
        if (kretry_adapter_counter(a, c, 0) >= n)
                return 1;
        /* What a failure report needs: where the adapter stands. */
        char json[2048];
        kretry_adapter_stats_json(a, json, sizeof(json));
        fprintf(stderr,
                "  [it] counter %d stayed below %lld for %d ms (%s): %s\n",
                (int)c, (long long)n, timeout_ms,
                err ? kretry_err2str(err) : "timed out", json);
        report_consumer(a);
        return 0;
}

void it_produce(it_env_t *env,
                int32_t partition,
                const char *key,
                const char *value,
                rd_kafka_headers_t *hdrs) {
        rd_kafka_resp_err_t err = kt_produce(env->c, env->source, partition,
                                             key, key ? strlen(key) : 0, value,
                                             value ? strlen(value) : 0, hdrs);
        KT_REQUIRE(err == 0);
}

void it_produce_big(it_env_t *env,
                    int32_t partition,
                    const char *prefix,
                    size_t size) {
        char *v = malloc(size);
        KT_REQUIRE(v != NULL && strlen(prefix) <= size);
        memset(v, 'G', size);
        memcpy(v, prefix, strlen(prefix));
        KT_REQUIRE(kt_produce(env->c, env->source, partition, "k", 1, v, size,
                              NULL) == 0);
        free(v);
}

void it_produce_keys(it_env_t *env, int keys, int per_key) {
        for (int s = 0; s < per_key; s++)
                for (int k = 0; k < keys; k++) {
                        char key[16], v[32];
                        snprintf(key, sizeof(key), "key-%d", k);
                        snprintf(v, sizeof(v), "%d:%d", k, s);
                        it_produce(env, k % env->parts, key, v, NULL);
                }
}

void it_key_seq(const kretry_msg_t *msg, int *key, int *seq) {
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        char buf[32];
        snprintf(buf, sizeof(buf), "%.*s", (int)(len < 31 ? len : 31),
                 v ? v : "");
        const char *colon = strchr(buf, ':');
        *key              = atoi(buf);
        *seq              = colon ? atoi(colon + 1) : 0;
}

int it_calls_for(const it_env_t *env,
                 const char *value,
                 const it_call_t **out,
                 int max) {
        int n = 0;
        for (int i = 0; i < env->call_cnt && n < max; i++)
                if (!strcmp(env->calls[i].value, value))
                        out[n++] = &env->calls[i];
        return n;
}

it_env_t *it_env_twin(const it_env_t *env) {
        it_env_t *twin = malloc(sizeof(*twin));
        KT_REQUIRE(twin != NULL);
        memcpy(twin, env, sizeof(*twin));
        twin->call_cnt = 0;
        memset(twin->routes, 0, sizeof(twin->routes));
        return twin;
}

static void mark_done(const it_env_t *env,
                      int *seen,
                      int n,
                      int (*done)(const it_call_t *c)) {
        for (int i = 0; i < env->call_cnt; i++) {
                const it_call_t *c = &env->calls[i];
                const char *dash   = strrchr(c->value, '-');
                int id             = dash ? atoi(dash + 1) : -1;
                if (id >= 0 && id < n && done(c))
                        seen[id] = 1;
        }
}

int it_all_done(const it_env_t *a,
                const it_env_t *b,
                int n,
                int (*done)(const it_call_t *c)) {
        int *seen = calloc((size_t)n, sizeof(int)), all = 1;
        KT_REQUIRE(seen != NULL);
        mark_done(a, seen, n, done);
        mark_done(b, seen, n, done);
        for (int i = 0; i < n; i++)
                all &= seen[i];
        free(seen);
        return all;
}

void it_schema_r(char *path, size_t size) {
        snprintf(path, size, "/tmp/kretry-it-schema-XXXXXX");
        int fd           = mkstemp(path);
        const char *json = "{\"type\":\"record\",\"name\":\"R\",\"fields\":["
                           "{\"name\":\"id\",\"type\":\"string\"},"
                           "{\"name\":\"n\",\"type\":\"long\"}]}";
        KT_REQUIRE(fd >= 0 &&
                   write(fd, json, strlen(json)) == (ssize_t)strlen(json));
        close(fd);
}

int64_t it_end_offset(it_env_t *env, const char *topic, int32_t p) {
        int64_t lo = -1, hi = -1;
        rd_kafka_t *rk = kt_group_client(env->c, "kt-watermarks");
        if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 5000))
                hi = -1;
        rd_kafka_destroy(rk);
        return hi;
}

int it_tier_at_end(it_env_t *env, int32_t p) {
        int64_t c   = kt_committed(env->c, env->group, env->tiers[0], p);
        int64_t end = it_end_offset(env, env->tiers[0], p);
        return c > 0 && (c == end || c == end - 1);
}

void it_poll_for(kretry_adapter_t *a, int ms) {
        for (int64_t until = kt_now_ms() + ms; kt_now_ms() < until;)
                kretry_adapter_poll(a, 20);
}
