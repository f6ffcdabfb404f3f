/*
 * Faults on the mock cluster while an adapter works: a failing DLQ copy, a
 * failing version-changelog write, Fetch and OffsetCommit errors, group
 * protocol errors, leader moves and a broker going down and up. Each test
 * asserts outcomes, not just survival:
 *   - every message is accounted for exactly as its value says: handled OK,
 *     dead-lettered once, or skipped as stale — never another outcome;
 *   - while the fault is active, no committed offset passes a message whose
 *     outcome is not durable yet (the route callback says when it is);
 *   - where a copy fails, its partition is paused and the copy is produced
 *     again with a doubling backoff.
 */
#include "it_harness.h"

#include <stdlib.h>
#include <string.h>

#define PARTS 2
#define MAXOFF 256
#define MAXIDS 128
#define MAXFAILS 64

typedef enum { EXP_OK, EXP_DLQ, EXP_STALE } expect_t;

/* A message the test produced to the source, and what must become of it. */
typedef struct {
        char value[32];
        int32_t partition;
        int64_t offset;
        expect_t expect;
        int in_dlq; /* copies found in the DLQ */
} sent_t;

/* One test's observations. The callbacks get the harness's it_env_t as
 * their opaque, so this lives beside it as a static; tests run one at a
 * time on the test's thread, which is also the thread the callbacks run
 * on (kretry_adapter_poll). */
static struct {
        it_env_t *env;
        sent_t sent[MAXIDS];
        int sent_cnt;
        int64_t next_off[PARTS];
        /* Route-callback bits per consumed offset: [0] the source, [1] the
         * first tier. A bit is set once the outcome is durable. */
        unsigned routes[2][PARTS][MAXOFF];
        int64_t durable_ts[2][PARTS][MAXOFF];
        rd_kafka_t *reader; /* reads the group's committed offsets */
        int commit_checks;
        /* Failed copies as the adapter logged them. */
        int64_t fail_ts[MAXFAILS];
        int fail_backoff[MAXFAILS];
        int fail_part[MAXFAILS]; /* the source partition of the copy */
        int fail_cnt;
        const char *watch; /* log lines containing this are counted */
        int watched;
} ch;

static void chaos_route(const char *topic,
                        int32_t partition,
                        int64_t offset,
                        kretry_route_t route,
                        int tier,
                        const char *cls,
                        int attempt,
                        void *opaque) {
        (void)tier, (void)cls, (void)attempt;
        it_env_t *env = opaque;
        env->routes[route]++;
        int t = !strcmp(topic, env->source)     ? 0
                : !strcmp(topic, env->tiers[0]) ? 1
                                                : -1;
        if (t < 0 || partition < 0 || partition >= PARTS || offset < 0 ||
            offset >= MAXOFF)
                return;
        if (!ch.routes[t][partition][offset])
                ch.durable_ts[t][partition][offset] = kt_wall_ms();
        ch.routes[t][partition][offset] |= 1u << route;
}

static void chaos_log(kretry_log_level_t level,
                      const char *fac,
                      const char *msg,
                      void *opaque) {
        (void)opaque;
        const char *again = strstr(msg, "producing again in ");
        if (!strcmp(fac, "PRODUCE") && again && ch.fail_cnt < MAXFAILS) {
                ch.fail_ts[ch.fail_cnt]      = kt_wall_ms();
                ch.fail_backoff[ch.fail_cnt] = atoi(again + 19);
                const char *part             = strstr(msg, " [");
                ch.fail_part[ch.fail_cnt]    = part ? atoi(part + 2) : -1;
                ch.fail_cnt++;
        }
        if (ch.watch && strstr(msg, ch.watch))
                ch.watched++;
        if (level <= KRETRY_LOG_WARNING || getenv("KRETRY_TEST_DEBUG"))
                fprintf(stderr, "  [kretry %d %s] %s\n", (int)level, fac, msg);
}

static rd_kafka_mock_cluster_t *chaos_new(const char *tiers, int brokers) {
        memset(&ch, 0, sizeof(ch));
        ch.env = it_env_new_brokers(tiers, PARTS, brokers);
        rd_kafka_mock_cluster_t *mock = kt_cluster_mock(ch.env->c);
        char errstr[256];
        rd_kafka_conf_t *conf = kt_rdkafka_conf(ch.env->c);
        rd_kafka_conf_set(conf, "group.id", ch.env->group, NULL, 0);
        ch.reader =
                rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
        KT_REQUIRE(ch.reader != NULL);
        if (mock)
                /* The group's coordinator stays on broker 1 whatever else
                 * the test moves or takes down. */
                rd_kafka_mock_coordinator_set(mock, "group", ch.env->group, 1);
        return mock;
}

static void chaos_destroy(void) {
        rd_kafka_destroy(ch.reader);
        it_env_destroy(ch.env);
}

static kretry_conf_t *chaos_conf(const char *name, const char *value) {
        kretry_conf_t *conf = it_conf(ch.env, name, value, NULL);
        kretry_conf_set_route_cb(conf, chaos_route);
        kretry_conf_set_log_cb(conf, chaos_log, NULL);
        return conf;
}

/* Produce @p value to source partition @p p; @p version (may be NULL) goes
 * in header "version". */
static void send_msg(int32_t p,
                     const char *key,
                     const char *value,
                     const char *version,
                     expect_t expect) {
        rd_kafka_headers_t *h = NULL;
        if (version) {
                h = rd_kafka_headers_new(1);
                rd_kafka_header_add(h, "version", -1, version, -1);
        }
        it_produce(ch.env, p, key, value, h);
        KT_REQUIRE(ch.sent_cnt < MAXIDS);
        sent_t *s = &ch.sent[ch.sent_cnt++];
        snprintf(s->value, sizeof(s->value), "%s", value);
        s->partition = p;
        s->offset    = ch.next_off[p]++;
        s->expect    = expect;
}

/* A mix on both partitions: i % 5 == 1 retries once, i % 5 == 3 fails
 * permanently, the rest succeed. */
static void send_mix(const char *tag, int n) {
        for (int i = 0; i < n; i++) {
                char v[32], k[16];
                const char *kind = i % 5 == 1   ? "retry1"
                                   : i % 5 == 3 ? "fail"
                                                : "ok";
                snprintf(v, sizeof(v), "%s-%s%d", kind, tag, i);
                snprintf(k, sizeof(k), "k%d", i);
                send_msg(i % PARTS, k, v, NULL, i % 5 == 3 ? EXP_DLQ : EXP_OK);
        }
}

/* The group's committed offset on @p topic [@p p] (RD_KAFKA_OFFSET_INVALID
 * when none). A lookup that keeps failing for 15 s (a fault injected into
 * OffsetFetch is answered again) fails the test: no error value may pass
 * for an offset in check_commits' comparisons. */
static int64_t committed(const char *topic, int32_t p) {
        int64_t deadline = kt_now_ms() + 15000;
        rd_kafka_resp_err_t err;
        for (;;) {
                rd_kafka_topic_partition_list_t *l =
                        rd_kafka_topic_partition_list_new(1);
                rd_kafka_topic_partition_list_add(l, topic, p);
                err = rd_kafka_committed(ch.reader, l, 5000);
                if (!err)
                        err = l->elems[0].err;
                int64_t off = l->elems[0].offset;
                rd_kafka_topic_partition_list_destroy(l);
                if (!err)
                        return off;
                if (kt_now_ms() >= deadline)
                        break;
                kt_nap_ms(100);
        }
        KT_CHECK_MSG(0, CU_TRUE, "committed offset of %s [%d]: %s", topic,
                     (int)p, rd_kafka_err2str(err));
        return 0; /* not reached: the check leaves the test */
}

/* Every source partition committed to its end. */
static int committed_to_end(void) {
        for (int p = 0; p < PARTS; p++)
                if (committed(ch.env->source, p) != ch.next_off[p])
                        return 0;
        return 1;
}

/* No committed offset of the source or the first tier passes the lowest
 * offset whose outcome is not durable yet. */
static void check_commits(void) {
        for (int t = 0; t < 2; t++)
                for (int p = 0; p < PARTS; p++) {
                        const char *topic =
                                t ? ch.env->tiers[0] : ch.env->source;
                        int64_t lo = 0;
                        while (lo < MAXOFF && ch.routes[t][p][lo])
                                lo++;
                        int64_t c = committed(topic, p);
                        KT_CHECK_MSG(c <= lo, CU_FALSE,
                                     "%s [%d] committed at %lld past offset "
                                     "%lld, whose outcome is not durable",
                                     topic, p, (long long)c, (long long)lo);
                }
        ch.commit_checks++;
}

/* Poll for @p ms, checking the committed offsets every 200 ms. */
static void drive(kretry_adapter_t *a, int ms) {
        int64_t end = kt_now_ms() + ms, next = 0;
        while (kt_now_ms() < end) {
                kretry_adapter_poll(a, 20);
                if (kt_now_ms() >= next) {
                        check_commits();
                        next = kt_now_ms() + 200;
                }
        }
}

static int outcomes_done(void) {
        for (int i = 0; i < ch.sent_cnt; i++) {
                const sent_t *s = &ch.sent[i];
                unsigned bits   = ch.routes[0][s->partition][s->offset];
                if (!bits)
                        return 0;
                /* A retried one is done once its retry was handled. */
                const it_call_t *c[8];
                int n = it_calls_for(ch.env, s->value, c, 8);
                if (!strncmp(s->value, "retry1", 6) &&
                    (n < 2 || c[n - 1]->attempt < 2))
                        return 0;
        }
        return 1;
}

/* Drive until every message has its outcome, checking commits meanwhile. */
static int drive_until_done(kretry_adapter_t *a, int timeout_ms) {
        int64_t deadline = kt_now_ms() + timeout_ms;
        while (!outcomes_done() && kt_now_ms() < deadline)
                drive(a, 100);
        return outcomes_done();
}

static void count_dlq(const rd_kafka_message_t *m, void *opaque) {
        (void)opaque;
        for (int i = 0; i < ch.sent_cnt; i++)
                if (m->len == strlen(ch.sent[i].value) &&
                    !memcmp(m->payload, ch.sent[i].value, m->len))
                        ch.sent[i].in_dlq++;
}

/* After the adapter is gone: every message had exactly its expected
 * outcome, and the source is committed to its end. Returns the number of
 * handlings repeated (at least once allows them; the caller says whether
 * its fault may cause any). */
static int account(void) {
        int dlq_msgs = 0, repeats = 0;
        int64_t held = 0, lo, hi;
        for (int i = 0; i < ch.sent_cnt; i++)
                dlq_msgs += ch.sent[i].expect == EXP_DLQ;
        for (int p = 0; p < PARTS; p++)
                if (!rd_kafka_query_watermark_offsets(ch.reader, ch.env->dlq, p,
                                                      &lo, &hi, 5000))
                        held += hi - lo;
        kt_consume(ch.env->c, ch.env->dlq, (int)held, 10000, count_dlq, NULL);
        /* One copy a handling that dead-lettered: a message handled again
         * (a commit the test cluster refused during a rebalance, which at
         * least once allows) may be dead-lettered again, never otherwise. */
        int copies = 0;
        for (int i = 0; i < ch.sent_cnt; i++)
                copies += ch.sent[i].in_dlq;
        KT_CHECK_MSG(held == copies && copies >= dlq_msgs, CU_FALSE,
                     "the DLQ holds %lld messages (%d of them copies of this "
                     "test's), expected %d",
                     (long long)held, copies, dlq_msgs);
        for (int i = 0; i < ch.sent_cnt; i++) {
                sent_t *s     = &ch.sent[i];
                expect_t e    = s->expect;
                unsigned bits = ch.routes[0][s->partition][s->offset] &
                                ~(1u << KRETRY_ROUTE_DUPLICATE);
                const it_call_t *c[8];
                int n         = it_calls_for(ch.env, s->value, c, 8);
                int retried   = !strncmp(s->value, "retry1", 6);
                unsigned want = e == EXP_DLQ     ? 1u << KRETRY_ROUTE_DLQ
                                : e == EXP_STALE ? 1u << KRETRY_ROUTE_STALE
                                : retried        ? 1u << KRETRY_ROUTE_RETRY
                                                 : 1u << KRETRY_ROUTE_OK;
                KT_CHECK_MSG(bits == want, CU_FALSE,
                             "%s at [%d] %lld: routes 0x%x, expected 0x%x",
                             s->value, (int)s->partition, (long long)s->offset,
                             bits, want);
                int expect_calls = e == EXP_STALE ? 0 : retried ? 2 : 1;
                KT_CHECK_MSG(e == EXP_DLQ ? s->in_dlq >= 1 && s->in_dlq <= n
                                          : s->in_dlq == 0,
                             CU_FALSE,
                             "%s: in the DLQ %d times after %d handler "
                             "calls, expected %s",
                             s->value, s->in_dlq, n,
                             e == EXP_DLQ ? "once a call, at least once"
                                          : "never");
                KT_CHECK_MSG(n >= expect_calls && (e != EXP_STALE || n == 0),
                             CU_FALSE, "%s: %d handler calls, expected %d",
                             s->value, n, expect_calls);
                if (retried && n >= 2)
                        KT_CHECK_MSG(c[n - 1]->attempt == 2, CU_FALSE,
                                     "%s: last call attempt %d", s->value,
                                     c[n - 1]->attempt);
                repeats += n > expect_calls ? n - expect_calls : 0;
        }
        for (int p = 0; p < PARTS; p++)
                KT_CHECK_MSG(committed(ch.env->source, p) == ch.next_off[p],
                             CU_FALSE, "source [%d] committed at %lld of %lld",
                             p, (long long)committed(ch.env->source, p),
                             (long long)ch.next_off[p]);
        fprintf(stderr,
                "  %d messages accounted for; %d commit checks; %d handlings "
                "repeated\n",
                ch.sent_cnt, ch.commit_checks, repeats);
        return repeats;
}

/* Every partition of @p topic led by @p broker. */
static void lead(rd_kafka_mock_cluster_t *mock, const char *topic, int broker) {
        for (int p = 0; p < PARTS; p++)
                rd_kafka_mock_partition_set_leader(mock, topic, p, broker);
}

/* Fault injection needs the mock cluster: on a real one the test is
 * reported skipped with @p on_real (kt_mock_only). Returns 1 when it must
 * stop. */
static int skip_without(const rd_kafka_mock_cluster_t *mock,
                        const char *on_real) {
        if (mock)
                return 0;
        kt_mock_only(ch.env->c, on_real);
        chaos_destroy();
        return 1;
}

/* The next @p n requests of type @p api to @p broker fail with @p err
 * (or, when @p errs is given, with errs[0..n-1] in turn). */
static void fail_next(rd_kafka_mock_cluster_t *mock,
                      int32_t broker,
                      int16_t api,
                      rd_kafka_resp_err_t err,
                      const rd_kafka_resp_err_t *errs,
                      int n) {
        for (int i = 0; i < n; i++)
                rd_kafka_mock_broker_push_request_error_rtts(
                        mock, broker, api, 1, errs ? errs[i] : err, 0);
}

static size_t
errors_left(rd_kafka_mock_cluster_t *mock, int32_t broker, int16_t api) {
        size_t left = 0;
        rd_kafka_mock_broker_error_stack_cnt(mock, broker, api, &left);
        return left;
}

/* Drive @p a until the injected errors of @p api are used up (20 s at
 * most): a fault that never reached the adapter fails the test. */
static void errors_used(kretry_adapter_t *a,
                        rd_kafka_mock_cluster_t *mock,
                        int32_t broker,
                        int16_t api) {
        int64_t deadline = kt_now_ms() + 20000;
        while (errors_left(mock, broker, api) && kt_now_ms() < deadline)
                drive(a, 50);
        KT_CHECK_MSG(!errors_left(mock, broker, api), CU_FALSE,
                     "%zu injected errors of request type %d left unused",
                     errors_left(mock, broker, api), (int)api);
}

static int64_t counter(kretry_adapter_t *a, kretry_counter_t c) {
        return kretry_adapter_counter(a, c, 0);
}

/* Drive until @p n failed deliveries were logged (or 30 s). */
static void drive_until_fails(kretry_adapter_t *a, int n) {
        int64_t deadline = kt_now_ms() + 30000;
        while (ch.fail_cnt < n && kt_now_ms() < deadline)
                drive(a, 50);
        KT_CHECK_MSG(ch.fail_cnt >= n, CU_TRUE, "%d failed deliveries of %d",
                     ch.fail_cnt, n);
}

/* Calls of @p value made while its partition had to be paused: after
 * @p from and before @p to. */
static int calls_between(const char *value, int64_t from, int64_t to) {
        const it_call_t *c[8];
        int n = it_calls_for(ch.env, value, c, 8), in = 0;
        for (int i = 0; i < n; i++)
                in += c[i]->now_ms > from && c[i]->now_ms < to;
        return in;
}

/* The delivery of one copy failed @p n times: each failure waited at least
 * the backoff announced before it, the backoff doubled from @p base, and
 * the copy went out once the errors stopped. */
static void check_backoff(int n, int base, int64_t delivered) {
        KT_ASSERT_INT_EQ(ch.fail_cnt, n);
        for (int k = 0; k < ch.fail_cnt && k < n; k++) {
                KT_ASSERT_INT_EQ(ch.fail_backoff[k], base << k);
                int64_t next = k + 1 < n ? ch.fail_ts[k + 1] : delivered;
                int64_t gap  = next - ch.fail_ts[k];
                /* Loose upper bound: a loaded machine is slow, not early. */
                KT_CHECK_MSG(gap >= ch.fail_backoff[k] &&
                                     gap < ch.fail_backoff[k] + 2000,
                             CU_FALSE,
                             "failure %d: next try %lld ms later, backoff %d",
                             k + 1, (long long)gap, ch.fail_backoff[k]);
        }
}

/* Row a: a DLQ copy that the broker refuses (only broker 3, which leads
 * the DLQ partition, fails) is produced again with a doubling backoff; its
 * partition is paused meanwhile (messages produced to it later wait, while
 * the other partition flows) and nothing of it is committed past the
 * failed message. */
static void test_dlq_copy_fails(void) {
        rd_kafka_mock_cluster_t *mock = chaos_new("30ms", 3);
        if (skip_without(mock, "it_cluster test_kill_dlq_leader SIGKILLs the "
                               "DLQ partition's leader "
                               "while dead letters are produced"))
                return;
        lead(mock, ch.env->source, 1);
        lead(mock, ch.env->tiers[0], 1);
        lead(mock, ch.env->dlq, 1);
        rd_kafka_mock_partition_set_leader(mock, ch.env->dlq, 0, 3);
        send_msg(0, "a", "ok-a0", NULL, EXP_OK);
        send_msg(0, "a", "fail-a1", NULL, EXP_DLQ);
        send_msg(0, "a", "ok-a2", NULL, EXP_OK);
        send_msg(1, "b", "ok-b0", NULL, EXP_OK);
        fail_next(mock, 3, 0 /* Produce */,
                  RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, NULL, 5);
        kretry_adapter_t *a =
                it_adapter(chaos_conf("produce.retry.backoff.ms", "50"));
        drive_until_fails(a, 1);
        /* Produced while the copy fails: p0's must wait, p1's must not. */
        send_msg(0, "a", "ok-a3", NULL, EXP_OK);
        send_msg(0, "a", "ok-a4", NULL, EXP_OK);
        send_msg(1, "b", "ok-b1", NULL, EXP_OK);
        drive_until_fails(a, 5);
        KT_ASSERT(drive_until_done(a, 30000));
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_PRODUCE_ERRORS), 5);
        kretry_adapter_destroy(a);
        int64_t first = ch.fail_ts[0], delivered = ch.durable_ts[0][0][1];
        KT_ASSERT_INT_EQ(calls_between("ok-a3", first, delivered), 0);
        KT_ASSERT_INT_EQ(calls_between("ok-a4", first, delivered), 0);
        KT_CHECK_MSG(calls_between("ok-b1", first, delivered) == 1, CU_FALSE,
                     "the other partition did not flow while the copy "
                     "failed");
        check_backoff(5, 50, delivered);
        KT_ASSERT_INT_EQ(account(), 0);
        chaos_destroy();
}

/* A version-changelog write that fails (only broker 3, which leads the
 * changelog, fails; no other copy is made, so only changelog writes are
 * produced) is written again with backoff; the offset of the message that
 * raised the version is not committed before the write is durable, a stale
 * version behind it is still skipped, and its partition waits. */
static void test_changelog_write_fails(void) {
        rd_kafka_mock_cluster_t *mock = chaos_new("30ms", 3);
        if (skip_without(mock, "none: a real broker refuses no write to a "
                               "healthy compacted topic on demand"))
                return;
        char vt[300];
        snprintf(vt, sizeof(vt), "%s.%s.versions", ch.env->group,
                 ch.env->source);
        KT_REQUIRE(kt_cluster_changelog(ch.env->c, vt, PARTS) == 0);
        lead(mock, ch.env->source, 1);
        lead(mock, ch.env->tiers[0], 1);
        lead(mock, ch.env->dlq, 1);
        lead(mock, vt, 3);
        send_msg(0, "K", "ok-v2", "2", EXP_OK);
        send_msg(0, "K", "ok-v1", "1", EXP_STALE);
        send_msg(0, "L", "ok-l0", NULL, EXP_OK);
        send_msg(1, "M", "ok-m5", "5", EXP_OK);
        send_msg(1, "M", "ok-m4", "4", EXP_STALE);
        fail_next(mock, 3, 0 /* Produce */,
                  RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, NULL, 3);
        kretry_adapter_t *a =
                it_adapter(chaos_conf("versioning.header", "version"));
        drive_until_fails(a, 1);
        send_msg(0, "L", "ok-l1", NULL, EXP_OK);
        drive_until_fails(a, 3);
        KT_ASSERT(drive_until_done(a, 30000));
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_STALE), 2);
        errors_used(a, mock, 3, 0 /* Produce */);
        kretry_adapter_destroy(a);
        /* Partition 0 waits from its write's first failure until the write
         * is durable. */
        int k = 0;
        while (k < ch.fail_cnt && ch.fail_part[k] != 0)
                k++;
        KT_REQUIRE(k < ch.fail_cnt); /* its write was among those refused */
        KT_ASSERT_INT_EQ(
                calls_between("ok-l1", ch.fail_ts[k], ch.durable_ts[0][0][0]),
                0);
        KT_ASSERT_INT_EQ(kt_consume(ch.env->c, vt, 3, 3000, NULL, NULL), 2);
        KT_ASSERT_INT_EQ(account(), 0);
        chaos_destroy();
}

/* The backoff of a failing copy is capped at 10 s: a base of 20 s waits
 * 10 s. Closed while the copy waits (and the close gives up waiting for
 * it after revoke.timeout.ms), the adapter commits the other partition but
 * nothing past the failed copy; the next instance dead-letters it once and
 * nothing is lost. */
static void test_backoff_cap(void) {
        rd_kafka_mock_cluster_t *mock = chaos_new("30ms", 1);
        if (skip_without(
                    mock,
                    "it_cluster test_kill_tier_leader and test_kill_dlq_leader "
                    "SIGKILL the leaders of tiers and the DLQ "
                    "while copies are produced; a refusal that outlasts "
                    "revoke.timeout.ms needs the mock"))
                return;
        send_msg(0, "c", "ok-c0", NULL, EXP_OK);
        send_msg(0, "c", "fail-c1", NULL, EXP_DLQ);
        send_msg(0, "c", "ok-c2", NULL, EXP_OK);
        send_msg(1, "d", "ok-d0", NULL, EXP_OK);
        fail_next(mock, 1, 0 /* Produce */,
                  RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, NULL, 1);
        kretry_conf_t *conf = chaos_conf("produce.retry.backoff.ms", "10000");
        char err[256];
        /* A first wait above the cap would contradict it: refused. */
        KT_ASSERT_INT_EQ(kretry_conf_set(conf, "produce.retry.backoff.ms",
                                         "20000", err, sizeof(err)),
                         KRETRY_ERR_INVALID_VALUE);
        KT_REQUIRE(kretry_conf_set(conf, "revoke.timeout.ms", "300", err,
                                   sizeof(err)) == KRETRY_ERR_OK);
        kretry_adapter_t *a = it_adapter(conf);
        drive_until_fails(a, 1);
        KT_ASSERT_INT_EQ(ch.fail_backoff[0], 10000);
        drive(a, 500);
        KT_ASSERT_INT_EQ(ch.fail_cnt, 1); /* not produced again yet */
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(committed(ch.env->source, 0), 1);
        KT_ASSERT_INT_EQ(committed(ch.env->source, 1), 1);
        KT_ASSERT_INT_EQ(ch.routes[0][0][1], 0); /* never delivered */
        a = it_adapter(chaos_conf("retry.jitter", "0%"));
        KT_ASSERT(drive_until_done(a, 30000));
        kretry_adapter_destroy(a);
        account();
        chaos_destroy();
}

/* Fetch errors mid-stream: consumption recovers, nothing repeats. */
static void test_fetch_errors(void) {
        rd_kafka_mock_cluster_t *mock = chaos_new("30ms", 1);
        if (skip_without(mock, "it_cluster test_kill_source_leader SIGKILLs "
                               "the source partition's "
                               "leader mid-stream"))
                return;
        send_mix("f", 20);
        ch.watch            = "Fetch from broker";
        kretry_adapter_t *a = it_adapter(chaos_conf("retry.jitter", "0%"));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        static const rd_kafka_resp_err_t errs[] = {
                RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
                RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
                RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
                RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT};
        fail_next(mock, 1, 1 /* Fetch */, 0, errs, 6);
        send_mix("g", 10);
        KT_ASSERT(drive_until_done(a, 30000));
        errors_used(a, mock, 1, 1 /* Fetch */);
        KT_CHECK_MSG(ch.watched >= 1, CU_FALSE, "no Fetch failed");
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(account(), 0);
        chaos_destroy();
}

/* OffsetCommit refused for a while: commits resume, the final commit
 * reaches the end, nothing repeats. */
static void test_commit_errors(void) {
        rd_kafka_mock_cluster_t *mock = chaos_new("30ms", 1);
        if (skip_without(mock, "it_cluster test_kill_coordinator kills the "
                               "group coordinator's node "
                               "during a rebalance"))
                return;
        send_mix("c", 20);
        kretry_adapter_t *a = it_adapter(chaos_conf("retry.jitter", "0%"));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        static const rd_kafka_resp_err_t errs[] = {
                RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
                RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS,
                RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
                RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
                RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
                RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
                RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
                RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT};
        fail_next(mock, 1, 8 /* OffsetCommit */, 0, errs, 8);
        send_mix("d", 10);
        /* Auto-commit every 100 ms uses the errors up in about a second:
         * the committed offsets are checked meanwhile. */
        errors_used(a, mock, 1, 8 /* OffsetCommit */);
        KT_ASSERT(drive_until_done(a, 30000));
        /* librdkafka retries these errors itself and may log none of them:
         * errors_used() showed every one was answered to a commit. */
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(account(), 0);
        chaos_destroy();
}

/* A periodic commit that the coordinator answers with a timeout is sent
 * again by librdkafka a second later: the close's commit waits for it.
 * Sent after the close's, the older offsets it carries would be the ones
 * that stay (planted: the close not waiting for it, or librdkafka's own
 * auto-commit, which sends one every interval whatever is in flight:
 * committed at 17 or 18 of 30, 5 runs of 5 each). */
static void test_retried_commit_before_close(void) {
        rd_kafka_mock_cluster_t *mock = chaos_new("30ms", 1);
        if (skip_without(mock, "it_cluster test_kill_coordinator kills the "
                               "group coordinator's node "
                               "during a rebalance"))
                return;
        for (int i = 0; i < 10; i++)
                it_produce(ch.env, 0, "k", "ok-a", NULL);
        kretry_conf_t *conf = chaos_conf("consumer.retry.backoff.ms", "1000");
        char err[256];
        KT_REQUIRE(kretry_conf_set(conf, "consumer.retry.backoff.max.ms",
                                   "1000", err, sizeof(err)) == KRETRY_ERR_OK);
        kretry_adapter_t *a = it_adapter(conf);
        int64_t deadline    = kt_now_ms() + 20000;
        while (committed(ch.env->source, 0) != 10 && kt_now_ms() < deadline)
                drive(a, 20);
        KT_REQUIRE(committed(ch.env->source, 0) == 10);
        /* The next commit times out and goes again a second later, while
         * twenty calls of 9 ms decide the rest. */
        fail_next(mock, 1, 8 /* OffsetCommit */,
                  RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, NULL, 1);
        for (int i = 0; i < 20; i++)
                it_produce(ch.env, 0, "k", "work9", NULL);
        while (counter(a, KRETRY_COUNTER_OK) < 30 && kt_now_ms() < deadline)
                drive(a, 5);
        KT_REQUIRE(counter(a, KRETRY_COUNTER_OK) == 30);
        KT_CHECK_MSG(!errors_left(mock, 1, 8), CU_FALSE,
                     "the commit's timeout was not used while deciding");
        kretry_adapter_destroy(a);
        int64_t c = committed(ch.env->source, 0);
        KT_CHECK_MSG(c == 30, CU_FALSE,
                     "committed at %lld of 30 after the close", (long long)c);
        chaos_destroy();
}

/* JoinGroup and SyncGroup errors on the first join, then Heartbeat errors
 * that force a rebalance mid-stream (and more join errors on the rejoin):
 * every message ends as its value says; repeats are allowed (at least once)
 * and reported. */
static void test_group_errors(void) {
        rd_kafka_mock_cluster_t *mock = chaos_new("30ms", 1);
        if (skip_without(mock, "it_cluster test_kill_coordinator kills the "
                               "group coordinator's node "
                               "during a rebalance"))
                return;
        /* The consumer group protocol has one group request for all:
         * refused while the coordinator loads, then a fenced epoch, which
         * makes the member join again. */
        int kip848 = kt_consumer_protocol();
        int16_t join =
                kip848 ? KT_CONSUMER_GROUP_HEARTBEAT : 11 /* JoinGroup */;
        send_mix("j", 20);
        fail_next(mock, 1, join, RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS,
                  NULL, 2);
        if (!kip848)
                fail_next(mock, 1, 14 /* SyncGroup */,
                          RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS, NULL, 1);
        kretry_adapter_t *a = it_adapter(chaos_conf("retry.jitter", "0%"));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 30000));
        errors_used(a, mock, 1, join);
        if (!kip848)
                errors_used(a, mock, 1, 14 /* SyncGroup */);
        /* A rebalance from here on ends in an assignment callback, eager
         * or cooperative (which revokes nothing when the member keeps its
         * partitions, and assigns it none new). */
        ch.watched = 0;
        ch.watch   = "assigned ";
        if (kip848)
                fail_next(mock, 1, KT_CONSUMER_GROUP_HEARTBEAT,
                          RD_KAFKA_RESP_ERR_FENCED_MEMBER_EPOCH, NULL, 1);
        else {
                fail_next(mock, 1, 12 /* Heartbeat */,
                          RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS, NULL, 2);
                fail_next(mock, 1, 11 /* JoinGroup */,
                          RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS, NULL,
                          1);
        }
        send_mix("h", 10);
        int64_t deadline = kt_now_ms() + 30000;
        while (!ch.watched && kt_now_ms() < deadline)
                drive(a, 100);
        KT_CHECK_MSG(ch.watched >= 1, CU_FALSE, "no rebalance happened");
        send_mix("i", 10);
        KT_ASSERT(drive_until_done(a, 60000));
        errors_used(a, mock, 1, kip848 ? KT_CONSUMER_GROUP_HEARTBEAT : 12);
        if (!kip848)
                errors_used(a, mock, 1, 11 /* JoinGroup */);
        /* The test cluster refuses every commit while a rebalance is
         * pending (a broker accepts the current generation's): under the
         * cooperative assignor the member keeps its partitions through the
         * rejoin, so the commits that count are the ones once the group is
         * steady again. */
        int64_t until = kt_now_ms() + 30000;
        while (!committed_to_end() && kt_now_ms() < until)
                drive(a, 100);
        kretry_adapter_destroy(a);
        account();
        chaos_destroy();
}

/* The index of the first call of @p value with @p attempt, or -1. */
static int call_index(const char *value, int attempt) {
        for (int i = 0; i < ch.env->call_cnt; i++)
                if (!strcmp(ch.env->calls[i].value, value) &&
                    ch.env->calls[i].attempt == attempt)
                        return i;
        return -1;
}

/* Commit the source's partition 0 at its start, before any member joins
 * (a plain client of the group's id, which a group without members lets
 * commit). */
static void commit_source_start(void) {
        KT_ASSERT_INT_EQ(
                kt_commit(ch.env->c, ch.env->group, ch.env->source, 0, 0), 0);
        KT_ASSERT_INT_EQ(committed(ch.env->source, 0), 0);
}

/* ordering=key: key K's head fails and its tier copy is refused (the
 * refusal answered 500 ms late), while K's next message is parked behind
 * it and that parked copy is delivered. The instance then stops without
 * producing the head's copy again (revoke.timeout.ms 0: as if it died), so
 * the head is only on the source, uncommitted. The next instance must
 * still handle the head before the follower. */
static void ordered_head_copy_refused(int committed_source) {
        rd_kafka_mock_cluster_t *mock = chaos_new("30ms", 1);
        if (skip_without(mock, "it_cluster test_kill_tier_leader SIGKILLs a "
                               "tier partition's leader "
                               "under ordering=key"))
                return;
        if (committed_source)
                commit_source_start();
        send_msg(0, "K", "retry1-h", NULL, EXP_OK);
        /* Other keys in between. */
        for (int i = 0; i < 10; i++) {
                char k[8];
                snprintf(k, sizeof(k), "x%d", i);
                send_msg(0, k, "okslow", NULL, EXP_OK);
        }
        rd_kafka_mock_broker_push_request_error_rtts(
                mock, 1, 0 /* Produce */, 1,
                RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, 500);
        kretry_conf_t *conf = chaos_conf("ordering", "key");
        char err[256];
        KT_REQUIRE(kretry_conf_set(conf, "revoke.timeout.ms", "0", err,
                                   sizeof(err)) == KRETRY_ERR_OK);
        KT_REQUIRE(kretry_conf_set(conf, "produce.retry.backoff.ms", "5000",
                                   err, sizeof(err)) == KRETRY_ERR_OK);
        kretry_adapter_t *a = it_adapter(conf);
        int64_t deadline    = kt_now_ms() + 20000;
        /* K's next message comes once the head's copy is on its way (its
         * refusal is answered 500 ms late), so that the parked copy leaves
         * in a request of its own; on its way means its request took the
         * refusal (a new producer waits for its id first, up to 500 ms,
         * and the test's own produce must not take it instead). */
        while (call_index("retry1-h", 1) < 0 && kt_now_ms() < deadline)
                drive(a, 20);
        while (errors_left(mock, 1, 0 /* Produce */) && kt_now_ms() < deadline)
                drive(a, 5);
        drive(a, 50);
        send_msg(0, "K", "ok-f", NULL, EXP_OK);
        while ((ch.fail_cnt < 1 || !ch.env->routes[KRETRY_ROUTE_PARKED]) &&
               kt_now_ms() < deadline)
                drive(a, 50);
        fprintf(stderr, "  failed copies %d, parked copies delivered %d\n",
                ch.fail_cnt, ch.env->routes[KRETRY_ROUTE_PARKED]);
        KT_REQUIRE(ch.fail_cnt >= 1 && ch.env->routes[KRETRY_ROUTE_PARKED]);
        kretry_adapter_destroy(a);
        /* Nothing of partition 0 committed: its first offset is the head. */
        KT_ASSERT(committed(ch.env->source, 0) <= 0);
        a        = it_adapter(chaos_conf("ordering", "key"));
        deadline = kt_now_ms() + 30000;
        while ((call_index("retry1-h", 2) < 0 || call_index("ok-f", 1) < 0) &&
               kt_now_ms() < deadline)
                drive(a, 50);
        kretry_adapter_destroy(a);
        int head = call_index("retry1-h", 2), follower = call_index("ok-f", 1);
        KT_REQUIRE(head >= 0 && follower >= 0);
        KT_CHECK_MSG(head < follower, CU_FALSE,
                     "the follower was handled (call %d) before its key's "
                     "head succeeded (call %d)",
                     follower, head);
        chaos_destroy();
}

static void test_ordered_head_copy_refused(void) {
        ordered_head_copy_refused(0);
}

/* The same when the group has a committed offset for the source, as it
 * does in production: the next instance then fetches the source at once
 * instead of asking for the log start first, and the source's messages
 * arrive in the same batch as the follower's copy (before the fix, 1 in 8
 * ASan runs handled the follower first: the source had been consumed past
 * it while the head still waited in its key's gate behind the copy). */
static void test_ordered_head_copy_refused_committed(void) {
        ordered_head_copy_refused(1);
}

/* Leaders of the source, tier and DLQ partitions move between three
 * brokers mid-stream, then a broker that leads some of them goes down and
 * comes back. */
static void test_leaders_and_broker_down(void) {
        rd_kafka_mock_cluster_t *mock = chaos_new("30ms", 3);
        if (skip_without(
                    mock,
                    "it_cluster test_kill_source_leader, "
                    "test_kill_tier_leader, test_kill_dlq_leader and "
                    "test_stop_broker SIGKILL the leaders of the source, a "
                    "tier and "
                    "the DLQ, and stops a broker longer than the tier delays"))
                return;
        const char *topics[] = {ch.env->source, ch.env->tiers[0], ch.env->dlq};
        for (int t = 0; t < 3; t++)
                lead(mock, topics[t], 1);
        send_mix("l", 20);
        kretry_adapter_t *a = it_adapter(chaos_conf("retry.jitter", "0%"));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        for (int t = 0; t < 3; t++)
                for (int p = 0; p < PARTS; p++)
                        rd_kafka_mock_partition_set_leader(mock, topics[t], p,
                                                           2 + (p + t) % 2);
        send_mix("m", 10);
        drive(a, 300);
        rd_kafka_mock_broker_set_down(mock, 2);
        drive(a, 500);
        rd_kafka_mock_broker_set_up(mock, 2);
        send_mix("n", 10);
        KT_ASSERT(drive_until_done(a, 60000));
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(account(), 0);
        chaos_destroy();
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_dlq_copy_fails),
                KT_TEST(test_changelog_write_fails),
                KT_TEST(test_backoff_cap),
                KT_TEST(test_ordered_head_copy_refused),
                KT_TEST(test_ordered_head_copy_refused_committed),
                KT_TEST(test_fetch_errors),
                KT_TEST(test_commit_errors),
                KT_TEST(test_retried_commit_before_close),
                KT_TEST(test_group_errors),
                KT_TEST(test_leaders_and_broker_down),
                KT_END};
        return kt_main("it_chaos", tests, argc, argv);
}
