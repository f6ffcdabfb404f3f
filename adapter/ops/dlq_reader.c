#include "dlq_reader.h"
#include "ops_time.h"
#include "secret.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct dlq_reader_s {
        rd_kafka_t *rk;
        char *topic;
        int has_group;
        int timeout_ms;
        int part_cnt;
        int64_t *start, *end; /* snapshot per partition */
        int64_t *done;        /* next offset to commit, -1: unmarked */
        int64_t *committed;   /* last committed (or start) */
        int64_t skipped_committed;
        int cur;      /* partition being read, part_cnt when finished */
        int assigned; /* cur is assigned */
};

int dlq_conf_put(rd_kafka_conf_t *conf,
                 const char *name,
                 const char *value,
                 char *errstr,
                 size_t errstr_size) {
        char reason[512];
        if (rd_kafka_conf_set(conf, name, value, reason, sizeof(reason)) ==
            RD_KAFKA_CONF_OK)
                return 0;
        kretry_secret_scrub(reason, sizeof(reason), value);
        snprintf(errstr, errstr_size, "%s=%s: %s", name,
                 kretry_secret_shown(name, value), reason);
        return -1;
}

rd_kafka_conf_t *dlq_client_conf(const kretry_topology_file_t *f,
                                 const char *bootstrap,
                                 int consumer,
                                 char *errstr,
                                 size_t errstr_size) {
        const char *mine      = consumer ? "consumer." : "producer.";
        const char *other     = consumer ? "producer." : "consumer.";
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        for (size_t i = 0; i < kretry_topology_prop_count(f); i++) {
                const kretry_topo_prop_t *p = kretry_topology_prop_at(f, i);
                const char *name            = p->name;
                if (!strncmp(name, other, 9))
                        continue;
                if (!strncmp(name, mine, 9))
                        name += 9;
                if (dlq_conf_put(conf, name, p->value, errstr, errstr_size))
                        goto err;
        }
        if (bootstrap && dlq_conf_put(conf, "bootstrap.servers", bootstrap,
                                      errstr, errstr_size))
                goto err;
        return conf;
err:
        rd_kafka_conf_destroy(conf);
        return NULL;
}

/* What the reader needs whatever the file says: explicit positions, no
 * automatic commits, an end-of-partition event, committed records only
 * (a copy of an aborted transaction under routing=transactional never
 * happened; a partition's end is where its committed records end), and
 * short fetch waits: the
 * next partition's fetch queues behind the finished one's, which a broker
 * holds for fetch.wait.max.ms when it has nothing more (500 ms by default,
 * per partition read). A reader stops at the end, so it seldom idles. */
static int reader_conf(rd_kafka_conf_t *conf,
                       const char *group,
                       char *errstr,
                       size_t errstr_size) {
        const char *pairs[][2] = {
                {"enable.auto.commit", "false"},
                {"enable.auto.offset.store", "false"},
                {"enable.partition.eof", "true"},
                {"isolation.level", "read_committed"},
                {"auto.offset.reset", "earliest"},
                {"fetch.wait.max.ms", "10"},
                {"group.id", group ? group : "kretry-dlq-reader"},
        };
        for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
                if (dlq_conf_put(conf, pairs[i][0], pairs[i][1], errstr,
                                 errstr_size))
                        return -1;
        return 0;
}

dlq_reader_t *dlq_reader_new(rd_kafka_conf_t *conf,
                             const char *topic,
                             const char *group,
                             int timeout_ms,
                             char *errstr,
                             size_t errstr_size) {
        dlq_reader_t *r = calloc(1, sizeof(*r));
        if (!r || !(r->topic = strdup(topic))) {
                snprintf(errstr, errstr_size, "out of memory");
                goto err;
        }
        r->has_group  = group != NULL;
        r->timeout_ms = timeout_ms;
        if (reader_conf(conf, group, errstr, errstr_size))
                goto err;
        r->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, errstr_size);
        if (!r->rk)
                goto err;
        return r;
err:
        if (!r || !r->rk)
                rd_kafka_conf_destroy(conf);
        dlq_reader_destroy(r);
        return NULL;
}

void dlq_reader_destroy(dlq_reader_t *r) {
        if (!r)
                return;
        if (r->rk) {
                rd_kafka_assign(r->rk, NULL);
                rd_kafka_consumer_close(r->rk);
                rd_kafka_destroy(r->rk);
        }
        free(r->start);
        free(r->end);
        free(r->done);
        free(r->committed);
        free(r->topic);
        free(r);
}

static int partition_count(dlq_reader_t *r, char *errstr, size_t errstr_size) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(r->rk, r->topic, NULL);
        rd_kafka_resp_err_t err =
                rkt ? rd_kafka_metadata(r->rk, 0, rkt, &md, r->timeout_ms)
                    : rd_kafka_last_error();
        int cnt = -1;
        if (err)
                snprintf(errstr, errstr_size, "%s: metadata: %s", r->topic,
                         rd_kafka_err2str(err));
        else if (md->topic_cnt != 1 || md->topics[0].err ||
                 md->topics[0].partition_cnt == 0)
                snprintf(errstr, errstr_size, "%s: %s", r->topic,
                         md->topic_cnt == 1 && md->topics[0].err
                                 ? rd_kafka_err2str(md->topics[0].err)
                                 : "topic not found");
        else
                cnt = md->topics[0].partition_cnt;
        if (md)
                rd_kafka_metadata_destroy(md);
        if (rkt)
                rd_kafka_topic_destroy(rkt);
        return cnt;
}

/* The group's committed offsets, where it has them, become the starts. */
static int from_group(dlq_reader_t *r, char *errstr, size_t errstr_size) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(r->part_cnt);
        for (int p = 0; p < r->part_cnt; p++)
                rd_kafka_topic_partition_list_add(l, r->topic, p);
        rd_kafka_resp_err_t err = rd_kafka_committed(r->rk, l, r->timeout_ms);
        for (int i = 0; !err && i < l->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &l->elems[i];
                if (tp->err || tp->offset < 0)
                        continue;
                int64_t o = tp->offset;
                if (o > r->end[tp->partition])
                        o = r->end[tp->partition];
                if (o > r->start[tp->partition]) {
                        r->skipped_committed += o - r->start[tp->partition];
                        r->start[tp->partition] = o;
                }
        }
        rd_kafka_topic_partition_list_destroy(l);
        if (err)
                snprintf(errstr, errstr_size, "%s: committed offsets: %s",
                         r->topic, rd_kafka_err2str(err));
        return err ? -1 : 0;
}

/* Every partition's first (@p which RD_KAFKA_OFFSET_BEGINNING) or next
 * (RD_KAFKA_OFFSET_END) offset in one ListOffsets request per leader, where
 * rd_kafka_query_watermark_offsets() would make two per partition. */
static int watermarks(dlq_reader_t *r,
                      int64_t which,
                      int64_t *out,
                      char *errstr,
                      size_t errstr_size) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(r->part_cnt);
        for (int p = 0; p < r->part_cnt; p++)
                rd_kafka_topic_partition_list_add(l, r->topic, p)->offset =
                        which;
        rd_kafka_resp_err_t err =
                rd_kafka_offsets_for_times(r->rk, l, r->timeout_ms);
        for (int i = 0; !err && i < l->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &l->elems[i];
                if ((err = tp->err) == 0 && tp->offset < 0)
                        err = RD_KAFKA_RESP_ERR__NO_OFFSET;
                if (!err && tp->partition >= 0 && tp->partition < r->part_cnt)
                        out[tp->partition] = tp->offset;
        }
        rd_kafka_topic_partition_list_destroy(l);
        if (err)
                snprintf(errstr, errstr_size, "%s: %s offsets: %s", r->topic,
                         which == RD_KAFKA_OFFSET_END ? "end" : "start",
                         rd_kafka_err2str(err));
        return err ? -1 : 0;
}

int dlq_reader_snapshot(dlq_reader_t *r,
                        int from_committed,
                        char *errstr,
                        size_t errstr_size) {
        if ((r->part_cnt = partition_count(r, errstr, errstr_size)) < 0)
                return -1;
        size_t n     = (size_t)r->part_cnt;
        r->start     = calloc(n, sizeof(int64_t));
        r->end       = calloc(n, sizeof(int64_t));
        r->done      = calloc(n, sizeof(int64_t));
        r->committed = calloc(n, sizeof(int64_t));
        if (!r->start || !r->end || !r->done || !r->committed) {
                snprintf(errstr, errstr_size, "out of memory");
                return -1;
        }
        if (watermarks(r, RD_KAFKA_OFFSET_BEGINNING, r->start, errstr,
                       errstr_size) ||
            watermarks(r, RD_KAFKA_OFFSET_END, r->end, errstr, errstr_size))
                return -1;
        if (from_committed && r->has_group &&
            from_group(r, errstr, errstr_size))
                return -1;
        for (int p = 0; p < r->part_cnt; p++) {
                r->done[p]      = -1;
                r->committed[p] = r->start[p];
        }
        return 0;
}

int dlq_reader_partition_cnt(const dlq_reader_t *r) {
        return r->part_cnt;
}

void dlq_reader_from(dlq_reader_t *r,
                     int32_t partition,
                     int64_t offset,
                     int one) {
        for (int p = 0; p < r->part_cnt; p++) {
                if (p < partition || (one && p > partition) ||
                    (p == partition && offset >= r->end[p])) {
                        r->start[p] = r->end[p];
                        continue;
                }
                if (p != partition)
                        continue;
                if (one && offset < r->start[p]) {
                        r->start[p] = r->end[p];
                        continue;
                }
                if (offset > r->start[p])
                        r->start[p] = offset;
                if (one)
                        r->end[p] = r->start[p] + 1;
        }
}

void dlq_reader_until(dlq_reader_t *r, int32_t partition, int64_t offset) {
        if (partition < 0 || partition >= r->part_cnt ||
            offset >= r->end[partition])
                return;
        r->end[partition] =
                offset > r->start[partition] ? offset : r->start[partition];
}

int dlq_reader_done(const dlq_reader_t *r) {
        return r->cur >= r->part_cnt;
}

int64_t dlq_reader_total(const dlq_reader_t *r) {
        int64_t n = 0;
        for (int p = 0; p < r->part_cnt; p++)
                n += r->end[p] - r->start[p];
        return n;
}

int64_t dlq_reader_start(const dlq_reader_t *r, int32_t partition) {
        return partition >= 0 && partition < r->part_cnt && r->start
                       ? r->start[partition]
                       : -1;
}

int64_t dlq_reader_skipped_committed(const dlq_reader_t *r) {
        return r->skipped_committed;
}

static int assign(dlq_reader_t *r, char *errstr, size_t errstr_size) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, r->topic, r->cur)->offset =
                r->start[r->cur];
        rd_kafka_resp_err_t err = rd_kafka_assign(r->rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (err) {
                snprintf(errstr, errstr_size, "%s [%d]: assign: %s", r->topic,
                         r->cur, rd_kafka_err2str(err));
                return -1;
        }
        r->assigned = 1;
        return 0;
}

/* Move to the next partition with something to read. */
static void next_partition(dlq_reader_t *r) {
        r->assigned = 0;
        for (r->cur++; r->cur < r->part_cnt; r->cur++)
                if (r->start[r->cur] < r->end[r->cur])
                        return;
}

/* Errors a client recovers from by itself (a broker restarting): waited
 * out, within the timeout. */
static int transient(rd_kafka_resp_err_t err) {
        return err == RD_KAFKA_RESP_ERR__TRANSPORT ||
               err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
               err == RD_KAFKA_RESP_ERR__TIMED_OUT;
}

int dlq_reader_next(dlq_reader_t *r,
                    rd_kafka_message_t **mp,
                    char *errstr,
                    size_t errstr_size) {
        if (!r->assigned && r->cur == 0 && r->start[0] >= r->end[0])
                next_partition(r);
        int64_t deadline = ops_mono_ms() + r->timeout_ms;
        while (r->cur < r->part_cnt) {
                if (!r->assigned && assign(r, errstr, errstr_size))
                        return -1;
                rd_kafka_message_t *m = rd_kafka_consumer_poll(r->rk, 100);
                if (!m || (m->err && transient(m->err)) ||
                    (m->partition != r->cur && m->partition >= 0)) {
                        /* nothing yet, a broker being reconnected, or a
                         * message left from the previous partition */
                        if (m)
                                rd_kafka_message_destroy(m);
                        if (ops_mono_ms() < deadline)
                                continue;
                        snprintf(errstr, errstr_size,
                                 "%s [%d]: nothing read within %d ms", r->topic,
                                 r->cur, r->timeout_ms);
                        return -1;
                }
                if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF ||
                    (!m->err && m->offset >= r->end[r->cur])) {
                        rd_kafka_message_destroy(m);
                        next_partition(r);
                        continue;
                }
                if (m->err) {
                        snprintf(errstr, errstr_size, "%s [%d]: %s", r->topic,
                                 r->cur, rd_kafka_message_errstr(m));
                        rd_kafka_message_destroy(m);
                        return -1;
                }
                if (m->offset + 1 >= r->end[r->cur])
                        next_partition(r); /* the last one of it */
                *mp = m;
                return 1;
        }
        return 0;
}

void dlq_reader_mark(dlq_reader_t *r, int32_t partition, int64_t offset) {
        if (partition >= 0 && partition < r->part_cnt)
                r->done[partition] = offset + 1;
}

int dlq_reader_commit(dlq_reader_t *r, char *errstr, size_t errstr_size) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(r->part_cnt);
        for (int p = 0; p < r->part_cnt; p++)
                if (r->done[p] > r->committed[p])
                        rd_kafka_topic_partition_list_add(l, r->topic, p)
                                ->offset = r->done[p];
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (l->cnt > 0 && r->has_group)
                err = rd_kafka_commit(r->rk, l, 0);
        for (int i = 0; !err && i < l->cnt; i++) {
                if ((err = l->elems[i].err))
                        break;
                r->committed[l->elems[i].partition] = l->elems[i].offset;
        }
        rd_kafka_topic_partition_list_destroy(l);
        if (err)
                snprintf(errstr, errstr_size, "%s: commit: %s", r->topic,
                         rd_kafka_err2str(err));
        return err ? -1 : 0;
}
