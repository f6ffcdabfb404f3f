/*
 * it_kill's kills with routing=transactional (kill_harness.h: the
 * machinery), on real Kafka: every copy kretry writes (tier,
 * DLQ, version changelog) and the offsets it decides commit in one Kafka
 * transaction. After each kill, once the broker aborted the killed worker's
 * open transaction and before the next worker starts, what a read_committed
 * reader sees is checked against what the group committed: no copy and no
 * changelog record without the commit of the message that made it. At the
 * end every copy is there exactly once, identified by its original
 * coordinates and attempt. The mock cluster's transactions write no
 * markers (an aborted copy would be read): these tests need a real
 * cluster. Duplicate copies are not allowed (repeated handler calls still
 * are), and a fenced zombie's copies never become visible
 * (test_zombie_fenced).
 *
 * The kill points come from a seed printed at the start;
 * KRETRY_TEST_SEED=<seed> repeats them.
 */
#include "kill_harness.h"
#include "offsets.h"  /* kretry_decided_parse */
#include "versions.h" /* kretry_version_decode */

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* transaction.timeout.ms 5000: a SIGKILLed worker's open transaction holds
 * back every read_committed reader of its partitions (the next worker's
 * among them) until the broker aborts it, this long after it began plus
 * the broker's cleanup interval (1 s in scripts/kafka.sh), not kretry's
 * 10 s: three kills a test stay well inside its timeout. Transactions of
 * 500 ms (not 100): a kill mid-stream then almost always finds one open
 * with copies in it, which the tests assert happened at least once (with
 * 100 ms, three kills found none in one run). */
static const char *const txn_props[]         = {"routing=transactional",
                                                "transaction.timeout.ms=5000",
                                                "transaction.interval.ms=500", NULL};
static const char *const txn_ordered_props[] = {
        "routing=transactional", "transaction.timeout.ms=5000",
        "transaction.interval.ms=500", "versioning.header=version", NULL};

static int real_only(void) {
        return kt_real_only("the mock cluster's transactions write no "
                            "markers, so an aborted copy would be read");
}

/* A record read back: where it is, and what kretry wrote on it. */
typedef struct {
        int32_t partition;
        int64_t offset;
        char otopic[128], cls[24], value[32], key[32];
        int opart, attempt, id;
        int64_t ooff, due, version;
} rec_t;

typedef struct {
        rec_t *r;
        int n, cap;
} recs_t;

static void
hdr_str(const rd_kafka_message_t *m, const char *name, char *buf, size_t size) {
        if (!kt_header(m, name, buf, size))
                buf[0] = '\0';
}

static int64_t hdr_num(const rd_kafka_message_t *m, const char *name) {
        char v[32];
        return kt_header(m, name, v, sizeof(v)) ? strtoll(v, NULL, 10) : -1;
}

static void rec_add(recs_t *rs, const rd_kafka_message_t *m) {
        if (rs->n == rs->cap) {
                rs->cap = rs->cap ? rs->cap * 2 : 256;
                rs->r   = realloc(rs->r, (size_t)rs->cap * sizeof(rec_t));
                KT_REQUIRE(rs->r != NULL);
        }
        rec_t *r = &rs->r[rs->n++];
        memset(r, 0, sizeof(*r));
        r->partition = m->partition;
        r->offset    = m->offset;
        r->id        = -1;
        snprintf(r->value, sizeof(r->value), "%.*s",
                 (int)(m->len < 31 ? m->len : 31),
                 m->payload ? (const char *)m->payload : "");
        snprintf(r->key, sizeof(r->key), "%.*s",
                 (int)(m->key_len < 31 ? m->key_len : 31),
                 m->key ? (const char *)m->key : "");
        hdr_str(m, "kretry-original-topic", r->otopic, sizeof(r->otopic));
        hdr_str(m, "kretry-error-class", r->cls, sizeof(r->cls));
        r->opart   = (int)hdr_num(m, "kretry-original-partition");
        r->ooff    = hdr_num(m, "kretry-original-offset");
        r->attempt = (int)hdr_num(m, "kretry-attempt");
        r->due     = hdr_num(m, "kretry-due-ts");
        r->version = -1;
        if (m->payload)
                kretry_version_decode(m->payload, m->len, &r->version);
}

/* A client of @p c with @p isolation ("read_committed" or
 * "read_uncommitted"), partition EOF events on. */
static rd_kafka_t *reader(const kt_cluster_t *c, const char *isolation) {
        char group[128], errstr[256];
        kt_unique_name("kt-txn-reader", group, sizeof(group));
        rd_kafka_conf_t *conf = kt_rdkafka_conf(c);
        rd_kafka_conf_set(conf, "group.id", group, NULL, 0);
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", NULL, 0);
        rd_kafka_conf_set(conf, "enable.partition.eof", "true", NULL, 0);
        rd_kafka_conf_set(conf, "isolation.level", isolation, NULL, 0);
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
        KT_REQUIRE(rk != NULL);
        return rk;
}

/* Every record of @p topic (3 partitions) a reader of @p isolation sees,
 * read to its end (the last stable offset, read_committed): with no
 * transaction open, all that will ever be visible there. */
static void read_all(const kt_cluster_t *c,
                     const char *topic,
                     const char *isolation,
                     recs_t *rs) {
        rd_kafka_t *rk = reader(c, isolation);
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(3);
        for (int p = 0; p < 3; p++)
                rd_kafka_topic_partition_list_add(l, topic, p)->offset =
                        RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_assign(rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        int eof[3]       = {0, 0, 0};
        int64_t deadline = kt_now_ms() + 30000;
        while (!(eof[0] && eof[1] && eof[2]) && kt_now_ms() < deadline) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
                if (!m)
                        continue;
                if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF &&
                    m->partition >= 0 && m->partition < 3)
                        eof[m->partition] = 1;
                else if (!m->err) {
                        eof[m->partition] = 0;
                        rec_add(rs, m);
                }
                rd_kafka_message_destroy(m);
        }
        KT_CHECK_MSG(eof[0] && eof[1] && eof[2], CU_TRUE,
                     "%s not read to its end within 30 s", topic);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
}

/* Partitions of @p topic (3) where a transaction is open: the last stable
 * offset (what a read_committed client's ListOffsets answers) below the
 * high watermark. */
static int open_txns(rd_kafka_t *rc, rd_kafka_t *ru, const char *topic) {
        int open = 0;
        for (int p = 0; p < 3; p++) {
                int64_t lo, lso, hw;
                KT_REQUIRE(rd_kafka_query_watermark_offsets(rc, topic, p, &lo,
                                                            &lso, 10000) == 0);
                KT_REQUIRE(rd_kafka_query_watermark_offsets(ru, topic, p, &lo,
                                                            &hw, 10000) == 0);
                open += lso < hw;
        }
        return open;
}

/* The changelog of a run (versioning), or NULL. */
static const char *changelog_of(const run_t *r, char *buf, size_t size) {
        if (!r->versioned)
                return NULL;
        snprintf(buf, size, "%s.%s.versions", r->grp, r->src);
        return buf;
}

/* Wait until no transaction is open on the tier, the DLQ and the
 * changelog: the killed worker's aborted by the broker. */
static void await_no_open_txn(run_t *r) {
        char tier[200], cl[400];
        const char *topics[3] = {tier, r->dlq, changelog_of(r, cl, sizeof(cl))};
        snprintf(tier, sizeof(tier), "%s.retry.1", r->src);
        rd_kafka_t *rc = reader(r->c, "read_committed");
        rd_kafka_t *ru = reader(r->c, "read_uncommitted");
        int64_t t0 = kt_now_ms(), deadline = t0 + 30000;
        int open = 1, first = 1;
        while (open && kt_now_ms() < deadline) {
                open = 0;
                for (int t = 0; t < 3; t++)
                        if (topics[t])
                                open += open_txns(rc, ru, topics[t]);
                r->open_kills += open && first;
                first = 0;
                if (open)
                        kt_nap_ms(100);
        }
        rd_kafka_destroy(rc);
        rd_kafka_destroy(ru);
        KT_CHECK_MSG(!open, CU_TRUE,
                     "%d partitions still have a transaction open 30 s "
                     "after the kill",
                     open);
        fprintf(stderr, "  open transactions aborted after %lld ms\n",
                (long long)(kt_now_ms() - t0));
}

/* A partition's commit: the offset and the decided offsets above it. */
typedef struct {
        int64_t base;
        kretry_decided_t d;
} commit_t;

static void
commit_read(const run_t *r, const char *topic, int32_t p, commit_t *cm) {
        char md[4096];
        memset(cm, 0, sizeof(*cm));
        cm->base = kt_committed_md(r->c, r->grp, topic, p, md, sizeof(md));
        if (cm->base >= 0)
                KT_REQUIRE(kretry_decided_parse(&cm->d, cm->base, INT64_MAX, md,
                                                strlen(md)) == 0);
}

static int commit_has(const commit_t *cm, int64_t offset) {
        return offset < cm->base || kretry_decided_has(&cm->d, offset);
}

/* The message id (0..nids-1) of a copy's value ("n-I" or "K:Q"). */
static int value_id(const run_t *r, const char *v) {
        if (!strncmp(v, "n-", 2))
                return r->id(v + 2);
        char f[32];
        snprintf(f, sizeof(f), "%s", v);
        char *colon = strchr(f, ':');
        if (colon)
                *colon = ' ';
        return r->id(f);
}

/* The source offset of message @p id: the streams are produced in id
 * order, synchronously, to fresh partitions (no transaction markers). */
static int64_t source_offset(const run_t *r, int id, int32_t *part) {
        int64_t n = 0;
        if (!r->ordered) { /* message I on partition I % 3 */
                *part = id % 3;
                return id / 3;
        }
        int k = id / oseq, q = id % oseq, i = q * okeys + k;
        *part = k % 3;
        for (int j = 0; j < i; j++)
                n += (j % okeys) % 3 == *part;
        return n;
}

static int by_tier_offset(const void *a, const void *b) {
        const rec_t *x = *(rec_t *const *)a, *y = *(rec_t *const *)b;
        if (x->id != y->id)
                return x->id < y->id ? -1 : 1;
        return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* What a read_committed reader sees now: the tier (@p tier), the DLQ and
 * the changelog of the run, ids filled in. */
typedef struct {
        recs_t tier, dlq, cl;
} seen_t;

static void seen_read(run_t *r, seen_t *s) {
        char tier[200], cl[400];
        memset(s, 0, sizeof(*s));
        snprintf(tier, sizeof(tier), "%s.retry.1", r->src);
        read_all(r->c, tier, "read_committed", &s->tier);
        read_all(r->c, r->dlq, "read_committed", &s->dlq);
        if (changelog_of(r, cl, sizeof(cl)))
                read_all(r->c, cl, "read_committed", &s->cl);
        for (int i = 0; i < s->tier.n; i++)
                s->tier.r[i].id = value_id(r, s->tier.r[i].value);
        for (int i = 0; i < s->dlq.n; i++)
                s->dlq.r[i].id = value_id(r, s->dlq.r[i].value);
        for (int i = 0; i < s->cl.n; i++) { /* key "key-K", version Q */
                const rec_t *c = &s->cl.r[i];
                int k          = atoi(c->key + 4);
                int ok = !strncmp(c->key, "key-", 4) && k >= 0 && k < okeys &&
                         c->version >= 0 && c->version < oseq;
                s->cl.r[i].id = ok ? k * oseq + (int)c->version : -1;
        }
}

static void seen_free(seen_t *s) {
        free(s->tier.r);
        free(s->dlq.r);
        free(s->cl.r);
}

static int by_name(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Copies in @p rs made twice: the same original coordinates and attempt
 * (and class). A parked follower (ordering=key) is forwarded again at the
 * same attempt each time it comes back while its head still waits; each
 * forward is due later than the one before (it comes back no earlier than
 * its due time), so its due time tells them apart. */
static int duplicates(const recs_t *rs, const char *what) {
        char **ids = calloc((size_t)rs->n + 1, sizeof(char *));
        int dups   = 0;
        KT_REQUIRE(ids != NULL);
        for (int i = 0; i < rs->n; i++) {
                const rec_t *c = &rs->r[i];
                char id[256];
                int n = snprintf(id, sizeof(id), "%s/%d/%lld attempt %d %s",
                                 c->otopic, c->opart, (long long)c->ooff,
                                 c->attempt, c->cls);
                if (!strcmp(c->cls, "parked"))
                        snprintf(id + n, sizeof(id) - (size_t)n, " due %lld",
                                 (long long)c->due);
                ids[i] = strdup(id);
        }
        qsort(ids, (size_t)rs->n, sizeof(char *), by_name);
        for (int i = 1; i < rs->n; i++)
                if (!strcmp(ids[i], ids[i - 1]) && dups++ < 5)
                        fprintf(stderr, "  %s: copy made twice: %s\n", what,
                                ids[i]);
        for (int i = 0; i < rs->n; i++)
                free(ids[i]);
        free(ids);
        return dups;
}

/* Changelog records written twice: the same key and version. */
static int changelog_duplicates(const run_t *r, const recs_t *cl) {
        int *cnt = calloc((size_t)r->nids, sizeof(int)), dups = 0;
        KT_REQUIRE(cnt != NULL);
        for (int i = 0; i < cl->n; i++)
                if (cl->r[i].id >= 0 && cnt[cl->r[i].id]++ && dups++ < 5)
                        fprintf(stderr,
                                "  changelog: %s version %lld written "
                                "twice\n",
                                cl->r[i].key, (long long)cl->r[i].version);
        free(cnt);
        return dups;
}

/* Visible records whose making was not committed. Each copy or changelog
 * record is made by deciding one consumed message: the first copy of a
 * message by its source message, each later tier copy by the tier copy
 * before it (a message's copies are all in one tier partition, in order),
 * a DLQ copy or a changelog record (an OK) by the last of them, or by the
 * source message when it has none. That message's offset must be committed
 * (below the group's offset, or in its decided metadata): the copy and the
 * commit are one transaction. */
static int uncommitted(run_t *r, const seen_t *s) {
        char tier[200];
        commit_t src[3], tc[3];
        snprintf(tier, sizeof(tier), "%s.retry.1", r->src);
        for (int p = 0; p < 3; p++) {
                commit_read(r, r->src, p, &src[p]);
                commit_read(r, tier, p, &tc[p]);
        }
        const rec_t **cs = calloc((size_t)s->tier.n + 1, sizeof(rec_t *));
        char *ends       = calloc((size_t)r->nids, 1); /* DLQ copy or OK */
        int bad = 0, n = 0;
        KT_REQUIRE(cs != NULL && ends != NULL);
        for (int i = 0; i < s->dlq.n; i++)
                if (s->dlq.r[i].id >= 0)
                        ends[s->dlq.r[i].id] = 1;
        for (int i = 0; i < s->cl.n; i++)
                if (s->cl.r[i].id >= 0)
                        ends[s->cl.r[i].id] = 1;
        for (int i = 0; i < s->tier.n; i++)
                if (s->tier.r[i].id >= 0)
                        cs[n++] = &s->tier.r[i];
        qsort(cs, (size_t)n, sizeof(rec_t *), by_tier_offset);
        int *last = malloc((size_t)r->nids * sizeof(int)); /* in cs */
        KT_REQUIRE(last != NULL);
        for (int id = 0; id < r->nids; id++)
                last[id] = -1;
        for (int i = 0; i < n; i++) {
                /* Made by the one before (or the source message). */
                if (i > 0 && cs[i - 1]->id == cs[i]->id &&
                    !commit_has(&tc[cs[i - 1]->partition], cs[i - 1]->offset) &&
                    bad++ < 5)
                        fprintf(stderr,
                                "  tier copy at %d/%lld of %s visible, the "
                                "copy it came from (%lld) not committed\n",
                                cs[i]->partition, (long long)cs[i]->offset,
                                cs[i]->value, (long long)cs[i - 1]->offset);
                last[cs[i]->id] = i;
        }
        for (int id = 0; id < r->nids; id++) {
                int32_t p;
                int64_t o = source_offset(r, id, &p);
                if ((last[id] >= 0 || ends[id]) && !commit_has(&src[p], o) &&
                    bad++ < 5)
                        fprintf(stderr,
                                "  message %d (source %d/%lld): a copy or "
                                "changelog record visible, the source "
                                "offset not committed (%lld)\n",
                                id, p, (long long)o, (long long)src[p].base);
                const rec_t *c = last[id] >= 0 ? cs[last[id]] : NULL;
                if (c && ends[id] &&
                    !commit_has(&tc[c->partition], c->offset) && bad++ < 5)
                        fprintf(stderr,
                                "  message %d: decided from tier copy "
                                "%d/%lld (DLQ copy or changelog record "
                                "visible), that copy not committed\n",
                                id, c->partition, (long long)c->offset);
        }
        for (int p = 0; p < 3; p++) {
                kretry_decided_free(&src[p].d);
                kretry_decided_free(&tc[p].d);
        }
        free(last);
        free(ends);
        free(cs);
        return bad;
}

/* After a kill (no worker runs): once the killed worker's transaction is
 * aborted, nothing visible lacks its commit and nothing is there twice. */
static void txn_settle(run_t *r) {
        seen_t s;
        await_no_open_txn(r);
        seen_read(r, &s);
        int bad = uncommitted(r, &s);
        int td = duplicates(&s.tier, "tier"), dd = duplicates(&s.dlq, "DLQ");
        int cd = changelog_duplicates(r, &s.cl);
        fprintf(stderr,
                "  read_committed: %d tier copies, %d DLQ copies, %d "
                "changelog records; duplicates %d, %d, %d; without their "
                "commit %d\n",
                s.tier.n, s.dlq.n, s.cl.n, td, dd, cd, bad);
        KT_CHECK_MSG(td == 0 && dd == 0 && cd == 0, CU_FALSE,
                     "duplicates read_committed: tier %d, DLQ %d, changelog "
                     "%d",
                     td, dd, cd);
        KT_CHECK_MSG(bad == 0, CU_FALSE,
                     "%d records visible without the commit of the message "
                     "that made them",
                     bad);
        seen_free(&s);
}

/* The plain stream's copies at the end: each message that retries once
 * (I % 7 == 0, not I % 11 == 0) in the tier exactly once, attempt 1; each
 * permanent failure (I % 11 == 0) in the DLQ exactly once; nothing else. */
static void check_plain_copies(run_t *r) {
        seen_t s;
        seen_read(r, &s);
        int *tc = calloc(N, sizeof(int)), *dc = calloc(N, sizeof(int));
        int wrong = 0, lost = 0, extra = 0;
        KT_REQUIRE(tc != NULL && dc != NULL);
        for (int i = 0; i < s.tier.n; i++) {
                const rec_t *c = &s.tier.r[i];
                if (c->id < 0 || c->attempt != 1 || strcmp(c->otopic, r->src) ||
                    c->opart != c->id % 3 || c->ooff != c->id / 3)
                        wrong++;
                else
                        tc[c->id]++;
        }
        for (int i = 0; i < s.dlq.n; i++) {
                const rec_t *c = &s.dlq.r[i];
                if (c->id < 0 || strcmp(c->otopic, r->src) ||
                    c->opart != c->id % 3 || c->ooff != c->id / 3)
                        wrong++;
                else
                        dc[c->id]++;
        }
        for (int i = 0; i < N; i++) {
                int want_t = i % 7 == 0 && i % 11 != 0, want_d = i % 11 == 0;
                lost += (want_t && !tc[i]) + (want_d && !dc[i]);
                extra += (tc[i] > want_t ? tc[i] - want_t : 0) +
                         (dc[i] > want_d ? dc[i] - want_d : 0);
                if (r->seen[i] && want_d && wrong++ < 5)
                        fprintf(stderr, "  n-%d handled OK\n", i);
        }
        fprintf(stderr,
                "  read_committed at the end: %d tier copies, %d DLQ "
                "copies; missing %d, extra %d, malformed %d\n",
                s.tier.n, s.dlq.n, lost, extra, wrong);
        KT_ASSERT_INT_EQ(lost, 0);
        KT_ASSERT_INT_EQ(extra, 0);
        KT_ASSERT_INT_EQ(wrong, 0);
        free(tc);
        free(dc);
        seen_free(&s);
}

/* The plain stream under kills with routing=transactional. */
static void test_kill_transactional(void) {
        if (!real_only())
                return;
        run_t r;
        run_init_plain(&r, "tkill", NULL);
        r.props  = txn_props;
        r.settle = txn_settle;
        run_with_kills(&r);
        txn_settle(&r);
        check_plain_copies(&r);
        /* The kills left copies in open transactions, which the broker
         * aborted: what the test is about. */
        KT_ASSERT(r.open_kills > 0);
        for (int i = 0; i < N; i++)
                KT_CHECK_MSG(expected_dlq(i) || r.seen[i], CU_FALSE,
                             "n-%d never handled OK", i);
        run_destroy(&r);
}

/* ordering=key with versioning under kills, routing=transactional: the
 * version changelog in every transaction. Each message's OK raises its
 * key's version once: the changelog holds each key and version exactly
 * once. */
static void test_kill_transactional_ordered(void) {
        if (!real_only())
                return;
        run_t r;
        char cl[400];
        run_init_ordered(&r, "tokill", 40, 15);
        r.versioned = 1;
        r.props     = txn_ordered_props;
        r.settle    = txn_settle;
        KT_REQUIRE(kt_cluster_changelog(r.c, changelog_of(&r, cl, sizeof(cl)),
                                        3) == 0);
        for (int i = 0; i < r.nids; i++)
                produce_ordered(&r, i);
        run_with_kills(&r);
        check_ordered_end(&r, 1);
        txn_settle(&r);
        KT_ASSERT(r.open_kills > 0);
        seen_t s;
        seen_read(&r, &s);
        int *cnt = calloc((size_t)r.nids, sizeof(int)), missing = 0;
        KT_REQUIRE(cnt != NULL);
        for (int i = 0; i < s.cl.n; i++)
                if (s.cl.r[i].id >= 0)
                        cnt[s.cl.r[i].id]++;
        for (int i = 0; i < r.nids; i++)
                missing += !cnt[i];
        fprintf(stderr,
                "  changelog at the end: %d records for %d messages, %d "
                "without one\n",
                s.cl.n, r.nids, missing);
        KT_ASSERT_INT_EQ(s.cl.n, r.nids);
        KT_ASSERT_INT_EQ(missing, 0);
        free(cnt);
        seen_free(&s);
        run_destroy(&r);
}

/* Records in the tier and the DLQ for a reader of @p isolation. */
static int tier_dlq_records(run_t *r, const char *isolation) {
        char tier[200];
        recs_t t = {0}, d = {0};
        snprintf(tier, sizeof(tier), "%s.retry.1", r->src);
        read_all(r->c, tier, isolation, &t);
        read_all(r->c, r->dlq, isolation, &d);
        free(t.r);
        free(d.r);
        return t.n + d.n;
}

/* High watermarks of the tier and the DLQ, summed: every record written
 * there, in a transaction open or not. */
static int64_t written(run_t *r, rd_kafka_t *ru) {
        char tier[200];
        const char *topics[2] = {tier, r->dlq};
        int64_t sum           = 0;
        snprintf(tier, sizeof(tier), "%s.retry.1", r->src);
        for (int t = 0; t < 2; t++)
                for (int p = 0; p < 3; p++) {
                        int64_t lo, hi;
                        KT_REQUIRE(rd_kafka_query_watermark_offsets(
                                           ru, topics[t], p, &lo, &hi, 10000) ==
                                   0);
                        sum += hi;
                }
        return sum;
}

/* @p path's lines, on stderr: what a worker said. */
static void show_file(const char *what, const char *path) {
        FILE *f = fopen(path, "r");
        char line[1024];
        while (f && fgets(line, sizeof(line), f))
                fprintf(stderr, "  %s:%s", what, line);
        if (f)
                fclose(f);
}

/* The aborted transactions a worker counted on its clean stop (its last
 * line), or -1. */
static long worker_aborts(const char *path) {
        FILE *f = fopen(path, "r");
        char line[1024];
        long commits, aborts = -1;
        while (f && fgets(line, sizeof(line), f)) {
                const char *t = strstr(line, "transactions: ");
                if (t && sscanf(t, "transactions: %ld committed, %ld aborted",
                                &commits, &aborts) != 2)
                        aborts = -1;
        }
        if (f)
                fclose(f);
        return aborts;
}

/* The source committed to its end on every partition. */
static int source_at_end(run_t *r, rd_kafka_t *ru) {
        for (int p = 0; p < 3; p++) {
                int64_t lo, hi;
                KT_REQUIRE(rd_kafka_query_watermark_offsets(ru, r->src, p, &lo,
                                                            &hi, 10000) == 0);
                if (kt_committed(r->c, r->grp, r->src, p) != hi)
                        return 0;
        }
        return 1;
}

/* Messages handled OK neither retried nor dead-lettered, by @p pid. */
static int handled_first_time(run_t *r, pid_t pid) {
        FILE *f = fopen(r->out, "r");
        char line[128];
        int *mine = calloc(N, sizeof(int)), n = 0;
        KT_REQUIRE(mine != NULL);
        while (f && fgets(line, sizeof(line), f)) {
                long p, i;
                if (sscanf(line, "%ld %ld", &p, &i) == 2 && p == pid &&
                    i >= 0 && i < N && i % 7 && i % 11 && !mine[i]++)
                        n++;
        }
        if (f)
                fclose(f);
        free(mine);
        return n;
}

/* A's open transaction on the tier and the DLQ, read from the broker when
 * A is stopped: per partition (tier 0-2, DLQ 3-5) its first offset (the
 * last stable offset) and the high watermark; lso == hw where none is
 * open. */
typedef struct {
        int64_t lso[6], hw[6];
} open_txn_t;

static int
open_txn_read(run_t *r, rd_kafka_t *rc, rd_kafka_t *ru, open_txn_t *o) {
        char tier[200];
        const char *topics[2] = {tier, r->dlq};
        int open              = 0;
        snprintf(tier, sizeof(tier), "%s.retry.1", r->src);
        for (int i = 0; i < 6; i++) {
                int64_t lo;
                KT_REQUIRE(rd_kafka_query_watermark_offsets(
                                   rc, topics[i / 3], i % 3, &lo, &o->lso[i],
                                   10000) == 0);
                KT_REQUIRE(rd_kafka_query_watermark_offsets(
                                   ru, topics[i / 3], i % 3, &lo, &o->hw[i],
                                   10000) == 0);
                open += o->lso[i] < o->hw[i];
        }
        return open;
}

/* Whether the transaction of @p at has ended: the last stable offset moved
 * past its first offset on every partition it was open on. */
static int
open_txn_ended(run_t *r, rd_kafka_t *rc, rd_kafka_t *ru, const open_txn_t *at) {
        open_txn_t now;
        open_txn_read(r, rc, ru, &now);
        for (int i = 0; i < 6; i++)
                if (at->lso[i] < at->hw[i] && now.lso[i] <= at->lso[i])
                        return 0;
        return 1;
}

/* Records of @p rs (partitions of the tier, @p base 0, or the DLQ, 3) in
 * the transaction @p at was open with. */
static int in_open_txn(const recs_t *rs, int base, const open_txn_t *at) {
        int n = 0;
        for (int i = 0; i < rs->n; i++) {
                int k = base + rs->r[i].partition;
                n += rs->r[i].offset >= at->lso[k] &&
                     rs->r[i].offset < at->hw[k];
        }
        return n;
}

/* The group's commits of the source's partitions. */
static void source_commits(run_t *r, int64_t out[3]) {
        for (int p = 0; p < 3; p++)
                out[p] = kt_committed(r->c, r->grp, r->src, p);
}

/* A zombie's copies never become visible. Worker A has written copies in
 * its open transaction when it is stopped (SIGSTOP) past its session
 * timeout; worker B takes every partition over and decides everything
 * again. A, continued, finds itself fenced (its assignment lost, or its
 * commit refused: it is no longer the member that decided), aborts and
 * rejoins; both then stop cleanly. Read from the broker: A's open
 * transaction ends once A is continued (not at its 60 s timeout), none of
 * its records (the offsets between the last stable offset and the high
 * watermark when A was stopped) is ever visible read_committed, and the
 * group's source commits, B's at the ends before A ran again, are the same
 * after; every copy is there exactly once; the group's commits reach the
 * ends. With @p commit_due, A's transactions last 2 s and it stays stopped
 * longer than that: its first step once continued commits, before it may
 * have heard that its membership ended; otherwise they last 60 s and A
 * finds its assignment lost before any commit is due. */
static void zombie_fenced(const char *prefix, int commit_due) {
        if (!real_only())
                return;
        int interval_ms = commit_due ? 2000 : 60000;
        char interval[64];
        snprintf(interval, sizeof(interval), "transaction.interval.ms=%d",
                 interval_ms);
        const char *const zombie_props[] = {"routing=transactional", interval,
                                            "transaction.timeout.ms=60000",
                                            "transaction.max.messages=1000000",
                                            NULL};
        run_t r;
        char a_err[300], b_err[300];
        run_init_plain(&r, prefix, NULL);
        snprintf(a_err, sizeof(a_err), "%s.a.err", r.out);
        snprintf(b_err, sizeof(b_err), "%s.b.err", r.out);
        unlink(a_err);
        unlink(b_err);
        int first_time = 0; /* messages neither retried nor dead-lettered */
        for (int i = 0; i < N; i++)
                first_time += i % 7 && i % 11;
        rd_kafka_t *ru = reader(r.c, "read_uncommitted");
        pid_t a = spawn_ex(r.c, r.src, r.grp, r.out, "plain", zombie_props,
                           a_err);
        /* A's copies are written, in its open transaction. */
        int64_t deadline = kt_now_ms() + 60000, a_copies = 0;
        int st;
        while ((a_copies = written(&r, ru)) < 40 && kt_now_ms() < deadline) {
                KT_REQUIRE(waitpid(a, &st, WNOHANG) == 0);
                kt_nap_ms(20);
        }
        KT_REQUIRE(a_copies >= 40);
        kill(a, SIGSTOP);
        int64_t stopped = kt_now_ms();
        /* A's transaction, open, as the broker has it. */
        rd_kafka_t *rc = reader(r.c, "read_committed");
        open_txn_t at;
        KT_ASSERT(open_txn_read(&r, rc, ru, &at) > 0);
        fprintf(stderr, "  worker A %d stopped with %lld copies written\n",
                (int)a, (long long)a_copies);
        KT_ASSERT_INT_EQ(tier_dlq_records(&r, "read_committed"), 0);
        pid_t b = spawn_ex(r.c, r.src, r.grp, r.out, "plain", txn_props, b_err);
        /* B owns every partition once it handled every message that needs
         * no copy: A's session expired. */
        deadline = kt_now_ms() + 90000;
        while (handled_first_time(&r, b) < first_time &&
               kt_now_ms() < deadline) {
                KT_REQUIRE(waitpid(b, &st, WNOHANG) == 0);
                kt_nap_ms(50);
        }
        KT_ASSERT_INT_EQ(handled_first_time(&r, b), first_time);
        /* B committed the source to its end (its transactions do not wait
         * for A's): what the group has before the zombie runs again. */
        while (!source_at_end(&r, ru) && kt_now_ms() < deadline)
                kt_nap_ms(50);
        KT_ASSERT(source_at_end(&r, ru));
        int64_t before[3], after[3];
        source_commits(&r, before);
        KT_ASSERT(waitpid(a, &st, WNOHANG) == 0);
        while (commit_due && kt_now_ms() - stopped <= interval_ms)
                kt_nap_ms(50);
        fprintf(stderr,
                "  worker B %d handled the stream after %lld ms; "
                "continuing A\n",
                (int)b, (long long)(kt_now_ms() - stopped));
        kill(a, SIGCONT);
        /* A ends its transaction (the broker would abort it only after
         * transaction.timeout.ms, 60 s), and everything is decided. */
        deadline = kt_now_ms() + 30000;
        while (!open_txn_ended(&r, rc, ru, &at) && kt_now_ms() < deadline)
                kt_nap_ms(50);
        KT_CHECK_MSG(open_txn_ended(&r, rc, ru, &at), CU_FALSE,
                     "worker A's transaction still open 30 s after it was "
                     "continued (%s)",
                     a_err);
        /* It sent no offsets: the group's commits are B's still. */
        source_commits(&r, after);
        for (int p = 0; p < 3; p++)
                KT_CHECK_MSG(after[p] == before[p], CU_FALSE,
                             "source partition %d: committed %lld after the "
                             "zombie ran, %lld before",
                             p, (long long)after[p], (long long)before[p]);
        deadline = kt_now_ms() + 90000;
        for (read_log(&r, 0); (r.missing(&r) > 0 || !source_at_end(&r, ru)) &&
                              kt_now_ms() < deadline;
             read_log(&r, 0))
                kt_nap_ms(50);
        KT_ASSERT_INT_EQ(r.missing(&r), 0);
        /* A runs on as a member again for a while (there is no event to
         * wait for: this is the time a zombie would have to commit what
         * it decided before). */
        kt_nap_ms(2000);
        int sa = 0, sb = 0;
        kt_terminate(a, 30000, &sa);
        kt_terminate(b, 30000, &sb);
        KT_CHECK_MSG(WIFEXITED(sa) && WEXITSTATUS(sa) == 0, CU_FALSE,
                     "worker A on SIGTERM: status 0x%x", sa);
        KT_CHECK_MSG(WIFEXITED(sb) && WEXITSTATUS(sb) == 0, CU_FALSE,
                     "worker B on SIGTERM: status 0x%x", sb);
        show_file("A", a_err);
        /* Its clean stop counted the abort. */
        KT_ASSERT(worker_aborts(a_err) >= 1);
        read_log(&r, 0);
        txn_settle(&r);
        check_plain_copies(&r);
        char tier[200];
        snprintf(tier, sizeof(tier), "%s.retry.1", r.src);
        /* The zombie's transaction was aborted: of what it held open
         * when it was stopped, nothing is visible read_committed. */
        recs_t vt = {0}, vd = {0};
        read_all(r.c, tier, "read_committed", &vt);
        read_all(r.c, r.dlq, "read_committed", &vd);
        int shown = in_open_txn(&vt, 0, &at) + in_open_txn(&vd, 3, &at);
        KT_CHECK_MSG(shown == 0, CU_FALSE,
                     "%d copies of the zombie's transaction are visible "
                     "read_committed",
                     shown);
        free(vt.r);
        free(vd.r);
        /* The group's commits of the source are still B's. */
        source_commits(&r, after);
        for (int p = 0; p < 3; p++)
                KT_CHECK_MSG(after[p] == before[p], CU_FALSE,
                             "source partition %d: committed %lld at the end, "
                             "%lld before the zombie ran",
                             p, (long long)after[p], (long long)before[p]);
        /* A's aborted copies are in the logs, hidden. */
        int all = tier_dlq_records(&r, "read_uncommitted");
        int vis = tier_dlq_records(&r, "read_committed");
        fprintf(stderr,
                "  tier and DLQ: %d records written, %d visible "
                "read_committed\n",
                all, vis);
        KT_ASSERT(all >= vis + a_copies);
        /* The group committed the source and the tier to their ends. */
        KT_ASSERT(source_at_end(&r, ru));
        seen_t s;
        seen_read(&r, &s);
        for (int p = 0; p < 3; p++) {
                commit_t cm;
                commit_read(&r, tier, p, &cm);
                for (int i = 0; i < s.tier.n; i++)
                        KT_CHECK_MSG(
                                s.tier.r[i].partition != p ||
                                        commit_has(&cm, s.tier.r[i].offset),
                                CU_FALSE,
                                "tier copy %d/%lld not committed at the "
                                "end (committed %lld)",
                                p, (long long)s.tier.r[i].offset,
                                (long long)cm.base);
                kretry_decided_free(&cm.d);
        }
        seen_free(&s);
        rd_kafka_destroy(rc);
        rd_kafka_destroy(ru);
        if (CU_get_number_of_failures() > r.failures)
                fprintf(stderr, "  kept %s and %s\n", a_err, b_err);
        else {
                unlink(a_err);
                unlink(b_err);
        }
        run_destroy(&r);
}

static void test_zombie_fenced(void) {
        zombie_fenced("zombie", 0);
}

/* The zombie's first step once continued is a commit, sent unless the
 * member check of a transactional offset commit (txn.c) finds it no longer
 * a member. What the broker says is asserted: the group's source commits
 * are the same after the zombie ran, and of the transaction A held open
 * when it was stopped nothing becomes visible read_committed. Planted, the
 * check letting offsets go with a metadata without member id (what it
 * guards against): source partition 2 committed 187 after the zombie ran,
 * 500 before, and 41 copies of its transaction visible. With the check
 * skipped alone, the broker refused the zombie's offsets itself
 * (UNKNOWN_MEMBER_ID: its stale member id went with them), in two runs of
 * 2026-12-04. */
static void test_zombie_commit_due(void) {
        zombie_fenced("zombiec", 1);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_kill_transactional),
                KT_TEST(test_kill_transactional_ordered),
                KT_TEST(test_zombie_fenced), KT_TEST(test_zombie_commit_due),
                KT_END};
        return kill_main("it_kill_txn", tests, argc, argv);
}
