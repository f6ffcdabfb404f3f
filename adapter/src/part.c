/*
 * Service: the partition table. Each assignment of a consumed partition
 * (kretry_part_t, part.h) by topic index and partition number, its
 * references, the list of those assigned, the storing of its committable
 * offset for the next commit (with the offsets decided above it,
 * commit.c), and its pause as its state asks. Polling thread.
 */
#include "part.h"
#include "adapter_int.h"
#include "clock.h"
#include "commit.h"
#include "keychain.h"
#include "log.h"
#include "offsets.h"
#include "versions.h"

#include <stdlib.h>
#include <string.h>

int kretry_topic_index(const kretry_adapter_t *a, const char *topic) {
        for (int i = 0; i < a->topic_cnt; i++)
                if (!strcmp(a->topics[i], topic))
                        return i;
        return -1;
}

kretry_part_t *kretry_part_find(kretry_adapter_t *a, int tier, int32_t p) {
        if (tier < 0 || tier >= a->topic_cnt || p < 0 || p >= a->part_cap[tier])
                return NULL;
        return a->parts[tier][p];
}

kretry_part_t *kretry_part_of(kretry_adapter_t *a,
                              const rd_kafka_topic_partition_t *tp) {
        return kretry_part_find(a, kretry_topic_index(a, tp->topic),
                                tp->partition);
}

/* Room in the table for partition @p p of topic @p tier; -1 when memory is
 * short. */
static int part_room(kretry_adapter_t *a, int tier, int32_t p) {
        if (p < a->part_cap[tier])
                return 0;
        int cap = p + 1 > a->part_cap[tier] * 2 ? p + 1 : a->part_cap[tier] * 2;
        kretry_part_t **n = realloc(a->parts[tier], sizeof(*n) * (size_t)cap);
        if (!n)
                return -1;
        memset(n + a->part_cap[tier], 0,
               sizeof(*n) * (size_t)(cap - a->part_cap[tier]));
        a->parts[tier]    = n;
        a->part_cap[tier] = cap;
        return 0;
}

kretry_part_t *kretry_part_new(kretry_adapter_t *a, int tier, int32_t p) {
        kretry_part_t *part;
        if (tier < 0 || p < 0 || part_room(a, tier, p) ||
            !(part = calloc(1, sizeof(*part))))
                return NULL;
        part->tier          = tier;
        part->partition     = p;
        part->assigned      = 1;
        part->refs          = 1; /* the table's */
        part->stored        = -1;
        part->first         = -1;
        part->txn_sent      = -1;
        part->txn_committed = -1;
        part->src_next      = -1;
        part->src_end       = -1;
        part->emit_hi       = -1;
        kretry_offsets_init(&part->offsets);
        kretry_chains_init(&part->chains);
        kretry_versions_init(&part->versions);
        a->parts[tier][p] = part;
        return part;
}

void kretry_part_unref(kretry_part_t *part) {
        if (--part->refs > 0)
                return;
        kretry_offsets_free(&part->offsets);
        kretry_decided_free(&part->decided);
        free(part->txn_sent_md);
        free(part->txn_md);
        kretry_chains_free(&part->chains);
        kretry_versions_free(&part->versions);
        free(part);
}

/* Store @p off, the offset @p part's next commit takes, with the offsets
 * decided above it as metadata (rd_kafka_offsets_store), which the
 * periodic commit then carries: a SIGKILL repeats what was decided since
 * the last commit and what was in flight, not what was decided above it
 * before. The offset alone when nothing is decided above it (no memory
 * is taken then), and for a partition whose copy was refused as too
 * large: its commit carries the mark kretry stats reads (route.c). */
static rd_kafka_resp_err_t
store_offset(kretry_adapter_t *a, kretry_part_t *part, int64_t off) {
        rd_kafka_topic_partition_list_t *l = NULL;
        rd_kafka_resp_err_t err;
        if (!part->copies_stuck && kretry_commit_add(a, &l, part, 1) > 0 &&
            l->elems[0].offset == off) {
                err = rd_kafka_offsets_store(a->consumer, l);
                if (!err)
                        err = l->elems[0].err;
        } else
                err = rd_kafka_offset_store(a->rkts[part->tier],
                                            part->partition, off - 1);
        if (l)
                rd_kafka_topic_partition_list_destroy(l);
        return err;
}

void kretry_part_store(kretry_adapter_t *a, kretry_part_t *part) {
        int64_t off = kretry_offsets_committable(&part->offsets);
        if (off <= part->stored)
                return;
        rd_kafka_resp_err_t err = store_offset(a, part, off);
        if (err)
                kretry_log(a, KRETRY_LOG_WARNING, "OFFSET",
                           "storing %s [%d] offset %lld: %s",
                           a->topics[part->tier], (int)part->partition,
                           (long long)off, rd_kafka_err2str(err));
        else {
                part->stored    = off;
                a->commit_dirty = 1;
        }
}

int kretry_store_begin(kretry_adapter_t *a) {
        int was        = a->store_defer;
        a->store_defer = 1;
        return was;
}

void kretry_store_flush(kretry_adapter_t *a) {
        for (kretry_part_t *p; (p = a->store_list);) {
                a->store_list = p->next_store;
                p->next_store = NULL;
                p->store_due  = 0;
                if (p->assigned) /* a retired assignment stores nothing */
                        kretry_part_store(a, p);
                kretry_part_unref(p);
        }
}

void kretry_store_end(kretry_adapter_t *a, int was) {
        if (was)
                return;
        a->store_defer = 0;
        kretry_store_flush(a);
}

rd_kafka_topic_partition_list_t *
kretry_assigned_list(kretry_adapter_t *a,
                     const rd_kafka_topic_partition_list_t *except) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(8);
        for (int t = 0; t < a->topic_cnt; t++)
                for (int p = 0; p < a->part_cap[t]; p++)
                        if (a->parts[t][p] && a->parts[t][p]->assigned &&
                            !(except && rd_kafka_topic_partition_list_find(
                                                except, a->topics[t], p)))
                                rd_kafka_topic_partition_list_add(
                                        l, a->topics[t], p);
        return l;
}

int kretry_part_behind_cap(const kretry_adapter_t *a,
                           const kretry_part_t *part) {
        return part->tier > 0 ? a->conf->tier_buffer_msgs : 0;
}

void kretry_part_update_pause(kretry_adapter_t *a, kretry_part_t *part) {
        int want = part->assigned &&
                   ((part->held && !kretry_part_behind_cap(a, part)) ||
                    part->behind_full || part->src_wait.cnt > 0 ||
                    part->produce_failures > 0 || a->breaker_paused ||
                    (part->blocked_until &&
                     part->blocked_until > kretry_mono_ms()));
        if (want == part->paused)
                return;
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, a->topics[part->tier],
                                          part->partition);
        rd_kafka_resp_err_t err =
                want ? rd_kafka_pause_partitions(a->consumer, l)
                     : rd_kafka_resume_partitions(a->consumer, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (err)
                kretry_log(a, KRETRY_LOG_ERR, "PAUSE", "%s %s [%d]: %s",
                           want ? "pause" : "resume", a->topics[part->tier],
                           (int)part->partition, rd_kafka_err2str(err));
        part->paused = want;
}

void kretry_update_pause_all(kretry_adapter_t *a) {
        for (int t = 0; t < a->topic_cnt; t++)
                for (int p = 0; p < a->part_cap[t]; p++)
                        if (a->parts[t][p])
                                kretry_part_update_pause(a, a->parts[t][p]);
}
