/*
 * Held messages answered later (kretry_msg_hold, KRETRY_ASYNC,
 * kretry_msg_complete) on the test cluster: completion from a foreign
 * thread under per-key order, completion before the handler returned,
 * held messages counting against handler.concurrency, handler.thread poll
 * (calls on the polling thread, completed from the application's loop),
 * completion after a revocation and after destroy began, and through the
 * aborted transactions of routing=transactional (real Kafka only).
 */
#include "it_harness.h"
#include "restore.h" /* kretry_test_txn_blind */
#include "txn.h"     /* kretry_test_txn_fails */

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEYS 50
#define PER_KEY 20
#define PARTS 2

static void sleep_us(long us) {
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
}

/* Held messages waiting for the completer thread. */
typedef struct {
        pthread_mutex_t lock;
        kretry_msg_t *q[4096];
        int n;
        atomic_int stop;
        /* Per key: the highest seq started, and one held at a time. */
        atomic_int started[KEYS], held[KEYS];
        atomic_int ok[KEYS][PER_KEY];
        atomic_int overlaps, violations, retries, calls;
        atomic_int completed_late; /* completions after their revocation */
        pthread_t handler_thread;  /* handler.thread poll: the caller */
        atomic_int foreign_calls;  /* calls on another thread than that */
} async_state_t;

/* Every message held and queued for the completer; per-key order asserted
 * here, when the call starts. */
static kretry_action_t hold_handler(kretry_msg_t *msg, void *opaque) {
        async_state_t *st = opaque;
        int key, seq;
        it_key_seq(msg, &key, &seq);
        if (atomic_fetch_add(&st->held[key], 1) != 0)
                atomic_fetch_add(&st->overlaps, 1);
        if (atomic_load(&st->started[key]) > seq)
                atomic_fetch_add(&st->violations, 1);
        atomic_store(&st->started[key], seq);
        kretry_msg_t *h = kretry_msg_hold(msg);
        pthread_mutex_lock(&st->lock);
        st->q[st->n++] = h;
        pthread_mutex_unlock(&st->lock);
        /* Counted once queued: a count seen means its message is in q. */
        atomic_fetch_add(&st->calls, 1);
        return KRETRY_ASYNC;
}

/* Answer a held message: 10 % transient failures (the first attempt only,
 * by key and seq), OK otherwise. */
static void answer(async_state_t *st, kretry_msg_t *h) {
        int key, seq;
        it_key_seq(h, &key, &seq);
        int retry =
                kretry_msg_attempt(h) == 1 && (key * 31 + seq * 7) % 10 == 0;
        if (retry) {
                kretry_msg_set_error(h, "LATER", "try again");
                atomic_fetch_add(&st->retries, 1);
        } else {
                atomic_store(&st->ok[key][seq], 1);
        }
        atomic_fetch_sub(&st->held[key], 1);
        KT_ASSERT_INT_EQ(
                kretry_msg_complete(h, retry ? KRETRY_RETRY : KRETRY_OK), 0);
}

/* The application's own thread: answers what is held, oldest last, after
 * 0-2 ms (so that answers come back out of order). */
static void *completer(void *arg) {
        async_state_t *st = arg;
        unsigned r        = 7;
        while (!atomic_load(&st->stop)) {
                kretry_msg_t *h = NULL;
                pthread_mutex_lock(&st->lock);
                if (st->n)
                        h = st->q[--st->n];
                pthread_mutex_unlock(&st->lock);
                r = r * 1103515245u + 12345u;
                sleep_us(h ? (long)(r >> 16) % 2000 : 500);
                if (h)
                        answer(st, h);
        }
        return NULL;
}

static int all_ok(async_state_t *st) {
        for (int k = 0; k < KEYS; k++)
                for (int s = 0; s < PER_KEY; s++)
                        if (!atomic_load(&st->ok[k][s]))
                                return 0;
        return 1;
}

static async_state_t *state_new(void) {
        async_state_t *st = calloc(1, sizeof(*st));
        KT_REQUIRE(st != NULL);
        pthread_mutex_init(&st->lock, NULL);
        for (int k = 0; k < KEYS; k++)
                atomic_store(&st->started[k], -1);
        return st;
}

static void state_free(async_state_t *st) {
        pthread_mutex_destroy(&st->lock);
        free(st);
}

/* Messages held by the handler and completed from the application's own
 * thread, out of order, with transient failures: per-key order holds
 * (one held message per key at a time, calls in offset order across
 * retries), everything ends OK, the committed offsets reach the end. */
static void test_complete_from_thread(void) {
        it_env_t *env = it_env_new("20ms", PARTS);
        it_produce_keys(env, KEYS, PER_KEY);
        async_state_t *st   = state_new();
        kretry_conf_t *conf = it_conf(env, "ordering", "key",
                                      "handler.concurrency", "8", NULL);
        kretry_conf_set_handler(conf, hold_handler, st);
        kretry_conf_set_route_cb(conf, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        pthread_t t;
        KT_REQUIRE(pthread_create(&t, NULL, completer, st) == 0);
        int64_t deadline = kt_now_ms() + 60000;
        while (!all_ok(st) && kt_now_ms() < deadline)
                kretry_adapter_poll(a, 50);
        KT_ASSERT(all_ok(st));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, KEYS * PER_KEY, 10000));
        atomic_store(&st->stop, 1);
        pthread_join(t, NULL);
        KT_ASSERT_INT_EQ(atomic_load(&st->overlaps), 0);
        KT_ASSERT_INT_EQ(atomic_load(&st->violations), 0);
        KT_ASSERT(atomic_load(&st->retries) > 0);
        /* A copy's delivery report may be served after its retry was
         * consumed from the tier and handled: wait for the count. */
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_RETRIED,
                                  atomic_load(&st->retries), 10000));
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 0),
                         atomic_load(&st->retries));
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_INFLIGHT, 0),
                         0);
        kretry_adapter_destroy(a);
        for (int p = 0; p < PARTS; p++)
                KT_ASSERT_INT_EQ(
                        kt_committed(env->c, env->group, env->source, p),
                        KEYS / PARTS * PER_KEY);
        state_free(st);
        it_env_destroy(env);
}

static int answer_routed(kretry_adapter_t *a, it_env_t *env) {
        (void)env;
        return kretry_adapter_counter(a, KRETRY_COUNTER_OK, 0) +
                       kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 0) >=
               1;
}

/* Held messages count against handler.concurrency: with 3 slots and no
 * answer, the handler is called 3 times, however long the wait; each
 * answer lets one more in. */
static void test_held_count_against_concurrency(void) {
        it_env_t *env = it_env_new("20ms", 1);
        for (int i = 0; i < 10; i++) {
                char key[16], v[32];
                snprintf(key, sizeof(key), "key-%d", i);
                snprintf(v, sizeof(v), "%d:0", i);
                it_produce(env, 0, key, v, NULL);
        }
        async_state_t *st   = state_new();
        kretry_conf_t *conf = it_conf(env, "handler.concurrency", "3", NULL);
        kretry_conf_set_handler(conf, hold_handler, st);
        kretry_conf_set_route_cb(conf, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        int64_t deadline    = kt_now_ms() + 30000;
        while (atomic_load(&st->calls) < 3 && kt_now_ms() < deadline)
                kretry_adapter_poll(a, 50);
        KT_REQUIRE(atomic_load(&st->calls) == 3);
        int64_t end = kt_now_ms() + 500;
        while (kt_now_ms() < end)
                kretry_adapter_poll(a, 50);
        KT_ASSERT_INT_EQ(atomic_load(&st->calls), 3);
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_INFLIGHT, 0),
                         10);
        pthread_mutex_lock(&st->lock);
        kretry_msg_t *h = st->q[--st->n];
        pthread_mutex_unlock(&st->lock);
        answer(st, h);
        deadline = kt_now_ms() + 10000;
        while (atomic_load(&st->calls) < 4 && kt_now_ms() < deadline)
                kretry_adapter_poll(a, 50);
        KT_ASSERT_INT_EQ(atomic_load(&st->calls), 4);
        /* The answer was routed: OK, or a retry (answer() retries one in
         * ten by key and seq, key 0's first among them, and which of the
         * three was held last depends on the workers' race). */
        KT_ASSERT(it_run_until(a, answer_routed, env, 10000));
        /* The rest, answered now. */
        atomic_store(&st->stop, 0);
        pthread_t t;
        KT_REQUIRE(pthread_create(&t, NULL, completer, st) == 0);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 10, 20000));
        atomic_store(&st->stop, 1);
        pthread_join(t, NULL);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 10);
        state_free(st);
        it_env_destroy(env);
}

/* Answered before the handler returned KRETRY_ASYNC (the work finished at
 * once): that answer counts; a second one is refused. */
static kretry_action_t early_handler(kretry_msg_t *msg, void *opaque) {
        async_state_t *st = opaque;
        kretry_msg_t *h   = kretry_msg_hold(msg);
        int n             = atomic_fetch_add(&st->calls, 1);
        kretry_msg_set_error(h, "EARLY", "answered in the call");
        KT_ASSERT_INT_EQ(
                kretry_msg_complete(h, n == 0 ? KRETRY_FAIL : KRETRY_OK), 0);
        KT_ASSERT_INT_EQ(kretry_msg_complete(h, KRETRY_RETRY), -1);
        return KRETRY_ASYNC;
}

static void test_complete_during_call(void) {
        it_env_t *env = it_env_new("20ms", 1);
        it_produce(env, 0, "k1", "0:0", NULL);
        it_produce(env, 0, "k2", "1:0", NULL);
        async_state_t *st   = state_new();
        kretry_conf_t *conf = it_conf(env, NULL);
        kretry_conf_set_handler(conf, early_handler, st);
        kretry_conf_set_route_cb(conf, NULL); /* it shares the opaque */
        kretry_adapter_t *a = it_adapter(conf);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 1, 20000));
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_DLQ_PERMANENT, 0), 1);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 2);
        static kt_copy_t m[1];
        kt_copies_t kc = {.m = m, .max = 1};
        KT_REQUIRE(kt_consume(env->c, env->dlq, 1, 10000, kt_copy_grab, &kc) ==
                   1);
        KT_ASSERT_STR_EQ(kt_copy_hdr(&m[0], "kretry-error-code"), "EARLY");
        state_free(st);
        it_env_destroy(env);
}

/* handler.thread poll: the handler runs on the thread that polls, and a
 * message held there is completed from that thread's own loop between
 * polls — no lock, no other thread. */
static kretry_action_t poll_thread_handler(kretry_msg_t *msg, void *opaque) {
        async_state_t *st = opaque;
        if (!pthread_equal(pthread_self(), st->handler_thread))
                atomic_fetch_add(&st->foreign_calls, 1);
        return hold_handler(msg, opaque);
}

static void test_poll_thread(void) {
        it_env_t *env = it_env_new("20ms", PARTS);
        it_produce_keys(env, KEYS, PER_KEY);
        async_state_t *st  = state_new();
        st->handler_thread = pthread_self();
        kretry_conf_t *conf =
                it_conf(env, "ordering", "key", "handler.concurrency", "16",
                        "handler.thread", "poll", NULL);
        kretry_conf_set_handler(conf, poll_thread_handler, st);
        kretry_conf_set_route_cb(conf, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        int64_t deadline    = kt_now_ms() + 60000;
        int most            = 0;
        while (!all_ok(st) && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 10);
                /* The loop's own work: answer everything held. */
                if (st->n > most)
                        most = st->n;
                while (st->n)
                        answer(st, st->q[--st->n]);
        }
        KT_ASSERT(all_ok(st));
        KT_ASSERT_INT_EQ(atomic_load(&st->foreign_calls), 0);
        KT_ASSERT_INT_EQ(atomic_load(&st->overlaps), 0);
        KT_ASSERT_INT_EQ(atomic_load(&st->violations), 0);
        KT_ASSERT(most > 1 && most <= 16);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, KEYS * PER_KEY, 10000));
        kretry_adapter_destroy(a);
        state_free(st);
        it_env_destroy(env);
}

/* Routes of the first member: a RETRY of a revoked partition must not be
 * routed. */
static atomic_int routed_copies;

static void count_copies(const char *topic,
                         int32_t partition,
                         int64_t offset,
                         kretry_route_t route,
                         int tier,
                         const char *cls,
                         int attempt,
                         void *opaque) {
        (void)topic, (void)partition, (void)offset, (void)tier, (void)cls,
                (void)attempt, (void)opaque;
        if (route != KRETRY_ROUTE_OK)
                atomic_fetch_add(&routed_copies, 1);
}

/* The partitions whose messages @p st holds now: 1 << partition each. */
static unsigned held_parts(async_state_t *st) {
        unsigned parts = 0;
        pthread_mutex_lock(&st->lock);
        for (int i = 0; i < st->n; i++)
                parts |= 1u << kretry_msg_partition(st->q[i]);
        pthread_mutex_unlock(&st->lock);
        return parts;
}

/* Polls @p b, answering OK whatever it holds, until the source's
 * committed offset is 1 on every partition or 30 s passed. */
static void
new_owner_commits(it_env_t *env, kretry_adapter_t *b, async_state_t *st2) {
        int64_t deadline = kt_now_ms() + 30000, next_look = 0;
        int left = PARTS;
        while (left && kt_now_ms() < deadline) {
                kretry_adapter_poll(b, 20);
                for (;;) {
                        kretry_msg_t *h = NULL;
                        pthread_mutex_lock(&st2->lock);
                        if (st2->n)
                                h = st2->q[--st2->n];
                        pthread_mutex_unlock(&st2->lock);
                        if (!h)
                                break;
                        KT_ASSERT_INT_EQ(kretry_msg_complete(h, KRETRY_OK), 0);
                }
                if (kt_now_ms() < next_look)
                        continue;
                next_look = kt_now_ms() + 200;
                left      = 0;
                for (int p = 0; p < PARTS; p++)
                        left += kt_committed(env->c, env->group, env->source,
                                             p) != 1;
        }
        for (int p = 0; p < PARTS; p++)
                KT_CHECK_MSG(kt_committed(env->c, env->group, env->source, p) ==
                                     1,
                             CU_FALSE,
                             "the new owner handled and committed partition "
                             "%d: expected offset 1, got %lld",
                             p,
                             (long long)kt_committed(env->c, env->group,
                                                     env->source, p));
}

/* Held messages whose partitions are revoked (a second member joins)
 * before they are answered: the answers that come after are discarded,
 * never routed nor committed, and the new owner handles the messages. With
 * @p assignor eager both of a's partitions are revoked; cooperative, only
 * the one that moves to b, and the answer for the one a keeps is routed
 * as usual: @p kept_routed copies. b holds what it is given, so that
 * nothing of the revoked partitions is committed until the test answers:
 * a commit seen before that is the late answers'. */
static void complete_after_revoke(const char *assignor, int kept_routed) {
        it_env_t *env = it_env_new("20ms", PARTS);
        for (int p = 0; p < PARTS; p++)
                it_produce(env, p, "k", p ? "1:0" : "0:0", NULL);
        async_state_t *st = state_new(), *st2 = state_new();
        kretry_conf_t *c1 = it_conf(
                env, "handler.concurrency", "4", "revoke.timeout.ms", "200",
                "consumer.partition.assignment.strategy", assignor, NULL);
        kretry_conf_set_handler(c1, hold_handler, st);
        kretry_conf_set_route_cb(c1, count_copies);
        kretry_conf_t *c2 = kretry_conf_dup(c1);
        kretry_conf_set_handler(c2, hold_handler, st2);
        kretry_conf_set_route_cb(c2, NULL);
        atomic_store(&routed_copies, 0);
        kretry_adapter_t *a = it_adapter(c1);
        int64_t deadline    = kt_now_ms() + 30000;
        while (atomic_load(&st->calls) < PARTS && kt_now_ms() < deadline)
                kretry_adapter_poll(a, 50);
        KT_REQUIRE(atomic_load(&st->calls) == PARTS);
        kretry_msg_t *before[PARTS];
        pthread_mutex_lock(&st->lock);
        for (int i = 0; i < PARTS; i++)
                before[i] = st->q[--st->n];
        pthread_mutex_unlock(&st->lock);
        kretry_adapter_t *b = it_adapter(c2);
        /* The join revokes a's partitions that move (eager: both): a waits
         * 200 ms for their held messages, then lets go; b gets its share. */
        deadline = kt_now_ms() + 30000;
        while (atomic_load(&st2->calls) == 0 && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 20);
                kretry_adapter_poll(b, 20);
        }
        KT_CHECK_MSG(atomic_load(&st2->calls) > 0, CU_TRUE,
                     "b, the new owner, is handed the messages of the "
                     "partitions that moved (none in 30 s)");
        unsigned moved = held_parts(st2);
        /* Now the late answers: RETRY, which would make tier copies. */
        for (int i = 0; i < PARTS; i++)
                KT_ASSERT_INT_EQ(kretry_msg_complete(before[i], KRETRY_RETRY),
                                 0);
        /* Every message handed out again by its owner: eager, a's share to
         * a, cooperative, the copy of the one a kept from its tier. */
        deadline = kt_now_ms() + 30000;
        while (atomic_load(&st->calls) + atomic_load(&st2->calls) < 2 * PARTS &&
               kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 20);
                kretry_adapter_poll(b, 20);
        }
        KT_CHECK_MSG(
                atomic_load(&st->calls) + atomic_load(&st2->calls) >= 2 * PARTS,
                CU_FALSE,
                "each message handed out again after the revoke (more "
                "rebalances than one hand some out more often): expected %d "
                "calls at least, got a %d + b %d",
                2 * PARTS, atomic_load(&st->calls), atomic_load(&st2->calls));
        /* Closing reaps a's late answers, drains its producer and commits
         * what a decided: only the partition a kept (cooperative), past
         * its routed copy. What a got again is held, and b's too. */
        kretry_adapter_close(a);
        KT_ASSERT_INT_EQ(atomic_load(&routed_copies), kept_routed);
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 0),
                         kept_routed);
        for (int p = 0; p < PARTS; p++) {
                int kept     = kept_routed && !(moved & (1u << p));
                int64_t want = kept ? 1 : RD_KAFKA_OFFSET_INVALID;
                KT_CHECK_MSG(kt_committed(env->c, env->group, env->source, p) ==
                                     want,
                             CU_FALSE,
                             "partition %d (%s): expected committed %lld, got "
                             "%lld",
                             p, kept ? "kept by a" : "revoked", (long long)want,
                             (long long)kt_committed(env->c, env->group,
                                                     env->source, p));
        }
        while (st->n)
                kretry_msg_complete(st->q[--st->n], KRETRY_OK);
        /* b, now the owner of every partition, handles them to the end. */
        new_owner_commits(env, b, st2);
        kretry_adapter_destroy(a);
        kretry_adapter_destroy(b);
        state_free(st);
        state_free(st2);
        it_env_destroy(env);
}

static void test_complete_after_revoke_eager(void) {
        if (kt_classic_protocol("an eager assignor"))
                complete_after_revoke("range,roundrobin", 0);
}

static void test_complete_after_revoke_cooperative(void) {
        complete_after_revoke("cooperative-sticky", 1);
}

/* Answer every held message OK without reading it (it was abandoned). */
static void *complete_blind(void *arg) {
        async_state_t *st = arg;
        while (st->n)
                if (kretry_msg_complete(st->q[--st->n], KRETRY_OK))
                        atomic_fetch_add(&st->violations, 1);
        return NULL;
}

/* Held messages not answered when the adapter is destroyed are abandoned:
 * nothing committed for them, and answering them afterwards (from another
 * thread, as an application's late callback would) only frees them. */
/* @p ordering none: two messages held by two workers; partition: the
 * first held and the next (another key) prepared as its successor, which
 * destroy drops. Destroy abandons what is held; completions from another
 * thread after it only free them. */
static void complete_after_destroy(const char *ordering, int held) {
        it_env_t *env = it_env_new("20ms", 1);
        it_produce(env, 0, "k1", "0:0", NULL);
        it_produce(env, 0, "k2", "1:0", NULL);
        it_produce(env, 0, "k3", "2:0", NULL);
        async_state_t *st = state_new();
        kretry_conf_t *conf =
                it_conf(env, "handler.concurrency", "2", "revoke.timeout.ms",
                        "100", "ordering", ordering, NULL);
        kretry_conf_set_handler(conf, hold_handler, st);
        kretry_conf_set_route_cb(conf, NULL); /* it shares the opaque */
        kretry_adapter_t *a = it_adapter(conf);
        int64_t deadline    = kt_now_ms() + 30000;
        while (atomic_load(&st->calls) < held && kt_now_ms() < deadline)
                kretry_adapter_poll(a, 50);
        KT_REQUIRE(atomic_load(&st->calls) == held);
        /* Time for the rest to be consumed (and, partition, prepared). */
        for (int64_t until = kt_now_ms() + 200; kt_now_ms() < until;)
                kretry_adapter_poll(a, 20);
        KT_ASSERT_INT_EQ(atomic_load(&st->calls), held);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0),
                         RD_KAFKA_OFFSET_INVALID);
        /* Answered from another thread; nothing may be read from them. */
        pthread_t t;
        KT_REQUIRE(pthread_create(&t, NULL, complete_blind, st) == 0);
        pthread_join(t, NULL);
        KT_ASSERT_INT_EQ(st->n, 0);
        KT_ASSERT_INT_EQ(atomic_load(&st->violations), 0);
        state_free(st);
        it_env_destroy(env);
}

static void test_complete_after_destroy(void) {
        complete_after_destroy("none", 2);
}

static void test_complete_after_destroy_partition(void) {
        complete_after_destroy("partition", 1);
}

/* A call for a message of a key whose earlier messages were never answered
 * OK. (hold_handler's own check counts the messages an abort hands out
 * again, behind later ones, as out of order.) */
static atomic_int txn_early;
static kretry_action_t txn_hold_handler(kretry_msg_t *msg, void *opaque) {
        async_state_t *st = opaque;
        int key, seq;
        it_key_seq(msg, &key, &seq);
        for (int s = 0; s < seq; s++)
                if (!atomic_load(&st->ok[key][s]))
                        atomic_fetch_add(&txn_early, 1);
        return hold_handler(msg, opaque);
}

static int by_id(const void *x, const void *y) {
        return strcmp(x, y);
}

static int txn_commits_tried;
static int fail_every_third(void) {
        return ++txn_commits_tried % 3 == 0 && txn_commits_tried < 30;
}

/* Every source partition committed to its end, every tier partition past
 * its last copy. */
static int txn_all_committed(kretry_adapter_t *a, it_env_t *env) {
        (void)a;
        for (int p = 0; p < PARTS; p++)
                if (kt_committed(env->c, env->group, env->source, p) !=
                            KEYS / PARTS * PER_KEY ||
                    !it_tier_at_end(env, p))
                        return 0;
        return 1;
}

/* routing=transactional: held messages answered from the application's
 * thread, out of order, while every third transaction fails. An abort
 * rewinds the partitions: what was held then is discarded (the late
 * answers are ignored) and handed out again. Everything ends committed,
 * each retry's tier copy is visible once (read_committed), and no message
 * starts before the earlier ones of its key were answered OK. */
static int txn_blind(void) {
        return 1;
}

static void txn_through_aborts(int blind) {
        if (!kt_real_only("the mock cluster's transactions write no markers"))
                return;
        it_env_t *env = it_env_new("20ms", PARTS);
        it_produce_keys(env, KEYS, PER_KEY);
        async_state_t *st   = state_new();
        kretry_conf_t *conf = it_conf(
                env, "routing", "transactional", "transaction.interval.ms",
                "30", "ordering", "key", "handler.concurrency", "8", NULL);
        kretry_conf_set_handler(conf, txn_hold_handler, st);
        kretry_conf_set_route_cb(conf, NULL);
        atomic_store(&txn_early, 0);
        txn_commits_tried     = 0;
        kretry_test_txn_fails = fail_every_third;
        kretry_test_txn_blind = blind ? txn_blind : NULL;
        kretry_adapter_t *a   = it_adapter(conf);
        pthread_t t;
        KT_REQUIRE(pthread_create(&t, NULL, completer, st) == 0);
        KT_ASSERT(it_run_until(a, txn_all_committed, env, 90000));
        long long aborts =
                kretry_adapter_counter(a, KRETRY_COUNTER_TXN_ABORTS, 0);
        KT_ASSERT(aborts >= 1);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        atomic_store(&st->stop, 1);
        pthread_join(t, NULL);
        while (st->n)
                kretry_msg_complete(st->q[--st->n], KRETRY_OK);
        kretry_adapter_destroy(a);
        kretry_test_txn_fails = NULL;
        kretry_test_txn_blind = NULL;
        KT_ASSERT_INT_EQ(atomic_load(&txn_early), 0);
        /* The tier holds each retried message (answer() retries a first
         * attempt when (key * 31 + seq * 7) % 10 == 0) and, under
         * ordering=key, the messages forwarded behind one of their key's
         * (class parked), again each time they come back while it waits:
         * none twice. A copy is told by its value, attempt and class, and
         * a forward by its due time, later each time. */
        int all          = KEYS * PER_KEY;
        kt_copies_t tier = {.max = 4 * all};
        tier.m           = calloc((size_t)tier.max, sizeof(kt_copy_t));
        KT_REQUIRE(tier.m != NULL);
        kt_consume(env->c, env->tiers[0], tier.max, 3000, kt_copy_grab, &tier);
        KT_ASSERT(tier.n < tier.max);
        char(*ids)[160] = calloc((size_t)tier.n + 1, sizeof(*ids));
        KT_REQUIRE(ids != NULL);
        for (int i = 0; i < tier.n; i++) {
                const kt_copy_t *c = &tier.m[i];
                const char *att    = kt_copy_hdr(c, "kretry-attempt"),
                           *cls    = kt_copy_hdr(c, "kretry-error-class"),
                           *due    = kt_copy_hdr(c, "kretry-due-ts");
                int parked         = cls && !strcmp(cls, "parked");
                snprintf(ids[i], sizeof(ids[i]), "%s attempt %s %s%s%s",
                         c->value, att ? att : "-", cls ? cls : "-",
                         parked ? " due " : "", parked && due ? due : "");
        }
        qsort(ids, (size_t)tier.n, sizeof(*ids), by_id);
        int twice = 0;
        for (int i = 1; i < tier.n; i++)
                if (!strcmp(ids[i], ids[i - 1]) && twice++ < 5)
                        fprintf(stderr, "  a tier copy made twice: %s\n",
                                ids[i]);
        KT_ASSERT_INT_EQ(twice, 0);
        free(ids);
        for (int k = 0; k < KEYS; k++)
                for (int s = 0; s < PER_KEY; s++) {
                        char v[32];
                        snprintf(v, sizeof(v), "%d:%d", k, s);
                        KT_CHECK_MSG(
                                (k * 31 + s * 7) % 10 || kt_copy_find(&tier, v),
                                CU_FALSE, "%s: retried, not in the tier", v);
                }
        free(tier.m);
        fprintf(stderr, "  %d handler calls for %d messages, %lld aborts\n",
                atomic_load(&st->calls), KEYS * PER_KEY, aborts);
        state_free(st);
        it_env_destroy(env);
}

static void test_txn_through_aborts(void) {
        txn_through_aborts(0);
}

/* The same while the cluster cannot tell the committed offsets after an
 * abort (as when it is down): each partition goes back to what this
 * instance's last transaction committed, with the offsets it decided
 * above it, not to where the assignment began: still no tier copy twice. */
static void test_txn_aborts_blind(void) {
        txn_through_aborts(1);
}

/* Not a held message: refused. */
static void test_complete_refused(void) {
        KT_ASSERT_INT_EQ(kretry_msg_complete(NULL, KRETRY_OK), -1);
        KT_ASSERT(kretry_msg_hold(NULL) == NULL);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_complete_from_thread),
                KT_TEST(test_held_count_against_concurrency),
                KT_TEST(test_complete_during_call),
                KT_TEST(test_poll_thread),
                KT_TEST(test_complete_after_revoke_eager),
                KT_TEST(test_complete_after_revoke_cooperative),
                KT_TEST(test_complete_after_destroy),
                KT_TEST(test_complete_after_destroy_partition),
                KT_TEST(test_complete_refused),
                KT_TEST(test_txn_through_aborts),
                KT_TEST(test_txn_aborts_blind),
                KT_END};
        return kt_main("it_async", tests, argc, argv);
}
