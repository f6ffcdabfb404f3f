/*
 * Phase: per-key state rebuilt on assignment.
 *
 * Rebuilding per-key state when source partitions are assigned, before any
 * of their messages is handled: the ordering chains from the tier partitions
 * (from the group's committed offset to the end: what is still in the retry
 * chain) and the version store from its changelog partition (from the
 * beginning; compaction keeps it to one record per key). Its cost follows
 * the retry backlog and the number of keys, never the source topic.
 *
 * With park_key, the parked keys too: the partition of the same number of
 * the parked-keys topic (ordering.parked.topic, compacted), read from its
 * beginning, holds a record per parked key — the original offset of the
 * head whose DLQ copy parked it, written before that copy — and a
 * tombstone for a key a replay released, acknowledged before the replay's
 * offset is committed (route.c kretry_route_unpark). So a key with a
 * record and no tombstone after it is parked; a replay not yet committed
 * comes again and lifts it when it arrives. Its cost follows the parked
 * keys (and what compaction has not yet removed), never the DLQ.
 *
 * Migration: a parked-keys partition read to its end without the
 * migration's mark (never written: a chain parked by a kretry that kept
 * parks in the DLQ alone; or a migration cut short) is filled once: the
 * DLQ partition of the same number, read from its beginning for the copies
 * this group wrote that parked a key (the head's, with
 * kretry-parked-followers, and its parked followers'), and, since a replay
 * that kretry handled lifted a park without a trace but on the source, the
 * source between the oldest such copy's original offset and the committed
 * offset, for replayed messages of the keys (kretry-replay-count) above
 * their newest copy; the parks that stand are written, then the mark, so
 * that no restore reads the DLQ again.
 *
 * Runs on the thread driving the adapter, inside the rebalance callback,
 * with a second consumer that never joins the group and never commits; the
 * whole of it is bounded by restore.timeout.ms.
 */
#include "restore.h"
#include "adapter_int.h"
#include "clock.h"
#include "conf.h"
#include "headers.h"
#include "keychain.h"
#include "log.h"
#include "offsets.h"
#include "part.h"
#include "stats.h"
#include "versions.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int (*kretry_test_txn_blind)(void);

typedef enum { R_TIER, R_VERSIONS, R_PARKED, R_DLQ, R_SOURCE } restore_kind_t;

/* The record that marks a parked-keys partition as migrated, written
 * after the parks it found: its value is not an offset, so it parks
 * nothing, and compaction keeps it (the latest of its key). */
#define KRETRY_PARKED_MIGRATED "kretry-parked-keys-migrated"
#define KRETRY_PARKED_MARK "migrated"

/* Test hook: the DLQ partitions a restore read, counted. */
int kretry_test_restore_dlq_reads;
int (*kretry_test_migration_cut)(void);

/* The migration stops here (test only): as a process killed now. */
static int migration_cut(void) {
        return kretry_test_migration_cut && kretry_test_migration_cut();
}

typedef struct {
        restore_kind_t kind;
        int tier; /* R_TIER */
        int64_t end;
        int done;
        int unknown; /* its end could not be learnt: not read */
        int marked;  /* R_PARKED: the migration's mark was read */
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
        /* The end of a partition whose last offsets are transaction
         * markers (never delivered) is known by this event only. */
        rd_kafka_conf_set(rc, "enable.partition.eof", "true", NULL, 0);
        /* A bulk reader whose reading (the rebuild) is slower than its
         * fetching: librdkafka stops fetching once queued.min.messages
         * wait in its queue and, at its default, fetches again only
         * fetch.queue.backoff.ms (1 s) later, long after the rebuild
         * emptied the queue. */
        rd_kafka_conf_set(rc, "fetch.queue.backoff.ms", "10", NULL, 0);
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

/* Tier partitions (ordering), changelog partitions (versioning) and DLQ
 * partitions (park_key) of the source partitions in @p parts. */
static rd_kafka_topic_partition_list_t *
to_read(kretry_adapter_t *a, const rd_kafka_topic_partition_list_t *parts) {
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(
                parts->cnt * (a->topic_cnt + 1));
        for (int i = 0; i < parts->cnt; i++) {
                int32_t p = parts->elems[i].partition;
                if (strcmp(parts->elems[i].topic, a->topics[0]))
                        continue;
                for (int t = 1;
                     a->conf->ordering == KRETRY_ORDER_KEY && t < a->topic_cnt;
                     t++)
                        rd_kafka_topic_partition_list_add(l, a->topics[t], p);
                if (a->parked_topic)
                        rd_kafka_topic_partition_list_add(l, a->parked_topic,
                                                          p);
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

static restore_part_t *part_new(kretry_adapter_t *a, const char *topic) {
        restore_part_t *rp = calloc(1, sizeof(*rp));
        if (!rp)
                return NULL;
        rp->tier = kretry_topic_index(a, topic);
        if (rp->tier == 0)
                rp->kind = R_SOURCE;
        else if (rp->tier > 0)
                rp->kind = R_TIER;
        else if (!strcmp(topic, a->dlq))
                rp->kind = R_DLQ;
        else
                rp->kind = a->parked_topic && !strcmp(topic, a->parked_topic)
                                   ? R_PARKED
                                   : R_VERSIONS;
        return rp;
}

/* Where to read [start, end) of one partition: tiers from the committed
 * offset, the changelog and the DLQ from the log start, the source from
 * above the oldest park evidence to the committed offset (what was handled
 * before this assignment). Returns the start, or -1 when nothing. */
static int64_t range(kretry_adapter_t *a,
                     const rd_kafka_topic_partition_t *tp,
                     int committed_ok,
                     int64_t *endp) {
        const restore_part_t *rp = tp->opaque;
        kretry_part_t *src;
        switch (rp->kind) {
        case R_TIER:
                return committed_ok ? tp->offset : -1;
        case R_SOURCE:
                src = kretry_part_find(a, 0, tp->partition);
                if (!committed_ok || tp->offset < 0 || !src)
                        return *endp = -1;
                *endp = tp->offset < *endp ? tp->offset : *endp;
                return kretry_chains_parked_from(&src->chains) + 1;
        default:
                return -1;
        }
}

/* One logical offset of a partition (@p which: RD_KAFKA_OFFSET_BEGINNING
 * or RD_KAFKA_OFFSET_END, which ListOffsets takes as timestamps), waiting
 * @p timeout_ms at most. */
static rd_kafka_resp_err_t logical_offset(rd_kafka_t *rk,
                                          const rd_kafka_topic_partition_t *tp,
                                          int64_t which,
                                          int64_t *out,
                                          int timeout_ms) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, tp->topic, tp->partition)->offset =
                which;
        rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(rk, l, timeout_ms);
        if (!err)
                err = l->elems[0].err;
        if (!err && l->elems[0].offset < 0)
                err = RD_KAFKA_RESP_ERR__NO_OFFSET;
        *out = l->elems[0].offset;
        rd_kafka_topic_partition_list_destroy(l);
        return err;
}

/* A partition's watermarks, asked again until @p deadline: one without a
 * leader (a broker restarting) is answered at once with an error.
 *
 * Not rd_kafka_query_watermark_offsets(): before librdkafka 2.3.0 it ignored
 * its timeout and waited while the partition's leader was down, for as
 * long as that broker stayed down, even after the leadership moved
 * (librdkafka #2588, fixed by #4460): a SIGKILLed broker held a rebalance
 * here past restore.timeout.ms until it was restarted.
 * rd_kafka_offsets_for_times() keeps its timeout; each try is capped at 2 s
 * and followed by a metadata request for the topic, so that the next try
 * goes to a moved leader. Kept on the librdkafka kretry needs now (2.6.1
 * on): the retries towards a moved leader are its own, and the watermark
 * query has not been tried against a broker kill since (it_cluster
 * test_kill_kretry on three nodes). */
static rd_kafka_resp_err_t watermarks(rd_kafka_t *rk,
                                      const rd_kafka_topic_partition_t *tp,
                                      int64_t *lo,
                                      int64_t *hi,
                                      int64_t deadline) {
        for (;;) {
                rd_kafka_resp_err_t err =
                        logical_offset(rk, tp, RD_KAFKA_OFFSET_BEGINNING, lo,
                                       kretry_left_ms(deadline, 2000));
                if (!err)
                        err = logical_offset(rk, tp, RD_KAFKA_OFFSET_END, hi,
                                             kretry_left_ms(deadline, 2000));
                if (!err || !kretry_left_ms(deadline, -1))
                        return err;
                const struct rd_kafka_metadata *md = NULL;
                rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, tp->topic, NULL);
                if (rkt && !rd_kafka_metadata(rk, 0, rkt, &md,
                                              kretry_left_ms(deadline, 2000)))
                        rd_kafka_metadata_destroy(md);
                if (rkt)
                        rd_kafka_topic_destroy(rkt);
                int left = kretry_left_ms(deadline, 100);
                if (!left)
                        return err;
                struct timespec ts = {0, left * 1000000L};
                nanosleep(&ts, NULL);
        }
}

/* One partition's watermarks, or why they are unknown. */
typedef struct {
        int64_t lo, hi;
        rd_kafka_resp_err_t err;
} marks_t;

/* @p which (as logical_offset) of every partition of @p l, in one call:
 * one ListOffsets request a leader. Returns the call's error. */
static rd_kafka_resp_err_t logical_all(rd_kafka_t *rk,
                                       const rd_kafka_topic_partition_list_t *l,
                                       int64_t which,
                                       int lo_side,
                                       marks_t *out,
                                       int timeout_ms) {
        rd_kafka_topic_partition_list_t *q =
                rd_kafka_topic_partition_list_new(l->cnt);
        for (int i = 0; i < l->cnt; i++)
                rd_kafka_topic_partition_list_add(q, l->elems[i].topic,
                                                  l->elems[i].partition)
                        ->offset = which;
        rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(rk, q, timeout_ms);
        for (int i = 0; !err && i < l->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &q->elems[i];
                if (!out[i].err)
                        out[i].err = tp->err ? tp->err
                                     : tp->offset < 0
                                             ? RD_KAFKA_RESP_ERR__NO_OFFSET
                                             : 0;
                *(lo_side ? &out[i].lo : &out[i].hi) = tp->offset;
        }
        rd_kafka_topic_partition_list_destroy(q);
        return err;
}

/* The watermarks of every partition of @p l into @p out (l->cnt of them):
 * asked for all at once (two requests a leader, not two a partition:
 * dozens of round trips on a busy broker), then, for a partition answered
 * with an error, alone and again until @p deadline (watermarks()). */
static void watermarks_all(rd_kafka_t *rk,
                           const rd_kafka_topic_partition_list_t *l,
                           marks_t *out,
                           int64_t deadline) {
        if (!l->cnt)
                return;
        memset(out, 0, sizeof(*out) * (size_t)l->cnt);
        rd_kafka_resp_err_t err =
                logical_all(rk, l, RD_KAFKA_OFFSET_BEGINNING, 1, out,
                            kretry_left_ms(deadline, 2000));
        if (!err)
                err = logical_all(rk, l, RD_KAFKA_OFFSET_END, 0, out,
                                  kretry_left_ms(deadline, 2000));
        for (int i = 0; i < l->cnt; i++)
                if (err || out[i].err)
                        out[i].err = watermarks(rk, &l->elems[i], &out[i].lo,
                                                &out[i].hi, deadline);
}

/* The offsets the previous owner of @p tp (committed, with its metadata)
 * decided above the committed one, kept in its assignment: they are not
 * handled again (route.c admit), and a tier copy among them is no longer
 * in its key's chain. The metadata is untrusted (any client allowed to
 * commit for the group writes it): it is read only within the partition's
 * end offset now, @p end (-1: asked here, once, when there is kretry
 * metadata to check), since no owner can have decided what did not exist;
 * anything else is handled again. */
static void load_decided(kretry_adapter_t *a,
                         rd_kafka_t *rk,
                         const rd_kafka_topic_partition_t *tp,
                         int tier,
                         int64_t end,
                         int64_t deadline) {
        kretry_part_t *part = kretry_part_find(a, tier, tp->partition);
        const size_t plen   = strlen(KRETRY_DECIDED_METADATA);
        if (!part || tp->err || tp->offset < 0 || tp->metadata_size < plen ||
            memcmp(tp->metadata, KRETRY_DECIDED_METADATA, plen))
                return;
        kretry_decided_free(&part->decided);
        int64_t lo;
        rd_kafka_resp_err_t err =
                end < 0 ? watermarks(rk, tp, &lo, &end, deadline) : 0;
        int rc = err ? 0
                     : kretry_decided_parse(&part->decided, tp->offset, end,
                                            tp->metadata, tp->metadata_size);
        if (err)
                kretry_log(a, KRETRY_LOG_WARNING, "RESTORE",
                           "%s [%d]: end offset unknown (%s): the offsets "
                           "the commit's metadata says were decided above "
                           "%lld cannot be checked; they are handled again",
                           tp->topic, (int)tp->partition, rd_kafka_err2str(err),
                           (long long)tp->offset);
        else if (rc == KRETRY_DECIDED_BEYOND)
                kretry_log(a, KRETRY_LOG_WARNING, "RESTORE",
                           "%s [%d]: the commit's metadata says offsets past "
                           "the partition's end (%lld) were decided above "
                           "%lld: not written by a kretry owner of these "
                           "offsets, not trusted; they are handled again",
                           tp->topic, (int)tp->partition, (long long)end,
                           (long long)tp->offset);
        else if (rc)
                kretry_log(a, KRETRY_LOG_WARNING, "RESTORE",
                           "%s [%d]: the offsets decided above %lld could "
                           "not be read from the commit's metadata; they "
                           "are handled again",
                           tp->topic, (int)tp->partition,
                           (long long)tp->offset);
        else if (part->decided.cnt)
                kretry_log(a, KRETRY_LOG_INFO, "RESTORE",
                           "%s [%d]: %zu range(s) of offsets above %lld "
                           "were decided by the previous owner: not "
                           "handled again",
                           tp->topic, (int)tp->partition, part->decided.cnt,
                           (long long)tp->offset);
}

/* The group's committed offsets of the partitions of @p l a restore
 * starts from (tier and source partitions: range()), taken from @p known
 * (may be NULL), what source_resume asked a moment before, or asked now
 * when it lacks one. */
static rd_kafka_resp_err_t
committed(kretry_adapter_t *a,
          rd_kafka_t *rk,
          rd_kafka_topic_partition_list_t *l,
          const rd_kafka_topic_partition_list_t *known,
          int64_t deadline) {
        for (int i = 0; known && i < l->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &l->elems[i];
                if (kretry_topic_index(a, tp->topic) < 0)
                        continue;
                const rd_kafka_topic_partition_t *k =
                        rd_kafka_topic_partition_list_find(known, tp->topic,
                                                           tp->partition);
                if (!k || k->err)
                        known = NULL;
                else
                        tp->offset = k->offset;
        }
        return known ? 0
                     : rd_kafka_committed(rk, l, kretry_left_ms(deadline, -1));
}

/* Start offsets; drop partitions with nothing to read. Returns how many
 * remain; @p unknown counts those whose end could not be learnt before
 * @p deadline (not read either). */
static int plan(kretry_adapter_t *a,
                rd_kafka_t *rk,
                rd_kafka_topic_partition_list_t *l,
                const rd_kafka_topic_partition_list_t *known,
                int64_t deadline,
                int *unknown) {
        rd_kafka_resp_err_t err = committed(a, rk, l, known, deadline);
        if (err)
                kretry_log(a, KRETRY_LOG_WARNING, "RESTORE",
                           "committed offsets: %s; reading tiers from the "
                           "beginning",
                           rd_kafka_err2str(err));
        int n       = 0;
        marks_t *wm = calloc((size_t)l->cnt, sizeof(*wm));
        if (wm)
                watermarks_all(rk, l, wm, deadline);
        for (int i = 0; i < l->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &l->elems[i];
                restore_part_t *rp             = part_new(a, tp->topic);
                int64_t lo = wm ? wm[i].lo : 0, hi = wm ? wm[i].hi : 0;
                rd_kafka_resp_err_t werr =
                        rp && wm ? wm[i].err
                                 : RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE;
                tp->opaque = rp;
                if (werr) {
                        /* Assigned at the end, where it reads nothing. */
                        kretry_log(a, KRETRY_LOG_WARNING, "RESTORE",
                                   "%s [%d]: end offset unknown: %s", tp->topic,
                                   (int)tp->partition, rd_kafka_err2str(werr));
                        tp->offset = RD_KAFKA_OFFSET_END;
                        if (rp)
                                rp->done = rp->unknown = 1;
                        (*unknown)++;
                        continue;
                }
                rp->end = hi;
                /* A committed offset below the log start (retention deleted
                 * unread copies) would be reset by auto.offset.reset — to
                 * the end by librdkafka's default — and the wait for an end
                 * never read would last restore.timeout.ms. */
                tp->offset = kretry_restore_start(range(a, tp, !err, &rp->end),
                                                  lo, rp->end);
                rp->done   = tp->offset < 0;
                n += !rp->done;
                kretry_test_restore_dlq_reads += rp->kind == R_DLQ && !rp->done;
        }
        free(wm);
        return n;
}

/* A tier copy: its key's chain gets it unless it was decided already or
 * another group wrote it (kretry-group names that group: not ours, and,
 * as on the hot path, whatever its other headers say). One pass over its
 * headers. */
static void apply_tier(kretry_adapter_t *a,
                       kretry_part_t *src,
                       const restore_part_t *rp,
                       const rd_kafka_message_t *m,
                       rd_kafka_headers_t *h) {
        kretry_part_t *tier = kretry_part_find(a, rp->tier, m->partition);
        kretry_chain_t c;
        kretry_chain_decode(h, &c);
        if (kretry_chain_foreign(&c, a->group) || !c.orig_offset_ok)
                return;
        if (tier && kretry_decided_has(&tier->decided, m->offset))
                return; /* decided (handled, or copied on) already */
        /* A malformed attempt ranks below every valid one. */
        kretry_pending_t copy = {.orig_offset = c.orig_offset,
                                 .due_ts      = c.due_ok ? c.due_ts : 0,
                                 .copy_offset = m->offset,
                                 .tier        = rp->tier,
                                 .attempt     = c.attempt_ok ? c.attempt : -1};
        kretry_chains_restore(&src->chains, m->key, m->key_len, &copy);
}

static int header_is(rd_kafka_headers_t *h, const char *name, const char *s) {
        const void *v;
        size_t n;
        return !rd_kafka_header_get_last(h, name, &v, &n) && v &&
               n == strlen(s) && !memcmp(v, s, n);
}

/* A park record (its original offset, decimal), a tombstone that lifted
 * the park, or the migration's mark. */
static void apply_parked(restore_part_t *rp,
                         kretry_part_t *src,
                         const rd_kafka_message_t *m) {
        char v[24];
        char *end;
        if (m->key_len == strlen(KRETRY_PARKED_MIGRATED) &&
            !memcmp(m->key, KRETRY_PARKED_MIGRATED, m->key_len)) {
                rp->marked = m->payload != NULL;
                return;
        }
        if (!m->payload) {
                kretry_chains_park(&src->chains, m->key, m->key_len, 0);
                return;
        }
        if (!m->len || m->len >= sizeof(v))
                return;
        memcpy(v, m->payload, m->len);
        v[m->len]        = '\0';
        long long offset = strtoll(v, &end, 10);
        if (*end || offset < 0)
                return; /* not kretry's: parks nothing */
        kretry_chains_park_evidence(&src->chains, m->key, m->key_len, offset);
}

/* A DLQ copy this group wrote that parked its key: the head's (it carries
 * the followers it left) or a parked follower's. */
static void apply_dlq(kretry_adapter_t *a,
                      kretry_part_t *src,
                      const rd_kafka_message_t *m,
                      rd_kafka_headers_t *h) {
        const void *v;
        size_t n;
        kretry_chain_t c;
        if (!header_is(h, KRETRY_H_GROUP, a->group) ||
            (rd_kafka_header_get_last(h, KRETRY_H_PARKED_FOLLOWERS, &v, &n) &&
             !header_is(h, KRETRY_H_ERROR_CLASS, "parked")))
                return;
        kretry_chain_decode(h, &c);
        if (c.orig_offset_ok)
                kretry_chains_park_evidence(&src->chains, m->key, m->key_len,
                                            c.orig_offset);
}

static void
apply(kretry_adapter_t *a, restore_part_t *rp, const rd_kafka_message_t *m) {
        kretry_part_t *src = kretry_part_find(a, 0, m->partition);
        rd_kafka_headers_t *h;
        const void *v;
        size_t n;
        if (!src || !m->key)
                return;
        if (rp->kind == R_VERSIONS) {
                int64_t ver;
                if (m->payload &&
                    !kretry_version_decode(m->payload, m->len, &ver))
                        kretry_versions_raise(&src->versions, m->key,
                                              m->key_len, ver);
                return;
        }
        if (rp->kind == R_PARKED) {
                apply_parked(rp, src, m);
                return;
        }
        if (rd_kafka_message_headers(m, &h))
                return;
        if (rp->kind == R_TIER)
                apply_tier(a, src, rp, m, h);
        else if (rp->kind == R_DLQ)
                apply_dlq(a, src, m, h);
        else if (!rd_kafka_header_get_last(h, KRETRY_H_REPLAY_COUNT, &v, &n))
                kretry_chains_replayed(&src->chains, m->key, m->key_len,
                                       m->offset);
}

/* The restore_part_t of @p m's partition in @p l; the last one found is
 * kept in *@p lastp: a fetch delivers runs of one partition. */
typedef struct {
        const rd_kafka_topic_t *rkt;
        int32_t partition;
        restore_part_t *rp;
} last_part_t;

static restore_part_t *find(rd_kafka_topic_partition_list_t *l,
                            const rd_kafka_message_t *m,
                            last_part_t *lastp) {
        if (lastp->rp && lastp->rkt == m->rkt &&
            lastp->partition == m->partition)
                return lastp->rp;
        rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_find(
                l, rd_kafka_topic_name(m->rkt), m->partition);
        *lastp = (last_part_t){m->rkt, m->partition, tp ? tp->opaque : NULL};
        return lastp->rp;
}

/* Messages taken from the restore consumer's queue at once: one call, one
 * reading of the clock and one update of each partition's position for
 * all of them (rd_kafka_consumer_poll reads the clock for each: about a
 * tenth of a 1,000,000-copy rebuild's time). */
#define RESTORE_BATCH 1024

/* One message of the restore, @p m (destroyed by the caller); returns 1
 * when it finished its partition (its last offset, or its end). */
static int take(kretry_adapter_t *a,
                rd_kafka_topic_partition_list_t *l,
                const rd_kafka_message_t *m,
                last_part_t *lastp) {
        int eof            = m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF;
        restore_part_t *rp = m->err && !eof ? NULL : find(l, m, lastp);
        if (!rp || rp->done)
                return 0;
        if (!eof)
                apply(a, rp, m);
        if (!eof && m->offset < rp->end - 1)
                return 0;
        rp->done = 1;
        return 1;
}

/* Plan and read @p l (taken) until every partition's end or @p deadline,
 * with the committed offsets in @p known (committed()); returns how many
 * partitions were not read to their end. @p migrate (may
 * be NULL) gets the DLQ partitions of the parked-keys partitions read
 * without the migration's mark. */
static int read_all(kretry_adapter_t *a,
                    rd_kafka_t *rk,
                    rd_kafka_topic_partition_list_t *l,
                    const rd_kafka_topic_partition_list_t *known,
                    int64_t deadline,
                    rd_kafka_topic_partition_list_t *migrate) {
        int unknown   = 0;
        int remaining = l->cnt ? plan(a, rk, l, known, deadline, &unknown) : 0;
        rd_kafka_queue_t *q = NULL;
        if (remaining) {
                rd_kafka_assign(rk, l);
                q = rd_kafka_queue_get_consumer(rk);
        }
        rd_kafka_message_t *batch[RESTORE_BATCH];
        last_part_t last = {0};
        while (q && remaining > 0 && kretry_mono_ms() < deadline) {
                /* What is queued, without waiting for a full batch; when
                 * nothing is, the first message to come. */
                ssize_t n = rd_kafka_consume_batch_queue(q, 0, batch,
                                                         RESTORE_BATCH);
                if (n == 0)
                        n = rd_kafka_consume_batch_queue(q, 100, batch, 1);
                for (ssize_t i = 0; i < n; i++) {
                        remaining -= take(a, l, batch[i], &last);
                        rd_kafka_message_destroy(batch[i]);
                }
        }
        if (q)
                rd_kafka_queue_destroy(q);
        if (l->cnt)
                rd_kafka_assign(rk, NULL);
        for (int i = 0; i < l->cnt; i++) {
                restore_part_t *rp = l->elems[i].opaque;
                /* Read to its end without the mark: its parks, if any,
                 * are in the DLQ still. */
                if (migrate && rp && rp->kind == R_PARKED && rp->done &&
                    !rp->unknown && !rp->marked)
                        rd_kafka_topic_partition_list_add(
                                migrate, a->dlq, l->elems[i].partition);
                free(l->elems[i].opaque);
                l->elems[i].opaque = NULL;
        }
        rd_kafka_topic_partition_list_destroy(l);
        return remaining + unknown;
}

/* park_key's migration: the source partitions of the numbers in @p parts
 * where the DLQ showed a park, to look for replayed messages that lifted
 * it. */
static rd_kafka_topic_partition_list_t *
parked_sources(kretry_adapter_t *a,
               const rd_kafka_topic_partition_list_t *parts) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(parts->cnt);
        for (int i = 0; i < parts->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &parts->elems[i];
                kretry_part_t *src = kretry_part_find(a, 0, tp->partition);
                if (src && kretry_chains_parked_from(&src->chains) >= 0)
                        rd_kafka_topic_partition_list_add(l, a->topics[0],
                                                          tp->partition);
        }
        return l;
}

/* 1 when a source partition without a committed offset is read from its
 * start (auto.offset.reset earliest, kretry's default). */
static int resets_to_start(const kretry_adapter_t *a) {
        char v[32];
        size_t n = sizeof(v);
        if (rd_kafka_conf_get(a->conf->consumer, "auto.offset.reset", v, &n))
                return 0;
        return !strcmp(v, "earliest") || !strcmp(v, "smallest") ||
               !strcmp(v, "beginning");
}

/* 1 when source_resume needs the watermarks of @p tp (committed, @p tp's
 * offset): a source partition under ordering=key (where the consumer
 * resumes), or a partition whose commit carries decided offsets
 * (load_decided checks them against its end). */
static int needs_marks(kretry_adapter_t *a,
                       const rd_kafka_topic_partition_t *tp) {
        const size_t plen = strlen(KRETRY_DECIDED_METADATA);
        if (tp->err)
                return 0;
        if (!strcmp(tp->topic, a->topics[0]) &&
            a->conf->ordering == KRETRY_ORDER_KEY &&
            kretry_part_find(a, 0, tp->partition) &&
            (tp->offset >= 0 || resets_to_start(a)))
                return 1;
        return tp->offset >= 0 && tp->metadata_size >= plen &&
               !memcmp(tp->metadata, KRETRY_DECIDED_METADATA, plen);
}

/* The offsets decided above the committed one of each source partition of
 * @p parts and of its tier partitions (load_decided; every commit carries
 * them, under every ordering and routing), and with ordering=key where the
 * consumer resumes the source (its committed offset, or the log start when
 * it has none and resets to the start), the start of src_next; left at -1
 * when unknown (no answer before @p deadline). Returns the committed
 * offsets it asked (the caller destroys them), or NULL when they are
 * unknown. */
static rd_kafka_topic_partition_list_t *
source_resume(kretry_adapter_t *a,
              rd_kafka_t *rk,
              const rd_kafka_topic_partition_list_t *parts,
              int64_t deadline) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(parts->cnt * a->topic_cnt);
        for (int i = 0; i < parts->cnt; i++)
                if (!strcmp(parts->elems[i].topic, a->topics[0]))
                        for (int t = 0; t < a->topic_cnt; t++)
                                rd_kafka_topic_partition_list_add(
                                        l, a->topics[t],
                                        parts->elems[i].partition);
        rd_kafka_resp_err_t err =
                !l->cnt ? 0
                : kretry_test_txn_blind && kretry_test_txn_blind()
                        ? RD_KAFKA_RESP_ERR__TIMED_OUT
                        : rd_kafka_committed(rk, l,
                                             kretry_left_ms(deadline, -1));
        if (err)
                kretry_log(a, KRETRY_LOG_WARNING, "RESTORE",
                           "committed source offsets: %s; what was decided "
                           "above them is handled again%s",
                           rd_kafka_err2str(err),
                           a->conf->ordering == KRETRY_ORDER_KEY
                                   ? ", and tier copies are not held back "
                                     "for the source to catch up"
                                   : "");
        /* The watermarks of the partitions that need them, asked at once. */
        rd_kafka_topic_partition_list_t *q =
                rd_kafka_topic_partition_list_new(l->cnt);
        int *at     = calloc((size_t)l->cnt + 1, sizeof(*at));
        marks_t *wm = calloc((size_t)l->cnt + 1, sizeof(*wm));
        for (int i = 0; !err && at && i < l->cnt; i++) {
                at[i] = -1;
                if (!needs_marks(a, &l->elems[i]))
                        continue;
                rd_kafka_topic_partition_list_add(q, l->elems[i].topic,
                                                  l->elems[i].partition);
                at[i] = q->cnt - 1;
        }
        if (wm && at && q->cnt)
                watermarks_all(rk, q, wm, deadline);
        for (int i = 0; !err && i < l->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &l->elems[i];
                int tier           = kretry_topic_index(a, tp->topic);
                kretry_part_t *src = kretry_part_find(a, 0, tp->partition);
                int j              = at && wm ? at[i] : -1;
                int64_t lo         = j >= 0 ? wm[j].lo : 0;
                int64_t hi         = j >= 0 && !wm[j].err ? wm[j].hi : -1;
                if (!tier && a->conf->ordering == KRETRY_ORDER_KEY && src &&
                    !tp->err && (tp->offset >= 0 || resets_to_start(a)) &&
                    hi >= 0) {
                        /* Below the log start the consumer resumes at the
                         * log start: a message retention deleted never
                         * comes back. */
                        src->src_next = tp->offset > lo ? tp->offset : lo;
                        src->src_end  = hi;
                }
                load_decided(a, rk, tp, tier, hi, deadline);
        }
        free(wm);
        free(at);
        rd_kafka_topic_partition_list_destroy(q);
        if (!err)
                return l;
        rd_kafka_topic_partition_list_destroy(l);
        return NULL;
}

/* The park records of the keys parked in source partition @p p, then the
 * migration's mark (one producer, one partition: the mark is delivered
 * only after them), produced by @p pk; *@p keys counts them. Returns the
 * first error of a produce call (the local queue), or 0. */
static rd_kafka_resp_err_t
write_parks(kretry_adapter_t *a, rd_kafka_t *pk, int32_t p, size_t *keys) {
        kretry_part_t *src      = kretry_part_find(a, 0, p);
        size_t pos              = 0, len;
        rd_kafka_resp_err_t err = 0;
        const void *key;
        const kretry_chain_key_t *k;
        while (!err && src &&
               (k = kretry_keymap_next(&src->chains.map, &pos, &key, &len))) {
                char v[24];
                if (!k->parked)
                        continue;
                int vn =
                        snprintf(v, sizeof(v), "%lld", (long long)k->parked_at);
                if (migration_cut())
                        return RD_KAFKA_RESP_ERR__INTR;
                err = rd_kafka_producev(
                        pk, RD_KAFKA_V_TOPIC(a->parked_topic),
                        RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_KEY(key, len),
                        RD_KAFKA_V_VALUE(v, (size_t)vn),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                        RD_KAFKA_V_END);
                *keys += !err;
        }
        char mark[] = KRETRY_PARKED_MARK;
        if (!err && migration_cut())
                err = RD_KAFKA_RESP_ERR__INTR;
        if (!err)
                err = rd_kafka_producev(
                        pk, RD_KAFKA_V_TOPIC(a->parked_topic),
                        RD_KAFKA_V_PARTITION(p),
                        RD_KAFKA_V_KEY(KRETRY_PARKED_MIGRATED,
                                       strlen(KRETRY_PARKED_MIGRATED)),
                        RD_KAFKA_V_VALUE(mark, strlen(mark)),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                        RD_KAFKA_V_END);
        return err;
}

/* Migration (see the top): the DLQ partitions in @p dlq, read from their
 * beginning for the parks, then the parks written to the parked-keys topic
 * by a producer of its own (never in a transaction: a park record without
 * its commit only repeats what the DLQ said), flushed before @p deadline.
 * Nothing is marked unless every partition was read and written whole, so
 * that a cut migration is done again. Returns read_all's count. */
static int migrate_parks(kretry_adapter_t *a,
                         rd_kafka_t *rk,
                         rd_kafka_topic_partition_list_t *dlq,
                         const rd_kafka_topic_partition_list_t *known,
                         int64_t deadline) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_copy(dlq);
        int64_t t0 = kretry_mono_ms();
        int left   = l ? read_all(a, rk, l, known, deadline, NULL) : dlq->cnt;
        /* A replay the older kretry handled lifted a park it left no
         * trace of but on the source. */
        if (!left)
                left = read_all(a, rk, parked_sources(a, dlq), known, deadline,
                                NULL);
        static const char *drop[] = {"transactional.id"};
        char errstr[512];
        rd_kafka_conf_t *rc =
                left ? NULL
                     : rd_kafka_conf_dup_filter(a->conf->producer, 1, drop);
        rd_kafka_t *pk = NULL;
        if (rc) {
                rd_kafka_conf_set_opaque(rc, a);
                rd_kafka_conf_set_log_cb(rc, restorer_log);
                if (!(pk = rd_kafka_new(RD_KAFKA_PRODUCER, rc, errstr,
                                        sizeof(errstr))))
                        rd_kafka_conf_destroy(rc);
        }
        size_t keys             = 0;
        rd_kafka_resp_err_t err = pk ? 0 : RD_KAFKA_RESP_ERR__STATE;
        for (int i = 0; !err && i < dlq->cnt; i++)
                err = write_parks(a, pk, dlq->elems[i].partition, &keys);
        /* What was produced goes out even when a later record failed:
         * each park record is true; only the mark says they are all. */
        rd_kafka_resp_err_t ferr =
                pk ? rd_kafka_flush(pk, kretry_left_ms(deadline, -1)) : 0;
        if (!err)
                err = ferr;
        if (pk && !err && rd_kafka_outq_len(pk))
                err = RD_KAFKA_RESP_ERR__TIMED_OUT;
        if (pk)
                rd_kafka_destroy(pk);
        if (err)
                kretry_log(a, KRETRY_LOG_WARNING, "RESTORE",
                           "parked keys of %d partition(s) read from the DLQ "
                           "%s but not written to %s (%s): the next "
                           "assignment reads the DLQ again",
                           dlq->cnt, a->dlq, a->parked_topic,
                           left ? "the DLQ was not read to its end"
                                : rd_kafka_err2str(err));
        else
                kretry_log(a, KRETRY_LOG_INFO, "RESTORE",
                           "parked keys of %d partition(s) migrated from the "
                           "DLQ %s to %s, once: %zu key(s) parked, in %lld "
                           "ms; later restores read %s only",
                           dlq->cnt, a->dlq, a->parked_topic, keys,
                           (long long)(kretry_mono_ms() - t0), a->parked_topic);
        return left;
}

void kretry_restore_decided(kretry_adapter_t *a,
                            const rd_kafka_topic_partition_list_t *parts) {
        rd_kafka_topic_partition_list_t *known =
                source_resume(a, a->consumer, parts,
                              kretry_mono_ms() + a->conf->restore_timeout_ms);
        if (known)
                rd_kafka_topic_partition_list_destroy(known);
}

void kretry_restore(kretry_adapter_t *a,
                    const rd_kafka_topic_partition_list_t *parts) {
        rd_kafka_t *rk = restorer(a);
        if (!rk)
                return;
        int64_t t0       = kretry_mono_ms();
        int timeout      = a->conf->restore_timeout_ms;
        int64_t deadline = t0 + timeout;
        /* The decided offsets first: a tier copy among them is not in its
         * key's chain (apply_tier). */
        rd_kafka_topic_partition_list_t *known =
                source_resume(a, rk, parts, deadline);
        rd_kafka_topic_partition_list_t *migrate =
                a->parked_topic ? rd_kafka_topic_partition_list_new(parts->cnt)
                                : NULL;
        int left = read_all(a, rk, to_read(a, parts), known, deadline, migrate);
        if (migrate && migrate->cnt)
                left += migrate_parks(a, rk, migrate, known, deadline);
        if (migrate)
                rd_kafka_topic_partition_list_destroy(migrate);
        if (known)
                rd_kafka_topic_partition_list_destroy(known);
        if (left)
                kretry_log(a, KRETRY_LOG_ERR, "RESTORE",
                           "%d partition(s) not read to their end within "
                           "restore.timeout.ms (%d ms): key order, parked "
                           "keys and versions may be incomplete for them",
                           left, timeout);
        kretry_stats_gauges(a);
        kretry_log(a, KRETRY_LOG_INFO, "RESTORE",
                   "key state of %d source partition(s) rebuilt in %lld ms",
                   parts->cnt, (long long)(kretry_mono_ms() - t0));
}
