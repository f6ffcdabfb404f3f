/*
 * Service: the partition table (part.c): one object per assignment of a
 * consumed partition, found by topic index and partition number, the
 * storing of its committable offset, and its pause. Polling thread.
 */
#ifndef KRETRY_PART_H
#define KRETRY_PART_H

#include "keychain.h"
#include "offsets.h"
#include "owned.h"
#include "versions.h"

#include "kretry/kretry.h"

#include <librdkafka/rdkafka.h>

/* One assignment of a consumed partition: the source (tier 0) or a tier.
 * Everything that belongs to the assignment lives here and dies with it:
 * offsets, the held tier message and its buffer, the gates, the key chains
 * and the version store. Made on assignment (kretry_part_assign), retired on
 * revocation or loss (kretry_part_retire: `assigned` 0, out of the table),
 * freed when its last reference goes. References: the table's while
 * assigned, one per job (workers.c) and one per copy record (route.c). A
 * job or a late delivery report of a retired assignment finds it retired
 * and is discarded: nothing stale reaches a later assignment of the same
 * partition, by construction. Polling thread only. */
typedef struct kretry_part_s {
        int tier;
        int32_t partition;
        int assigned;
        int refs;
        /* Copy records of this assignment not yet acknowledged, and of
         * those the ones refused as too large (they cannot heal by waiting:
         * a revocation does not wait for them). */
        int copies, copies_stuck;
        kretry_offsets_t offsets;
        int64_t stored; /* last offset stored for commit, -1 none */
        /* Offsets above the committed one that the previous owner decided
         * (its commit's metadata, offsets.h; read by the restore): consumed
         * again, they are acknowledged unhandled (route.c admit). */
        kretry_decided_t decided;
        /* Source partitions under ordering=key: the next source offset not
         * yet consumed since the assignment (from the committed offset), or
         * -1 when unknown. A tier copy of a message at or past it waits: an
         * earlier message of its key may still be on the source (keyed.c,
         * wait_for_source). */
        int64_t src_next;
        /* ... and the source's end (high watermark) when src_next was set,
         * -1 unknown: a tier copy whose original offset lies past both
         * (and past the end librdkafka last fetched) was made from nothing
         * this partition held, and is never held back for it (keyed.c
         * source_behind). */
        int64_t src_end;
        int64_t emit_hi; /* high watermark at the last stats document, -1 */
        rd_kafka_message_t *held; /* tier message waiting for its due time,
                                     in kretry's memory (kretry_rkm_own) */
        int64_t held_due;
        /* Tier messages consumed behind the held one, in offset order, in
         * kretry's memory: the partition is paused only once they fill
         * tier.buffer.messages or .bytes, or all buffers fill
         * tier.buffer.total.bytes (behind_full; intake.c
         * behind_maybe_resume clears it), since a pause drops what
         * librdkafka prefetched and the fetch after the resume can wait
         * fetch.wait.max.ms. */
        kretry_rkm_fifo_t behind;
        int behind_full;
        /* Tier partitions under ordering=key: copies that wait for their
         * source partition to be consumed past them (keyed.c,
         * wait_for_source), in consume order, in kretry's memory; the
         * partition is paused while any waits (kretry_part_update_pause). */
        kretry_rkm_fifo_t src_wait;
        int produce_failures; /* copies from here waiting to be re-produced */
        int too_large_logged; /* a copy refused as too large was logged
                                 since the partition last had none failing */
        int beyond_logged;    /* a copy claiming an original offset beyond its
                                 source partition was logged (keyed.c) */
        int paused;           /* what we last asked librdkafka */
        struct kretry_part_s *next_held; /* list of parts with a held message */
        /* On the adapter's store_list, with a reference, while its stored
         * offset waits for the end of a batch (kretry_store_end). */
        int store_due;
        struct kretry_part_s *next_store;
        /* routing=transactional (txn.c): the first offset taken from
         * librdkafka in this assignment (-1 none), where a rewind goes back
         * to when the group has no committed offset; txn_dirty: an outcome
         * was decided since the last transaction committed its offsets. */
        int64_t first;
        int txn_dirty;
        /* routing=transactional: the offset sent with the open transaction
         * and the last one a committed transaction carried (-1 none yet in
         * this assignment), each with its decided-above metadata (malloc'd,
         * NULL when none): where a rewind goes when the group's committed
         * offset cannot be read (the cluster does not answer; txn.c
         * rewind_to). */
        int64_t txn_sent, txn_committed;
        void *txn_sent_md, *txn_md;
        size_t txn_sent_md_len, txn_md_len;
        /* routing=transactional: a copy of it was refused as too large, so
         * its transaction was aborted; paused until then (kretry_mono_ms)
         * instead of failing the next one at once. */
        int64_t blocked_until;
        kretry_gate_t gate; /* ordering=partition: its messages in flight
                               (workers.c) */
        /* A revocation dealt with this assignment's handler calls (waited
         * for them, gave up, or did not wait: lost): no later revocation of
         * the same partition waits for them (workers.c running_in). */
        int awaited;
        /* Source partitions only: per-key state shared with the tier
         * partitions of the same number (ordering key, versioning). */
        kretry_chains_t chains;
        kretry_versions_t versions;
} kretry_part_t;

/* The index of @p topic among the consumed topics (0 source, 1..T tiers),
 * -1 when it is none of them. */
int kretry_topic_index(const kretry_adapter_t *a, const char *topic);
/* A new assignment of partition @p p of topic @p tier, whose slot is empty;
 * NULL when memory is short. */
kretry_part_t *kretry_part_new(kretry_adapter_t *a, int tier, int32_t p);
/* The current assignment of @p p of topic @p tier, or NULL. */
kretry_part_t *kretry_part_find(kretry_adapter_t *a, int tier, int32_t p);
/* The current assignment of @p tp (an element of a partition list), or
 * NULL. */
kretry_part_t *kretry_part_of(kretry_adapter_t *a,
                              const rd_kafka_topic_partition_t *tp);
static inline kretry_part_t *kretry_part_ref(kretry_part_t *part) {
        part->refs++;
        return part;
}
void kretry_part_unref(kretry_part_t *part);
void kretry_part_store(kretry_adapter_t *a, kretry_part_t *part);
/* Defer offset stores until kretry_store_end (returns the state to give
 * it: deferrals nest, the outermost one stores). */
int kretry_store_begin(kretry_adapter_t *a);
void kretry_store_end(kretry_adapter_t *a, int was);
/* Store every deferred offset now, whatever deferral is open: before a
 * commit. */
void kretry_store_flush(kretry_adapter_t *a);

/* Every assigned partition (source and tiers) but those of @p except
 * (NULL: none); the caller destroys it. */
rd_kafka_topic_partition_list_t *
kretry_assigned_list(kretry_adapter_t *a,
                     const rd_kafka_topic_partition_list_t *except);
/* Messages @p part may keep behind a held one (tier.buffer.*): tier
 * partitions only; a source message is held only while memory runs out. */
int kretry_part_behind_cap(const kretry_adapter_t *a,
                           const kretry_part_t *part);
/* Pause or resume @p part as its state asks (held, buffers full, copies
 * waiting for their source or to be produced again, the breaker, a
 * transaction's block). */
void kretry_part_update_pause(kretry_adapter_t *a, kretry_part_t *part);
/* kretry_part_update_pause for every partition: after the breaker or the
 * in-flight bound changed what every partition should be. */
void kretry_update_pause_all(kretry_adapter_t *a);

#endif
