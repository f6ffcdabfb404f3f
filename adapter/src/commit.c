/*
 * Service: commit building. Where each partition's outcomes stand, sent to
 * the group.
 *
 * At least once, the stored offsets (the lowest undecided offset of each
 * partition, kretry_part_store) are committed every
 * auto.commit.interval.ms while something new is stored, one commit at a
 * time: librdkafka retries a commit that timed out, and with two in flight
 * the retried older one could land last and take the committed offset
 * back (librdkafka's own auto-commit sends one per interval whatever is
 * in flight, so kretry does not use it). librdkafka commits a stored
 * offset once: offsets decided above a partition's lowest undecided one
 * since the last periodic commit make the next one a list of kretry's own
 * (commit_explicit). Revocation and close commit
 * synchronously (drain.c), each commit with the offsets decided above its
 * offset as its metadata (kretry_commit_add, offsets.h). Under
 * routing=transactional every commit is the transaction's (txn.c).
 *
 * Polling thread only (adapter_int.h).
 */
#include "commit.h"
#include "adapter_int.h"
#include "clock.h"
#include "denied.h"
#include "log.h"
#include "offsets.h"
#include "part.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kretry_commit_result(kretry_adapter_t *a,
                          rd_kafka_resp_err_t err,
                          const rd_kafka_topic_partition_list_t *offsets) {
        rd_kafka_resp_err_t denied = kretry_denied_err(err) ? err : 0;
        for (int i = 0; offsets && !denied && i < offsets->cnt; i++)
                if (kretry_denied_err(offsets->elems[i].err))
                        denied = offsets->elems[i].err;
        if (denied) {
                atomic_store_explicit(&a->stats.commit_denied, 1,
                                      memory_order_relaxed);
                kretry_denied_note(a, KRETRY_DENIED_COMMIT, denied,
                                   "offset commit");
        } else if (!err) {
                atomic_store_explicit(&a->stats.commit_denied, 0,
                                      memory_order_relaxed);
        }
}

/* The answer @p ev to a commit in flight. */
static void commit_answered(kretry_adapter_t *a, rd_kafka_event_t *ev) {
        if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_OFFSET_COMMIT) {
                rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
                kretry_commit_result(a, err,
                                     rd_kafka_event_topic_partition_list(ev));
                a->commit_inflight--;
                void *opaque = rd_kafka_event_opaque(ev);
                if (opaque == a) { /* kretry_commit_sync's */
                        a->commit_sync_done = 1;
                        a->commit_sync_err  = err;
                }
                /* Refused (a rebalance, the coordinator moving): the next
                 * period sends the stored offsets again, and kretry's own
                 * list (commit_explicit) when it was one of them. */
                int again = err && err != RD_KAFKA_RESP_ERR__NO_OFFSET &&
                            err != RD_KAFKA_RESP_ERR__ASSIGNMENT_LOST;
                if (again && opaque == &a->decided_dirty)
                        a->decided_dirty = 1;
                if (again)
                        a->commit_dirty = 1;
        }
        rd_kafka_event_destroy(ev);
}

/* Serves the commits' answers on kq until none is in flight (or, with
 * @p sync, kretry_commit_sync's is answered), or until @p deadline. */
static void commit_serve(kretry_adapter_t *a, int64_t deadline, int sync) {
        int left;
        while ((sync ? !a->commit_sync_done : a->commit_inflight > 0) &&
               (left = kretry_left_ms(deadline, 100)) > 0) {
                rd_kafka_event_t *ev = rd_kafka_queue_poll(a->kq, left);
                if (ev)
                        commit_answered(a, ev);
        }
}

void kretry_commit_settle(kretry_adapter_t *a, int64_t deadline) {
        commit_serve(a, deadline, 0);
}

/* The periodic commit as a list of kretry's own, when offsets were decided
 * above a partition's lowest undecided one since the last periodic commit
 * (decided_dirty): librdkafka's commit of the stored offsets leaves out
 * one it committed already, so while a partition's lowest undecided
 * message waits (its copy not yet acknowledged, a long handler call) the
 * outcomes decided above it would reach no commit, and a SIGKILL would
 * repeat them all. Every partition of the assignment at its committable
 * offset, with the offsets decided above it as metadata (one whose copy
 * was refused as too large at its stored offset alone, as part.c stores
 * it). 1 when a commit was sent. */
static int commit_explicit(kretry_adapter_t *a) {
        rd_kafka_topic_partition_list_t *l = NULL;
        int oom                            = 0;
        a->decided_dirty                   = 0;
        if (rd_kafka_assignment_lost(a->consumer))
                return 0;
        for (int t = 0; t < a->topic_cnt; t++)
                for (int p = 0; p < a->part_cap[t]; p++) {
                        kretry_part_t *part = a->parts[t][p];
                        if (!part || !part->assigned)
                                continue;
                        if (!part->copies_stuck) {
                                oom |= kretry_commit_add(a, &l, part, 0) < 0;
                                continue;
                        }
                        if (part->stored < 0 ||
                            (!l && !(l = rd_kafka_topic_partition_list_new(8))))
                                continue;
                        rd_kafka_topic_partition_list_add(l, a->topics[t], p)
                                ->offset = part->stored;
                }
        if (!l)
                return 0;
        int sent = !rd_kafka_commit_queue(a->consumer, l, a->kq, NULL,
                                          &a->decided_dirty);
        if (sent) {
                a->commit_inflight++;
                /* Every stored offset went with it; memory short, the
                 * stored ones go with librdkafka's commit next. */
                a->commit_dirty = oom;
        } else { /* refused at once: the next period again */
                a->decided_dirty = 1;
        }
        rd_kafka_topic_partition_list_destroy(l);
        return sent;
}

void kretry_commit_periodic(kretry_adapter_t *a, int64_t mono) {
        rd_kafka_event_t *ev;
        while (a->commit_inflight && (ev = rd_kafka_queue_poll(a->kq, 0)))
                commit_answered(a, ev);
        /* Not while a park tombstone is unacknowledged: the replay that
         * lifted the park may be among the stored offsets. */
        if (a->txn.on || a->commit_inflight ||
            !(a->commit_dirty || a->decided_dirty) || mono < a->commit_at ||
            a->unparks || a->close_leaving)
                return;
        a->commit_at = mono + a->commit_interval_ms;
        if (a->decided_dirty && !a->store_defer && commit_explicit(a))
                return;
        if (!a->commit_dirty)
                return;
        a->commit_dirty = 0;
        /* NULL: the stored offsets of the assignment, with their metadata;
         * librdkafka refuses it for a lost assignment. */
        if (rd_kafka_commit_queue(a->consumer, NULL, a->kq, NULL, NULL))
                a->commit_dirty = 1;
        else
                a->commit_inflight++;
}

/* Send @p offsets on kq after the commit in flight (waited for until
 * @p deadline), counted in flight; @p opaque tells its answer apart. Sent
 * even when the one before is still unanswered at the deadline: the
 * latest offsets go out all the same. */
static rd_kafka_resp_err_t
commit_send(kretry_adapter_t *a,
            const rd_kafka_topic_partition_list_t *offsets,
            int64_t deadline,
            void *opaque) {
        /* Once a close asked to leave the group, a commit could reach the
         * group after it decided to terminate: librdkafka aborts then
         * (adapter.c close_consumer). The close committed before. */
        if (a->close_leaving)
                return RD_KAFKA_RESP_ERR__STATE;
        kretry_commit_settle(a, deadline);
        if (a->unparks)
                return RD_KAFKA_RESP_ERR__STATE; /* see kretry_commit_sync */
        rd_kafka_resp_err_t err = rd_kafka_commit_queue(a->consumer, offsets,
                                                        a->kq, NULL, opaque);
        if (!err)
                a->commit_inflight++;
        return err;
}

rd_kafka_resp_err_t
kretry_commit_send(kretry_adapter_t *a,
                   const rd_kafka_topic_partition_list_t *offsets,
                   int64_t deadline) {
        return commit_send(a, offsets, deadline, NULL);
}

rd_kafka_resp_err_t
kretry_commit_sync(kretry_adapter_t *a,
                   const rd_kafka_topic_partition_list_t *offsets,
                   int64_t deadline) {
        /* The park tombstones first (kretry_commit_periodic); commit_send
         * refuses while one is unacknowledged. */
        int wait;
        while (a->unparks && (wait = kretry_left_ms(deadline, 10)) > 0)
                rd_kafka_poll(a->producer, wait);
        rd_kafka_resp_err_t err = commit_send(a, offsets, deadline, a);
        if (err)
                return err;
        a->commit_sync_done = 0;
        commit_serve(a, deadline, 1);
        /* Unanswered, it stays in flight: the next commit waits for it. */
        return a->commit_sync_done ? a->commit_sync_err
                                   : RD_KAFKA_RESP_ERR__TIMED_OUT;
}

int64_t kretry_commit_next(const kretry_adapter_t *a) {
        /* The answer to the one in flight wakes the loop (kq's event). */
        if (a->txn.on || !(a->commit_dirty || a->decided_dirty) ||
            a->commit_inflight)
                return -1;
        return a->commit_at;
}

int kretry_commit_add(kretry_adapter_t *a,
                      rd_kafka_topic_partition_list_t **l,
                      const kretry_part_t *part,
                      int decided_only) {
        char md[KRETRY_DECIDED_MAX];
        int64_t base;
        size_t len = kretry_offsets_decided(&part->offsets, &part->decided,
                                            &base, md, sizeof(md));
        if (base < 0 || (decided_only && !len))
                return 0;
        if (!*l && !(*l = rd_kafka_topic_partition_list_new(8)))
                return -1;
        rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(
                *l, a->topics[part->tier], part->partition);
        tp->offset = base;
        if (!len)
                return 1;
        /* Freed with the list; without it, the offset alone. */
        if ((kretry_test_alloc_fails && kretry_test_alloc_fails("metadata")) ||
            !(tp->metadata = malloc(len)))
                return -1;
        memcpy(tp->metadata, md, len);
        tp->metadata_size = len;
        return 1;
}
