/*
 * Phase: ordering by key and stale versions, around the handler.
 *
 * Ordering by key and version discarding, around the handler (DESIGN §5).
 * Both keep their state per source partition (kretry_part_t of tier 0),
 * shared with the tier partitions of the same number, which follow it on
 * every assignment. Null keys are unordered and unversioned.
 *
 * Ordering: a message of key K is handled only when it is the lowest
 * original offset of K still in the retry chain; a later one is parked —
 * copied behind the head into the tier where the head waits, due when the
 * head is — and comes back to be decided again. Versioning: a message whose
 * version is not above the highest handled OK for its key is skipped; a
 * higher version is written to the changelog before the offset of the
 * message that raised it is committed.
 */
#include "keyed.h"
#include "adapter_int.h"
#include "clock.h"
#include "codec.h"
#include "conf.h"
#include "delay.h"
#include "headers.h"
#include "job.h"
#include "keychain.h"
#include "log.h"
#include "msg.h"
#include "owned.h"
#include "part.h"
#include "route.h"
#include "versions.h"

#include <string.h>

static kretry_part_t *source_part(kretry_adapter_t *a, const kretry_part_t *p) {
        return kretry_part_find(a, 0, p->partition);
}

static int has_header(kretry_msg_t *m, const char *name) {
        const void *v;
        size_t n;
        rd_kafka_headers_t *h = kretry_msg_hdrs(m);
        return h && !rd_kafka_header_get_last(h, name, &v, &n);
}

static void park(kretry_adapter_t *a,
                 kretry_part_t *part,
                 kretry_part_t *src,
                 const kretry_pending_t *head) {
        const kretry_msg_t *m = a->msg;
        int64_t now           = kretry_now_ms();
        /* Due with the head, so it is consumed right behind it; a head whose
         * due time passed (or is unknown) gives the tier's own delay. */
        int64_t due = head->due_ts > now
                              ? head->due_ts
                              : kretry_add_sat(
                                        now, a->conf->tiers_ms[head->tier - 1]);
        kretry_chains_add(&src->chains, m->rkm->key, m->rkm->key_len,
                          m->orig_offset, head->tier, due);
        kretry_copy_t cp = {.dest      = head->tier,
                            .cls       = "parked",
                            .due_ts    = due,
                            .route     = KRETRY_ROUTE_PARKED,
                            .parked    = 1,
                            .followers = -1};
        kretry_route_copy(a, part, &cp);
}

static void dead_letter_after_key(kretry_adapter_t *a,
                                  kretry_part_t *part,
                                  kretry_part_t *src) {
        kretry_msg_t *m = a->msg;
        kretry_chains_remove(&src->chains, m->rkm->key, m->rkm->key_len,
                             m->orig_offset);
        kretry_msg_error_put(m, "KEY_PARKED",
                             "an earlier message of this key was "
                             "dead-lettered (ordering.on.dead.letter "
                             "park_key); replay the key to resume it");
        kretry_copy_t cp = {.dest      = 0,
                            .cls       = "parked",
                            .route     = KRETRY_ROUTE_DLQ,
                            .parked    = 1,
                            .followers = -1};
        kretry_route_copy(a, part, &cp);
}

/* A source message whose copy already waits in a tier was consumed again
 * after a restart or handover: its outcome was durable (the copy), so the
 * copy carries it on and this one is acknowledged without handling — else it
 * would be handled now and its copy again later, out of order. Likewise a
 * tier copy the restore found superseded by a newer copy of the same
 * message (a crash between producing the newer copy and committing). */
static int
already_chained(kretry_adapter_t *a, kretry_part_t *part, kretry_part_t *src) {
        kretry_msg_t *m = a->msg;
        if (part->tier == 0
                    ? !kretry_chains_has(&src->chains, m->rkm->key,
                                         m->rkm->key_len, m->orig_offset)
                    : !kretry_chains_superseded(&src->chains, part->tier,
                                                m->rkm->offset))
                return 0;
        atomic_fetch_add_explicit(&a->stats.duplicates, 1,
                                  memory_order_relaxed);
        kretry_route_cb(a, part, m->rkm, KRETRY_ROUTE_DUPLICATE, 0, NULL,
                        m->attempt);
        kretry_complete(a, part, m->rkm->offset);
        kretry_rkm_destroy(m->rkm);
        return 1;
}

/* A copy written by kretry dlq replay, as it arrives: on the source any
 * message with kretry-replay-count; on a tier (dlq replay --to tier:N) one
 * without kretry-error-class, which the replay drops — kretry's own later
 * copies of a replayed message carry the count and a class, and lift
 * nothing. */
static int replayed_arrival(kretry_msg_t *m) {
        return has_header(m, KRETRY_H_REPLAY_COUNT) &&
               (m->tier == 0 || !has_header(m, KRETRY_H_ERROR_CLASS));
}

/* The source offset below which the original offset of every copy that
 * can be held back lies: a copy waiting in a tier at assignment was made
 * from a message the source partition held then, below its end at
 * assignment (src_end); one made since by this instance, from a message
 * consumed since, below src_next; one made since by another writer, from
 * a message the source holds, below the end librdkafka last fetched. */
static int64_t source_bound(kretry_adapter_t *a, const kretry_part_t *src) {
        int64_t lo, hi;
        int64_t end =
                src->src_end > src->src_next ? src->src_end : src->src_next;
        if (!rd_kafka_get_watermark_offsets(a->consumer, a->topics[0],
                                            src->partition, &lo, &hi) &&
            hi > end)
                end = hi;
        return end;
}

/* A copy whose original offset lies beyond anything its source partition
 * held (a source topic recreated, another writer's copy): waiting for the
 * source to be consumed past it would stall its tier partition for good. */
static void beyond_source(kretry_adapter_t *a,
                          kretry_part_t *part,
                          const kretry_part_t *src,
                          const kretry_chain_t *c,
                          const rd_kafka_message_t *rkm,
                          int64_t end) {
        if (part->beyond_logged)
                return;
        part->beyond_logged = 1;
        kretry_log(a, KRETRY_LOG_WARNING, "ORDER",
                   "%s [%d]: the copy at offset %lld claims original offset "
                   "%lld of %s [%d], beyond anything that partition held "
                   "(its end %lld, consumed to %lld): handled without "
                   "waiting for the source to reach it (said once per "
                   "partition)",
                   a->topics[part->tier], (int)part->partition,
                   (long long)rkm->offset, (long long)c->orig_offset,
                   a->topics[0], (int)src->partition, (long long)end,
                   (long long)src->src_next);
}

/* A tier copy of a source message the consumer has not yet passed since
 * the assignment: after a crash, an earlier message of its key may still
 * be on the source, uncommitted — a head whose own copy was never made
 * while a parked follower's was. The restore cannot see it in the tiers;
 * the source, read again from the committed offset, brings it back into the
 * chain first. So the copy waits until the source has been consumed past
 * its original offset and no earlier source message of its key still waits
 * in the key's gate behind it (consumed in the same batch, not yet
 * decided). Copies whose original coordinates are not this source
 * partition's are never held back, nor those whose original offset lies
 * beyond the source partition (source_bound). @p c: the copy's chain
 * headers. */
static int source_behind(kretry_adapter_t *a,
                         kretry_part_t *part,
                         kretry_part_t *src,
                         const kretry_chain_t *c,
                         const rd_kafka_message_t *rkm) {
        if (part->tier == 0 || src->src_next < 0 || !c->orig_offset_ok ||
            !c->orig_partition_ok || c->orig_partition != src->partition ||
            !c->orig_topic_ok || strcmp(c->orig_topic, a->topics[0]))
                return 0;
        if (c->orig_offset >= src->src_next) {
                int64_t end = source_bound(a, src);
                if (c->orig_offset < end)
                        return 1;
                beyond_source(a, part, src, c, rkm, end);
                return 0;
        }
        /* Consumed past it is not enough: a source message of the key
         * consumed meanwhile may still wait in the key's gate, behind this
         * copy, and must reach the chain first. */
        if (!a->workers || !rkm->key)
                return 0;
        return kretry_gate_source_waits(
                kretry_chains_gate_find(&src->chains, rkm->key, rkm->key_len),
                src, c->orig_offset);
}

/* The copy waits aside, in its partition's list of copies waiting for the
 * source (intake.c), not in the partition's hold slot: a later message of
 * the partition may hold that slot until its own due time (held while this
 * copy waited for its turn, or released from behind it when it looked
 * before), and the copy must not go to the handler meanwhile. */
static int
wait_for_source(kretry_adapter_t *a, kretry_part_t *part, kretry_part_t *src) {
        kretry_msg_t *m = a->msg;
        if (!source_behind(a, part, src, &m->chain, m->rkm))
                return 0;
        return kretry_wait_source(a, part, m->rkm) ? -1 : 1;
}

int kretry_keyed_source_behind(kretry_adapter_t *a,
                               kretry_part_t *part,
                               const rd_kafka_message_t *rkm) {
        kretry_part_t *src = source_part(a, part);
        rd_kafka_headers_t *h;
        kretry_chain_t c;
        if (!rkm->key || !src || kretry_rkm_headers(rkm, &h))
                return 0;
        kretry_chain_decode(h, &c);
        return source_behind(a, part, src, &c, rkm);
}

static int
ordered_before(kretry_adapter_t *a, kretry_part_t *part, kretry_part_t *src) {
        kretry_msg_t *m = a->msg;
        const void *key = m->rkm->key;
        size_t len      = m->rkm->key_len;
        if (already_chained(a, part, src))
                return 1;
        int rc = wait_for_source(a, part, src);
        if (rc)
                return rc; /* set aside, or -1: no memory to */
        /* A replayed message of a parked key lifts the park, wherever it
         * arrives. */
        if (a->conf->park_key && replayed_arrival(m) &&
            kretry_chains_is_parked(&src->chains, key, len)) {
                kretry_chains_park(&src->chains, key, len, 0);
                kretry_route_unpark(a, src->partition, key, len);
        }
        kretry_pending_t head;
        switch (kretry_chains_decide(&src->chains, key, len, m->orig_offset,
                                     &head)) {
        case KRETRY_CHAIN_PARK:
                park(a, part, src, &head);
                return 1;
        case KRETRY_CHAIN_DEAD:
                dead_letter_after_key(a, part, src);
                return 1;
        case KRETRY_CHAIN_HANDLE:
                break;
        }
        return 0;
}

static int stale(kretry_adapter_t *a, kretry_part_t *part, kretry_part_t *src) {
        kretry_msg_t *m = a->msg;
        const void *v;
        size_t n;
        if (*a->conf->version_field) {
                /* The version is a field of the record: decode first (an
                 * undecodable value is dead-lettered right here). */
                if (!kretry_decode_value(a, part))
                        return 1;
                m->has_version = !kretry_codec_field_int64(
                        m->value_avro, a->conf->version_field, &m->version);
        } else {
                rd_kafka_headers_t *h = kretry_msg_hdrs(m);
                m->has_version        = h &&
                                 !rd_kafka_header_get_last(
                                         h, a->conf->version_header, &v, &n) &&
                                 !kretry_version_parse(v, n, &m->version);
        }
        if (!m->has_version ||
            !kretry_versions_stale(&src->versions, m->rkm->key, m->rkm->key_len,
                                   m->version, a->conf->discard_equal))
                return 0;
        atomic_fetch_add_explicit(&a->stats.stale, 1, memory_order_relaxed);
        if (a->conf->ordering == KRETRY_ORDER_KEY)
                kretry_chains_remove(&src->chains, m->rkm->key, m->rkm->key_len,
                                     m->orig_offset);
        kretry_route_cb(a, part, m->rkm, KRETRY_ROUTE_STALE, 0, NULL,
                        m->attempt);
        kretry_complete(a, part, m->rkm->offset);
        kretry_rkm_destroy(m->rkm);
        return 1;
}

/* Whether per-key state is kept at all (ordering=key or versioning): when
 * not, a message's key needs no look-up before or after its call. */
static int keyed(const kretry_adapter_t *a) {
        return a->conf->ordering == KRETRY_ORDER_KEY || a->versions_topic;
}

int kretry_keyed_before(kretry_adapter_t *a, kretry_part_t *part) {
        kretry_msg_t *m = a->msg;
        m->has_version  = 0;
        if (!keyed(a))
                return 0;
        kretry_part_t *src = source_part(a, part);
        if (!m->rkm->key || !src)
                return 0;
        /* Its chain's room first: whether it is parked now or retried
         * later, the key's chain must take it (an outcome is never decided
         * without its place in the order). */
        if (a->conf->ordering == KRETRY_ORDER_KEY &&
            kretry_chains_reserve(&src->chains, m->rkm->key, m->rkm->key_len))
                return -1;
        int rc = a->conf->ordering == KRETRY_ORDER_KEY
                         ? ordered_before(a, part, src)
                         : 0;
        if (rc)
                return rc;
        return a->versions_topic && stale(a, part, src);
}

int kretry_keyed_ok(kretry_adapter_t *a, kretry_part_t *part) {
        kretry_msg_t *m = a->msg;
        if (!keyed(a))
                return 0;
        kretry_part_t *src = source_part(a, part);
        if (!m->rkm->key || !src)
                return 0;
        if (a->conf->ordering == KRETRY_ORDER_KEY)
                kretry_chains_remove(&src->chains, m->rkm->key, m->rkm->key_len,
                                     m->orig_offset);
        if (!m->has_version ||
            kretry_versions_raise(&src->versions, m->rkm->key, m->rkm->key_len,
                                  m->version) != 1)
                return 0;
        kretry_copy_t cp = {.dest      = KRETRY_DEST_VERSIONS,
                            .route     = KRETRY_ROUTE_OK,
                            .followers = -1,
                            .version   = m->version};
        kretry_route_copy(a, part, &cp);
        return 1;
}

int64_t kretry_keyed_failed(kretry_adapter_t *a,
                            kretry_part_t *part,
                            int dest,
                            int64_t due_ts) {
        kretry_msg_t *m    = a->msg;
        kretry_part_t *src = source_part(a, part);
        if (a->conf->ordering != KRETRY_ORDER_KEY || !m->rkm->key || !src)
                return -1;
        const void *key = m->rkm->key;
        size_t len      = m->rkm->key_len;
        /* A superseded copy dead-lettered as malformed before it could be
         * acknowledged as a duplicate: the newer copy keeps the message's
         * place in the chain. */
        if (part->tier > 0 &&
            kretry_chains_superseded(&src->chains, part->tier, m->rkm->offset))
                return -1;
        if (dest > 0) {
                kretry_chains_add(&src->chains, key, len, m->orig_offset, dest,
                                  due_ts);
                return -1;
        }
        /* Dead-lettered before its turn (a malformed parked copy): the key
         * is not parked for it, its head is still pending. */
        int64_t followers = -1;
        if (a->conf->park_key &&
            !kretry_chains_before(&src->chains, key, len, m->orig_offset))
                followers =
                        (int64_t)kretry_chains_park(&src->chains, key, len, 1);
        kretry_chains_remove(&src->chains, key, len, m->orig_offset);
        return followers;
}

/* The copy waits beside the partition's hold slot, which a later message
 * may hold until its own due time. The partition is paused while any copy
 * waits, so that the list holds no more than was consumed from it already;
 * the rest is fetched once the source caught up. */
int kretry_wait_source(kretry_adapter_t *a,
                       kretry_part_t *part,
                       rd_kafka_message_t *rkm) {
        if (kretry_rkm_fifo_push(&part->src_wait, &rkm))
                return -1; /* no memory for the copy: still the caller's */
        atomic_fetch_add_explicit(&a->stats.held, 1, memory_order_relaxed);
        if (!a->src_wait_at)
                a->src_wait_at = kretry_mono_ms() + KRETRY_SOURCE_WAIT_MS;
        kretry_part_update_pause(a, part);
        return 0;
}
