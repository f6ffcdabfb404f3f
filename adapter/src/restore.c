/*
 * Rebuilding per-key state when source partitions are assigned, before any
 * of their messages is handled: the ordering chains from the tier partitions
 * (from the group's committed offset to the end: what is still in the retry
 * chain) and the version store from its changelog partition (from the
 * beginning; compaction keeps it to one record per key). Its cost follows
 * the retry backlog and the number of keys, never the source topic. Runs on
 * the thread driving the adapter, inside the rebalance callback, with a
 * second consumer that never joins the group and never commits.
 */
#include "adapter_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
        int tier; /* 0: the version changelog */
        int64_t end;
        int done;
} restore_part_t;

static void restorer_log(const rd_kafka_t *rk,
                         int level,
                         const char *fac,
                         const char *buf) {
        kretry_adapter_t *a = rd_kafka_opaque(rk);
        if (a && a->conf->log_cb && level <= KRETRY_LOG_WARNING)
                kretry_log(a,
                           level < KRETRY_LOG_ERR ? KRETRY_LOG_ERR
                                                  : (kretry_log_level_t)level,
                           fac, "restore: %s", buf);
}

static rd_kafka_t *restorer(kretry_adapter_t *a) {
        if (a->restorer)
                return a->restorer;
        char errstr[512];
        rd_kafka_conf_t *rc = rd_kafka_conf_dup(a->conf->consumer);
        /* Same group id, to read its committed offsets; never commits. */
        rd_kafka_conf_set(rc, "enable.auto.commit", "false", NULL, 0);
        rd_kafka_conf_set_opaque(rc, a);
        rd_kafka_conf_set_log_cb(rc, restorer_log);
        a->restorer =
                rd_kafka_new(RD_KAFKA_CONSUMER, rc, errstr, sizeof(errstr));
        if (!a->restorer) {
                rd_kafka_conf_destroy(rc);
                kretry_log(a, KRETRY_LOG_ERR, "RESTORE", "%s", errstr);
        }
        return a->restorer;
}

void kretry_restore_destroy(kretry_adapter_t *a) {
        if (a->restorer)
                rd_kafka_destroy(a->restorer);
        a->restorer = NULL;
}

/* Tier partitions (ordering) and changelog partitions (versioning) of the
 * source partitions in @p parts. */
static rd_kafka_topic_partition_list_t *
to_read(kretry_adapter_t *a, const rd_kafka_topic_partition_list_t *parts) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(parts->cnt * a->topic_cnt);
        for (int i = 0; i < parts->cnt; i++) {
                int32_t p = parts->elems[i].partition;
                if (strcmp(parts->elems[i].topic, a->topics[0]))
                        continue;
                for (int t = 1; a->conf->ordering && t < a->topic_cnt; t++)
                        rd_kafka_topic_partition_list_add(l, a->topics[t], p);
                if (a->versions_topic)
                        rd_kafka_topic_partition_list_add(l, a->versions_topic,
                                                          p);
        }
        return l;
}

int64_t kretry_restore_start(int64_t committed, int64_t lo, int64_t hi) {
        int64_t start = committed < lo ? lo : committed;
        return start < hi ? start : -1;
}

/* Start offsets: committed for tiers, the beginning for the changelog; drop
 * partitions with nothing to read. Returns how many remain. */
static int plan(kretry_adapter_t *a,
                rd_kafka_t *rk,
                rd_kafka_topic_partition_list_t *l,
                int timeout_ms) {
        rd_kafka_resp_err_t err = rd_kafka_committed(rk, l, timeout_ms);
        if (err)
                kretry_log(a, KRETRY_LOG_WARNING, "RESTORE",
                           "committed offsets: %s; reading tiers from the "
                           "beginning",
                           rd_kafka_err2str(err));
        int n = 0;
        for (int i = 0; i < l->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &l->elems[i];
                restore_part_t *rp             = calloc(1, sizeof(*rp));
                int64_t lo = 0, hi = 0;
                tp->opaque = rp;
                rp->tier   = kretry_topic_index(a, tp->topic);
                if (rp->tier < 0)
                        rp->tier = 0;
                if (err || rp->tier == 0)
                        tp->offset = -1; /* from the log start */
                if (rd_kafka_query_watermark_offsets(rk, tp->topic,
                                                     tp->partition, &lo, &hi,
                                                     timeout_ms)) {
                        rp->done = 1; /* unknown: logged by librdkafka */
                        continue;
                }
                /* A committed offset below the log start (retention deleted
                 * unread copies) would be reset by auto.offset.reset — to
                 * the end by librdkafka's default — and the wait for an end
                 * never read would last restore.timeout.ms. */
                tp->offset = kretry_restore_start(tp->offset, lo, hi);
                rp->end    = hi;
                rp->done   = tp->offset < 0;
                n += !rp->done;
        }
        return n;
}

static void apply(kretry_adapter_t *a,
                  const restore_part_t *rp,
                  const rd_kafka_message_t *m) {
        kretry_part_t *src = kretry_part_find(a, 0, m->partition);
        if (!src || !m->key)
                return;
        if (rp->tier == 0) {
                int64_t v;
                if (m->payload &&
                    !kretry_version_decode(m->payload, m->len, &v))
                        kretry_versions_raise(&src->versions, m->key,
                                              m->key_len, v);
                return;
        }
        rd_kafka_headers_t *h;
        kretry_chain_t c;
        if (rd_kafka_message_headers(m, &h))
                return;
        kretry_chain_decode(h, &c);
        if (!c.orig_offset_ok)
                return;
        /* A malformed attempt ranks below every valid one. */
        kretry_pending_t copy = {.orig_offset = c.orig_offset,
                                 .due_ts      = c.due_ok ? c.due_ts : 0,
                                 .copy_offset = m->offset,
                                 .tier        = rp->tier,
                                 .attempt     = c.attempt_ok ? c.attempt : -1};
        kretry_chains_restore(&src->chains, m->key, m->key_len, &copy);
}

static restore_part_t *find(rd_kafka_topic_partition_list_t *l,
                            const rd_kafka_message_t *m) {
        rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_find(
                l, rd_kafka_topic_name(m->rkt), m->partition);
        return tp ? tp->opaque : NULL;
}

static int read_all(kretry_adapter_t *a,
                    rd_kafka_t *rk,
                    rd_kafka_topic_partition_list_t *l,
                    int remaining) {
        int64_t deadline = kretry_now_ms() + a->conf->restore_timeout_ms;
        rd_kafka_assign(rk, l);
        while (remaining > 0 && kretry_now_ms() < deadline) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
                if (!m)
                        continue;
                restore_part_t *rp = m->err ? NULL : find(l, m);
                if (rp && !rp->done) {
                        apply(a, rp, m);
                        if (m->offset >= rp->end - 1) {
                                rp->done = 1;
                                remaining--;
                        }
                }
                rd_kafka_message_destroy(m);
        }
        rd_kafka_assign(rk, NULL);
        return remaining;
}

void kretry_restore(kretry_adapter_t *a,
                    const rd_kafka_topic_partition_list_t *parts) {
        rd_kafka_t *rk = restorer(a);
        if (!rk)
                return;
        int64_t t0                         = kretry_now_ms();
        rd_kafka_topic_partition_list_t *l = to_read(a, parts);
        int timeout                        = a->conf->restore_timeout_ms;
        int left = read_all(a, rk, l, plan(a, rk, l, timeout));
        if (left)
                kretry_log(a, KRETRY_LOG_ERR, "RESTORE",
                           "%d partition(s) not read to their end within "
                           "restore.timeout.ms (%d ms): key order and "
                           "versions may be incomplete for them",
                           left, timeout);
        for (int i = 0; i < l->cnt; i++) {
                free(l->elems[i].opaque);
                l->elems[i].opaque = NULL;
        }
        rd_kafka_topic_partition_list_destroy(l);
        kretry_stats_gauges(a);
        kretry_log(a, KRETRY_LOG_INFO, "RESTORE",
                   "key state of %d source partition(s) rebuilt in %lld ms",
                   parts->cnt, (long long)(kretry_now_ms() - t0));
}
