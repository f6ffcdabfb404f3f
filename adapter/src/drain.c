/*
 * Phase: a handover's last step. On revocation and close, the partitions'
 * copies are awaited and the commit is synchronous and bounded, with the
 * offsets decided above each commit's offset as its metadata (offsets.h),
 * so that the next owner handles none of them again. Under
 * routing=transactional the open transaction is committed instead (txn.c).
 *
 * Polling thread only (adapter_int.h).
 */
#include "drain.h"
#include "adapter_int.h"
#include "clock.h"
#include "commit.h"
#include "log.h"
#include "part.h"
#include "route.h"
#include "txn.h"

#include <stdio.h>
#include <string.h>

/* Copies of the partitions of @p l not yet acknowledged, but those
 * refused as too large (waiting cannot make them fit), and the park
 * tombstones of every partition (few, and not counted per partition). */
static int copies_of(kretry_adapter_t *a,
                     const rd_kafka_topic_partition_list_t *l) {
        int n = l->cnt ? a->unparks : 0;
        for (int i = 0; i < l->cnt; i++) {
                const kretry_part_t *part = kretry_part_of(a, &l->elems[i]);
                if (part)
                        n += part->copies - part->copies_stuck;
        }
        return n;
}

/* Wait (bounded) until every copy of the partitions of @p l is
 * acknowledged (or refused as too large); 0, or the copies left. Copies of
 * other partitions are not waited for. */
static int drain_producer(kretry_adapter_t *a,
                          const rd_kafka_topic_partition_list_t *l,
                          int64_t deadline) {
        for (;;) {
                int64_t wait = kretry_retry_failed(a, kretry_mono_ms());
                int n        = copies_of(a, l);
                if (!n)
                        return 0;
                if (a->producer_fatal)
                        return n; /* they can never be acknowledged now */
                int left = kretry_left_ms(deadline, 100);
                if (!left) {
                        /* Acknowledgements that arrived within the bound
                         * count: a revocation that spent it waiting for a
                         * handler call served none of them meanwhile. */
                        rd_kafka_poll(a->producer, 0);
                        return copies_of(a, l);
                }
                if (wait < 0 || wait > left)
                        wait = left;
                rd_kafka_poll(a->producer, (int)wait);
        }
}

/* How long the synchronous commit on revoke and close may take beyond
 * revoke.timeout.ms. */
#define KRETRY_COMMIT_GRACE_MS 3000

/* "topic[p]@offset ..." of every assigned partition with a stored offset. */
static void stored_offsets(kretry_adapter_t *a, char *buf, size_t size) {
        size_t len = 0;
        buf[0]     = '\0';
        for (int t = 0; t < a->topic_cnt; t++)
                for (int p = 0; p < a->part_cap[t] && len < size; p++) {
                        kretry_part_t *part = a->parts[t][p];
                        if (part && part->assigned && part->stored >= 0)
                                len += (size_t)snprintf(
                                        buf + len, size - len, "%s%s[%d]@%lld",
                                        len ? " " : "", a->topics[t], p,
                                        (long long)part->stored);
                }
}

/* The partitions of @p l with offsets decided above the one they commit
 * at (ordering=key: other keys overtook a message waiting behind its own),
 * with those offsets as metadata (offsets.h); NULL when none has any. Not
 * for a partition whose copy was refused as too large: its commit carries
 * the mark kretry stats reads (route.c). */
static rd_kafka_topic_partition_list_t *
decided_offsets(kretry_adapter_t *a, const rd_kafka_topic_partition_list_t *l) {
        rd_kafka_topic_partition_list_t *out = NULL;
        for (int i = 0; i < l->cnt; i++) {
                const kretry_part_t *part = kretry_part_of(a, &l->elems[i]);
                if (part && !part->copies_stuck)
                        kretry_commit_add(a, &out, part, 1);
        }
        return out;
}

/* Commit the decided offsets above the committed ones (decided_offsets)
 * after the stored offsets were: the later commit is the one that stays. */
static void commit_decided(kretry_adapter_t *a,
                           const rd_kafka_topic_partition_list_t *l,
                           int64_t deadline) {
        rd_kafka_topic_partition_list_t *d = decided_offsets(a, l);
        if (!d)
                return;
        rd_kafka_resp_err_t err = kretry_commit_sync(a, d, deadline);
        if (!err) {
                /* The stored offsets go no more: a periodic commit of a
                 * partition still assigned would send them without the
                 * metadata and replace this one. */
                rd_kafka_topic_partition_list_t *none =
                        rd_kafka_topic_partition_list_copy(d);
                for (int i = 0; i < none->cnt; i++)
                        none->elems[i].offset = RD_KAFKA_OFFSET_INVALID;
                rd_kafka_offsets_store(a->consumer, none);
                rd_kafka_topic_partition_list_destroy(none);
        }
        for (int i = 0; i < d->cnt; i++)
                kretry_log(a, err ? KRETRY_LOG_WARNING : KRETRY_LOG_INFO,
                           "COMMIT",
                           "%s [%d] at %lld with the offsets decided above "
                           "it (%.*s)%s%s",
                           d->elems[i].topic, (int)d->elems[i].partition,
                           (long long)d->elems[i].offset,
                           (int)d->elems[i].metadata_size > 200
                                   ? 200
                                   : (int)d->elems[i].metadata_size,
                           d->elems[i].metadata
                                   ? (const char *)d->elems[i].metadata
                                   : "",
                           err ? ": not committed (handled again by the "
                                 "next owner): "
                               : "",
                           err ? rd_kafka_err2str(err) : "");
        rd_kafka_topic_partition_list_destroy(d);
}

void kretry_drain_and_commit(kretry_adapter_t *a,
                             const rd_kafka_topic_partition_list_t *l,
                             int64_t deadline) {
        if (a->txn.on) {
                /* Every copy, of every partition, and the offsets they
                 * decide: one transaction (txn.c); aborted, the others
                 * than l's are rewound, l's consumed again by the next
                 * owner. */
                kretry_txn_commit_now(a, l, deadline + KRETRY_COMMIT_GRACE_MS);
                return;
        }
        int n = drain_producer(a, l, deadline);
        kretry_store_flush(a); /* the commit takes what was stored */
        if (n) {
                /* In flight in the producer, or failed and waiting for
                 * their next attempt. */
                kretry_log(a, KRETRY_LOG_WARNING, "REVOKE",
                           "%d copies still unacknowledged after %d ms; their "
                           "offsets stay uncommitted",
                           n, a->conf->revoke_timeout_ms);
        }
        if (rd_kafka_assignment_lost(a->consumer))
                return; /* committing would overwrite the new owner's work */
        /* A close waits for no one once its copies are done: a commit
         * that takes longer than the grace waits for a coordinator that
         * does not answer (the cluster went away with the SIGTERM). */
        int64_t now = kretry_mono_ms();
        if (a->closed && now < deadline)
                deadline = now;
        /* After the periodic commit in flight (kretry_commit_sync):
         * answered after this one, it would take the committed offsets
         * back. */
        rd_kafka_resp_err_t err =
                kretry_commit_sync(a, NULL, deadline + KRETRY_COMMIT_GRACE_MS);
        if (!err || err == RD_KAFKA_RESP_ERR__NO_OFFSET)
                commit_decided(a, l, deadline + KRETRY_COMMIT_GRACE_MS);
        if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
                char stored[512];
                stored_offsets(a, stored, sizeof(stored));
                kretry_log(a, KRETRY_LOG_WARNING, "COMMIT",
                           "commit: %s; not committed (consumed again by the "
                           "next owner): %s",
                           rd_kafka_err2str(err), stored);
        }
}
