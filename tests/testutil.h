/*
 * Shared test helpers: a CUnit runner, assertions that print expected and
 * actual, and a Kafka cluster for integration tests — librdkafka's mock
 * cluster in-process, or a real cluster when KRETRY_TEST_BOOTSTRAP is set.
 */
#ifndef KRETRY_TESTUTIL_H
#define KRETRY_TESTUTIL_H

#include "kt_protocol.h"

#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
        const char *name;
        void (*fn)(void);
} kt_test_t;

/* The exit status of a suite whose tests passed except some that skipped;
 * CTest counts it as skipped (SKIP_RETURN_CODE), never as passed. */
#define KT_SKIPPED 77

/* Runs the tests of one suite: all of them, the one named by argv[1], or all
 * but those named after "--except". Exits 1 when one failed (or none ran),
 * KT_SKIPPED when none failed and one called kt_skip, else 0. */
int kt_main(const char *suite, const kt_test_t *tests, int argc, char **argv);

/* Marks the running test as skipped and says why on stdout ("SKIPPED:
 * test: why"); the caller then returns. A skip is never counted as a pass:
 * the suite exits KT_SKIPPED unless a test failed. */
void kt_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define KT_TEST(fn)                                                            \
        { #fn, fn }
#define KT_END                                                                 \
        { NULL, NULL }

#define KT_CHECK_MSG(cond, fatal, ...)                                         \
        do {                                                                   \
                char kt_msg_[2048];                                            \
                snprintf(kt_msg_, sizeof(kt_msg_), __VA_ARGS__);               \
                CU_assertImplementation(!!(cond), __LINE__, kt_msg_, __FILE__, \
                                        "", fatal);                            \
        } while (0)

#define KT_ASSERT_INT_EQ(actual, expected)                                     \
        do {                                                                   \
                long long kt_a_ = (long long)(actual);                         \
                long long kt_e_ = (long long)(expected);                       \
                KT_CHECK_MSG(kt_a_ == kt_e_, CU_FALSE,                         \
                             "%s == %s: expected %lld, got %lld", #actual,     \
                             #expected, kt_e_, kt_a_);                         \
        } while (0)

#define KT_ASSERT_STR_EQ(actual, expected)                                     \
        do {                                                                   \
                const char *kt_a_ = (actual);                                  \
                const char *kt_e_ = (expected);                                \
                KT_CHECK_MSG(kt_a_ &&kt_e_ && !strcmp(kt_a_, kt_e_), CU_FALSE, \
                             "%s: expected \"%s\", got \"%s\"", #actual,       \
                             kt_e_ ? kt_e_ : "(null)",                         \
                             kt_a_ ? kt_a_ : "(null)");                        \
        } while (0)

#define KT_ASSERT(cond) KT_CHECK_MSG(cond, CU_FALSE, "%s", #cond)
#define KT_REQUIRE(cond) KT_CHECK_MSG(cond, CU_TRUE, "%s", #cond)

/* Milliseconds on the monotonic clock: for deadlines and intervals. */
int64_t kt_now_ms(void);
/* Milliseconds since the epoch: for comparing with Kafka timestamps and
 * kretry's own (kretry-due-ts, kretry-replayed-at, ...), never for waiting. */
int64_t kt_wall_ms(void);

/* A flight recorder of librdkafka's debug lines about consumer groups (the
 * mock cluster's group states, the tests' consumers' cgrp context): the
 * last KT_TRACE_LINES are kept, for a report of a group that never
 * assigned (seen under heavy load, cause not yet known). */
#define KT_TRACE_LINES 2048
void kt_trace(const char *fac, const char *msg);
/* Prints the recorded lines of the last @p ms milliseconds to stderr. */
void kt_trace_dump(const char *why, int ms);

/* Each `key=value` line of the file the environment variable @p env names
 * (blank lines and `#` comments skipped), given to @p set in order; none
 * when @p env is unset or empty. A file that cannot be read, or a line
 * without `=`, stops the test. The real passes on a secured cluster
 * (scripts/test.sh) name two such files: KRETRY_TEST_KAFKA_PROPS, the
 * login of the test's own clients (topics created, input produced, copies
 * and offsets read), and KRETRY_TEST_SERVICE_PROPS, that of the kretry
 * under test (the adapter's configuration, a topology file's kafka:
 * section), so that kretry runs with only the ACLs a service gets. */
void kt_env_props(const char *env,
                  void (*set)(const char *name,
                              const char *value,
                              void *opaque),
                  void *opaque);

/* A Kafka cluster for one test. */
typedef struct kt_cluster_s kt_cluster_t;

/* In-process mock cluster with @p brokers brokers, or the real cluster named
 * by KRETRY_TEST_BOOTSTRAP. */
kt_cluster_t *kt_cluster_new(int brokers);
void kt_cluster_destroy(kt_cluster_t *c);
const char *kt_cluster_bootstrap(const kt_cluster_t *c);
/* The mock cluster, or NULL on a real cluster (fault-injection tests skip). */
rd_kafka_mock_cluster_t *kt_cluster_mock(const kt_cluster_t *c);
/* The mock cluster, for a test that needs its fault injection; on a real
 * cluster NULL, after kt_skip() with "needs the mock cluster" and
 * @p on_real: the real-cluster test that proves the same promise, or why
 * none can. The real pass accepts exactly these skips (scripts/test.sh). */
rd_kafka_mock_cluster_t *kt_mock_only(const kt_cluster_t *c,
                                      const char *on_real);
/* 1 when KRETRY_TEST_BOOTSTRAP names a real cluster (as kt_cluster_new
 * reads it); else 0, after kt_skip() with "needs a real cluster in
 * KRETRY_TEST_BOOTSTRAP" and @p why (NULL: none), why the mock cannot
 * prove it. */
int kt_real_only(const char *why);
/* 1 under the classic group protocol; else 0, after kt_skip() with "needs
 * the classic group protocol" and @p why: what the test depends on that
 * the consumer protocol (KRETRY_TEST_GROUP_PROTOCOL=consumer) does not
 * offer (an eager assignor, the client choosing the assignment). The
 * consumer protocol's real pass accepts exactly these skips besides the
 * mock's (scripts/test.sh). */
int kt_classic_protocol(const char *why);
/* The consumer group protocol's one group request (KIP-848): joining,
 * staying, leaving and being assigned all ride on it. */
#define KT_CONSUMER_GROUP_HEARTBEAT 68
/* The coordinator forgets the member at its next heartbeat, as after a
 * session timeout: its assignment is lost, and it joins again
 * (UNKNOWN_MEMBER_ID to a Heartbeat under the classic protocol,
 * FENCED_MEMBER_EPOCH to a ConsumerGroupHeartbeat under the consumer
 * one). */
void kt_lose_assignment(rd_kafka_mock_cluster_t *mock);
/* Create topic "<prefix>-<unique>" with @p partitions; its name goes to
 * @p name. Returns 0 on success. */
int kt_cluster_topic(kt_cluster_t *c,
                     const char *prefix,
                     int partitions,
                     char *name,
                     size_t name_size);
/* Create a topic with exactly this name. On a real cluster every topic a
 * test creates takes messages up to 8 MiB and is deleted when @p c is
 * destroyed. */
int kt_cluster_topic_named(kt_cluster_t *c, const char *name, int partitions);
/* The same for a version changelog: compacted on a real cluster (the
 * adapter's topology check refuses one that is not). */
int kt_cluster_changelog(kt_cluster_t *c, const char *name, int partitions);
/* A unique name with @p prefix (for groups), after the run's
 * KRETRY_TEST_NAME_PREFIX if set (and @p prefix does not start with it). */
void kt_unique_name(const char *prefix, char *name, size_t name_size);

/* Write @p path: a topology file for the kretry commands with one topology
 * "orders" on @p c (socket.nagle.disable, fetch.wait.max.ms 10): @p source,
 * @p group, retry tiers @p tiers (a YAML list, e.g. "[1s, 10s]"), then
 * @p extra (lines of the topology, indented by four spaces; "" for none). */
void kt_write_topology(const kt_cluster_t *c,
                       const char *path,
                       const char *source,
                       const char *group,
                       const char *tiers,
                       const char *extra);

/* librdkafka client config for the test cluster (fast timings, Nagle off). */
rd_kafka_conf_t *kt_rdkafka_conf(const kt_cluster_t *c);

/* A consumer of @p group that never commits by itself nor joins unless
 * told (assign, or commit as the group); the caller destroys it. */
rd_kafka_t *kt_group_client(const kt_cluster_t *c, const char *group);

/* Commit @p offset of @p topic [@p partition] as @p group, from a client
 * that never joins (a group without members accepts it). Returns the
 * commit's error. */
/* Set topic configuration @p name to @p value (AlterConfigs; the mock
 * cluster answers without enforcing it); a refusal fails the test. */
void kt_topic_config(const kt_cluster_t *c,
                     const char *topic,
                     const char *name,
                     const char *value);

rd_kafka_resp_err_t kt_commit(const kt_cluster_t *c,
                              const char *group,
                              const char *topic,
                              int32_t partition,
                              int64_t offset);
/* The same with the commit's metadata @p md (NULL for none). */
rd_kafka_resp_err_t kt_commit_md(const kt_cluster_t *c,
                                 const char *group,
                                 const char *topic,
                                 int32_t partition,
                                 int64_t offset,
                                 const char *md);

/* Produce synchronously (waits for delivery); @p hdrs is taken (may be NULL).
 * Returns the delivery error. */
rd_kafka_resp_err_t kt_produce(const kt_cluster_t *c,
                               const char *topic,
                               int32_t partition,
                               const void *key,
                               size_t key_len,
                               const void *value,
                               size_t value_len,
                               rd_kafka_headers_t *hdrs);

/* Read every partition of @p topic from the beginning until @p expected
 * messages were seen or @p timeout_ms passed; @p cb (may be NULL) sees each.
 * Returns the number of messages seen. Reads without a group. */
int kt_consume(const kt_cluster_t *c,
               const char *topic,
               int expected,
               int timeout_ms,
               void (*cb)(const rd_kafka_message_t *m, void *opaque),
               void *opaque);

/* Committed offset of @p group on topic/partition, or RD_KAFKA_OFFSET_INVALID
 * when the group has committed none there. A lookup that fails (no answer,
 * an error for the group or the partition) fails the running test with the
 * error and does not return: no error value can pass for an offset. */
int64_t kt_committed(const kt_cluster_t *c,
                     const char *group,
                     const char *topic,
                     int32_t partition);
/* The same, and the commit's metadata into @p md ("" when none). */
int64_t kt_committed_md(const kt_cluster_t *c,
                        const char *group,
                        const char *topic,
                        int32_t partition,
                        char *md,
                        size_t md_size);

/* A message read back (kt_consume) from a tier or the DLQ: key, value and
 * headers copied out, each cut to its buffer (lengths are the whole). */
typedef struct {
        int key_null, value_null, hdr_cnt;
        char key[64], value[64]; /* NUL-terminated */
        size_t key_len, value_len;
        char names[32][48];
        char vals[32][128]; /* NUL-terminated */
        size_t lens[32];
} kt_copy_t;

/* Up to @p max messages, each into the next kt_copy_t. */
typedef struct {
        kt_copy_t *m;
        int n, max;
} kt_copies_t;

/* A kt_consume() callback: @p opaque is a kt_copies_t. */
void kt_copy_grab(const rd_kafka_message_t *m, void *opaque);

/* The copy whose value is @p value, or NULL. */
const kt_copy_t *kt_copy_find(const kt_copies_t *cs, const char *value);

/* The last header named @p name of @p c (NUL-terminated), NULL when absent;
 * kt_copy_hdr_cnt: how many there are. */
const char *kt_copy_hdr(const kt_copy_t *c, const char *name);
int kt_copy_hdr_cnt(const kt_copy_t *c, const char *name);

/* Value of the last header named @p name as a NUL-terminated string in @p buf,
 * or NULL when absent. */
const char *kt_header(const rd_kafka_message_t *m,
                      const char *name,
                      char *buf,
                      size_t size);

/* Run @p path with @p argv (NULL-terminated, argv[0] included) and wait
 * for it. Its stdout, and with @p with_stderr its stderr too, goes to
 * @p out (may be NULL), NUL-terminated; what does not fit is read and
 * dropped, so the program never blocks on a full pipe. Returns the exit
 * status, -1 when a signal ended it. */
int kt_run(const char *path,
           const char *const *argv,
           int with_stderr,
           char *out,
           size_t out_size);

/* xorshift64 over *@p state: 0 .. @p n - 1 (0 when @p n is 0), the same
 * choices on every libc for one seed. */
unsigned kt_rand_below(uint64_t *state, unsigned n);

/* Sleep @p ms: only for waits on another process's progress (a broker, a
 * worker, a command), where there is no event to await. */
void kt_nap_ms(int ms);

/* @p v as @p n big-endian bytes into @p out (Java's putInt/putLong: the
 * binary numbers of Spring Kafka's headers). */
void kt_put_be(unsigned char *out, int64_t v, int n);

/* SIGTERM to child @p pid, then wait for it at most @p timeout_ms, SIGKILL
 * after that; its wait status goes to @p status. Returns 1 when it ended
 * within the time, 0 when it had to be killed. */
int kt_terminate(int pid, int timeout_ms, int *status);

#endif
