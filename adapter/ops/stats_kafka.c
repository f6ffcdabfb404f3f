#include "stats_kafka.h"
#include "ops_time.h"

#include "dlq_reader.h" /* dlq_conf_put() */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Add what was not answered to the topic's error text, once. */
static void topic_error(stats_topic_t *t, const char *fmt, ...) {
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (strstr(t->error, msg))
                return;
        size_t len = strlen(t->error);
        if (len + strlen(msg) + 3 >= sizeof(t->error))
                return;
        snprintf(t->error + len, sizeof(t->error) - len, "%s%s",
                 len ? "; " : "", msg);
}

/* Whatever the file says: the topology's group, no commits ever, explicit
 * positions, and fetches that stop after a message (one is all we read per
 * partition; an idle fetch is held fetch.wait.max.ms by the broker). */
static int reader_conf(rd_kafka_conf_t *conf,
                       const char *group,
                       char *errstr,
                       size_t errstr_size) {
        const char *pairs[][2] = {
                {"group.id", group},
                {"enable.auto.commit", "false"},
                {"enable.auto.offset.store", "false"},
                {"enable.partition.eof", "true"},
                /* Transactional sources: aborted records and markers are
                 * never read, so the first waiting message is a real one,
                 * and reaching the end without any means none waits. */
                {"isolation.level", "read_committed"},
                {"auto.offset.reset", "earliest"},
                {"fetch.wait.max.ms", "50"},
                {"queued.min.messages", "1"},
        };
        for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
                if (dlq_conf_put(conf, pairs[i][0], pairs[i][1], errstr,
                                 errstr_size))
                        return -1;
        return 0;
}

static rd_kafka_t *consumer(rd_kafka_conf_t *conf,
                            const char *group,
                            char *errstr,
                            size_t errstr_size) {
        rd_kafka_t *rk = NULL;
        if (!reader_conf(conf, group, errstr, errstr_size))
                rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, errstr_size);
        if (!rk)
                rd_kafka_conf_destroy(conf);
        return rk;
}

int stats_io_open(stats_io_t *io,
                  rd_kafka_conf_t *conf,
                  const char *group,
                  int timeout_ms,
                  char *errstr,
                  size_t errstr_size) {
        char replay[512];
        size_t size    = sizeof(io->bootstrap);
        io->timeout_ms = timeout_ms;
        if (rd_kafka_conf_get(conf, "bootstrap.servers", io->bootstrap,
                              &size) != RD_KAFKA_CONF_OK)
                io->bootstrap[0] = '\0';
        snprintf(replay, sizeof(replay), "%s" STATS_REPLAY_GROUP_SUFFIX, group);
        rd_kafka_conf_t *dup = rd_kafka_conf_dup(conf);
        io->rk               = consumer(conf, group, errstr, errstr_size);
        io->replay_rk        = consumer(dup, replay, errstr, errstr_size);
        return io->rk && io->replay_rk ? 0 : -1;
}

static void close_one(rd_kafka_t *rk) {
        if (!rk)
                return;
        rd_kafka_assign(rk, NULL);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
}

void stats_io_close(stats_io_t *io) {
        close_one(io->rk);
        close_one(io->replay_rk);
        io->rk = io->replay_rk = NULL;
}

static const rd_kafka_metadata_topic_t *
find_topic(const rd_kafka_metadata_t *md, const char *name) {
        for (int i = 0; i < md->topic_cnt; i++)
                if (!strcmp(md->topics[i].topic, name))
                        return &md->topics[i];
        return NULL;
}

int stats_io_metadata(stats_io_t *io, char *errstr, size_t errstr_size) {
        const rd_kafka_metadata_t *md = NULL;
        rd_kafka_resp_err_t err =
                rd_kafka_metadata(io->rk, 1, NULL, &md, io->timeout_ms);
        if (err) {
                snprintf(errstr, errstr_size,
                         "the cluster (bootstrap.servers %s) did not answer "
                         "a metadata request within %d ms: %s",
                         io->bootstrap[0] ? io->bootstrap : "unset",
                         io->timeout_ms, rd_kafka_err2str(err));
                return -1;
        }
        for (size_t i = 0; i < io->topic_cnt; i++) {
                stats_io_topic_t *t = &io->topics[i];
                const rd_kafka_metadata_topic_t *mdt =
                        find_topic(md, t->fig->topic);
                t->cnt = -1;
                if (!mdt)
                        topic_error(t->fig, "the topic does not exist");
                else if (mdt->err)
                        topic_error(t->fig, "metadata: %s",
                                    rd_kafka_err2str(mdt->err));
                else
                        t->cnt = mdt->partition_cnt;
                t->fig->partitions = t->cnt;
        }
        rd_kafka_metadata_destroy(md);
        return 0;
}

stats_part_t **stats_io_parts_new(const stats_io_t *io) {
        stats_part_t **parts = calloc(io->topic_cnt, sizeof(*parts));
        for (size_t i = 0; parts && i < io->topic_cnt; i++) {
                int n    = io->topics[i].cnt > 0 ? io->topics[i].cnt : 1;
                parts[i] = calloc((size_t)n, sizeof(**parts));
                if (!parts[i]) {
                        stats_io_parts_free(io, parts);
                        return NULL;
                }
        }
        return parts;
}

void stats_io_parts_free(const stats_io_t *io, stats_part_t **parts) {
        for (size_t i = 0; parts && i < io->topic_cnt; i++)
                free(parts[i]);
        free(parts);
}

static void watermarks(stats_io_t *io, stats_io_topic_t *t, stats_part_t *p) {
        for (int k = 0; k < t->cnt; k++) {
                p[k].low = p[k].high    = -1;
                rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
                        io->rk, t->fig->topic, k, &p[k].low, &p[k].high,
                        io->timeout_ms);
                if (err) {
                        p[k].low = p[k].high = -1;
                        topic_error(t->fig, "watermarks of partition %d: %s", k,
                                    rd_kafka_err2str(err));
                }
        }
}

/*
 * Committed offsets of @p rk's group for every partition (@p dlq_only: of
 * the DLQ where nothing was committed yet) into @p parts; @p what names the
 * group in errors.
 */
static void committed(stats_io_t *io,
                      rd_kafka_t *rk,
                      int dlq_only,
                      const char *what,
                      stats_part_t **parts) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(16);
        for (size_t i = 0; i < io->topic_cnt; i++)
                for (int k = 0; k < io->topics[i].cnt; k++)
                        if (!dlq_only ||
                            (io->topics[i].fig->role == STATS_ROLE_DLQ &&
                             parts[i][k].committed_ok &&
                             parts[i][k].committed < 0))
                                rd_kafka_topic_partition_list_add(
                                        l, io->topics[i].fig->topic, k);
        rd_kafka_resp_err_t err =
                l->cnt ? rd_kafka_committed(rk, l, io->timeout_ms) : 0;
        for (int j = 0; j < l->cnt; j++) {
                const rd_kafka_topic_partition_t *e = &l->elems[j];
                size_t i                            = 0;
                while (i < io->topic_cnt &&
                       strcmp(io->topics[i].fig->topic, e->topic))
                        i++;
                if (i == io->topic_cnt ||
                    e->partition >= io->topics[i].cnt) /* not asked */
                        continue;
                stats_part_t *p          = &parts[i][e->partition];
                rd_kafka_resp_err_t perr = err ? err : e->err;
                p->committed_ok          = !perr;
                if (perr)
                        topic_error(io->topics[i].fig,
                                    "committed offsets of %s: %s", what,
                                    rd_kafka_err2str(perr));
                else if (e->offset >= 0 || !dlq_only) {
                        p->committed = e->offset >= 0 ? e->offset : -1;
                        if (!dlq_only)
                                stats_part_metadata(p, e->metadata,
                                                    e->metadata_size);
                }
        }
        rd_kafka_topic_partition_list_destroy(l);
}

void stats_io_snapshot(stats_io_t *io, stats_part_t **parts) {
        for (size_t i = 0; i < io->topic_cnt; i++)
                watermarks(io, &io->topics[i], parts[i]);
        committed(io, io->rk, 0, "the group", parts);
        committed(io, io->replay_rk, 1, "the replay's progress group", parts);
}

/* Per partition while reading: PENDING until its first message (or end)
 * arrives, then its timestamp, NONE for nothing to read. */
#define TS_PENDING (-2)
#define TS_NONE (-1)
#define TS_MISSING (-3) /* a message without a timestamp */
#define TS_END (-4)     /* the end, reached without a record */

/* Assign every partition with waiting messages at its start; returns how
 * many were assigned. */
static int assign_starts(stats_io_t *io, stats_part_t **parts, int64_t **ts) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(16);
        for (size_t i = 0; i < io->topic_cnt; i++) {
                if (!io->topics[i].fig->waiting_ok)
                        continue;
                for (int k = 0; k < io->topics[i].cnt; k++) {
                        if (stats_part_waiting(&parts[i][k]) <= 0)
                                continue;
                        ts[i][k] = TS_PENDING;
                        rd_kafka_topic_partition_list_add(
                                l, io->topics[i].fig->topic, k)
                                ->offset = stats_part_start(&parts[i][k]);
                }
        }
        int n = l->cnt;
        if (n && rd_kafka_assign(io->rk, l))
                n = -1;
        rd_kafka_topic_partition_list_destroy(l);
        return n;
}

static void pause_one(stats_io_t *io, const char *topic, int32_t partition) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, topic, partition);
        rd_kafka_pause_partitions(io->rk, l);
        rd_kafka_topic_partition_list_destroy(l);
}

/* Record @p m's answer; returns 1 when it settled a pending partition. */
static int take(stats_io_t *io, int64_t **ts, const rd_kafka_message_t *m) {
        const char *name = rd_kafka_topic_name(m->rkt);
        for (size_t i = 0; i < io->topic_cnt; i++) {
                if (strcmp(io->topics[i].fig->topic, name) ||
                    m->partition >= io->topics[i].cnt ||
                    ts[i][m->partition] != TS_PENDING)
                        continue;
                if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                        topic_error(
                                io->topics[i].fig, "reading partition %d: %s",
                                (int)m->partition, rd_kafka_err2str(m->err));
                        return 0;
                }
                int64_t t =
                        m->err ? TS_END : rd_kafka_message_timestamp(m, NULL);
                ts[i][m->partition] = m->err || t >= 0 ? t : TS_MISSING;
                pause_one(io, name, m->partition);
                return 1;
        }
        return 0;
}

static void read_starts(stats_io_t *io, int64_t **ts, int pending) {
        int64_t deadline = ops_mono_ms() + io->timeout_ms;
        while (pending > 0 && ops_mono_ms() < deadline) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(io->rk, 100);
                if (!m)
                        continue;
                if (m->rkt)
                        pending -= take(io, ts, m);
                rd_kafka_message_destroy(m);
        }
        rd_kafka_assign(io->rk, NULL);
}

/* The topic's oldest timestamp from its partitions' answers. */
static void settle(stats_io_t *io,
                   size_t i,
                   stats_part_t *parts,
                   const int64_t *ts,
                   int64_t now_ms) {
        stats_topic_t *t = io->topics[i].fig;
        int64_t oldest   = -1;
        int known        = 1;
        for (int k = 0; k < io->topics[i].cnt; k++) {
                /* Waiting counted markers only: nothing waits there. */
                parts[k].rest_unreadable = ts[k] == TS_END;
                if (ts[k] == TS_PENDING) {
                        known = 0;
                        topic_error(t,
                                    "the message at partition %d offset "
                                    "%lld was not read within %d ms",
                                    k, (long long)stats_part_start(&parts[k]),
                                    io->timeout_ms);
                } else if (ts[k] == TS_MISSING) {
                        known = 0;
                        topic_error(t,
                                    "the message at partition %d has no "
                                    "timestamp",
                                    k);
                } else if (ts[k] >= 0 && (oldest < 0 || ts[k] < oldest)) {
                        oldest = ts[k];
                }
        }
        if (known)
                stats_topic_oldest(t, oldest, now_ms);
}

void stats_io_oldest(stats_io_t *io, stats_part_t **parts, int64_t now_ms) {
        int64_t **ts = calloc(io->topic_cnt, sizeof(*ts));
        for (size_t i = 0; ts && i < io->topic_cnt; i++) {
                int n = io->topics[i].cnt > 0 ? io->topics[i].cnt : 1;
                ts[i] = malloc(sizeof(**ts) * (size_t)n);
                for (int k = 0; ts[i] && k < n; k++)
                        ts[i][k] = TS_NONE;
                if (!ts[i])
                        goto out;
        }
        if (!ts)
                return;
        int pending = assign_starts(io, parts, ts);
        if (pending < 0) {
                for (size_t i = 0; i < io->topic_cnt; i++)
                        if (io->topics[i].fig->waiting_ok)
                                topic_error(io->topics[i].fig,
                                            "could not assign partitions "
                                            "to read the oldest messages");
                goto out;
        }
        read_starts(io, ts, pending);
        for (size_t i = 0; i < io->topic_cnt; i++) {
                if (!io->topics[i].fig->waiting_ok)
                        continue;
                settle(io, i, parts[i], ts[i], now_ms);
                stats_topic_depth(io->topics[i].fig, parts[i],
                                  io->topics[i].cnt);
        }
out:
        for (size_t i = 0; ts && i < io->topic_cnt; i++)
                free(ts[i]);
        free(ts);
}
