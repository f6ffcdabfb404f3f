/*
 * Phase: the open transaction (routing=transactional, txn.c): begun before
 * its first copy, each outcome decided in it noted, a copy that failed
 * marking it for the abort. What route.c calls while it decides; the
 * commit, the abort and the rewind are txn.c's, driven by the loop.
 *
 * Polling thread only (adapter_int.h).
 */
#include "txn_open.h"
#include "adapter_int.h"
#include "clock.h"
#include "denied.h"
#include "log.h"
#include "route.h"
#include "stats.h"

#include <stdio.h>

int (*kretry_test_txn_begin_fails)(void);

int kretry_txn_error(kretry_adapter_t *a,
                     const char *call,
                     rd_kafka_error_t *e) {
        int rc = rd_kafka_error_is_fatal(e)             ? -1
                 : rd_kafka_error_txn_requires_abort(e) ? 1
                 : rd_kafka_error_is_retriable(e)       ? 0
                                                        : 1;
        /* A slice's end (call_ms) is no news: the call is made again. */
        int slice =
                !rc && rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR__TIMED_OUT;
        kretry_log(a,
                   rc < 0  ? KRETRY_LOG_ERR
                   : slice ? KRETRY_LOG_DEBUG
                           : KRETRY_LOG_WARNING,
                   "TXN", "%s: %s%s", call, rd_kafka_error_string(e),
                   rc < 0   ? "; stopping: no copy can be committed any more"
                   : rc > 0 ? "; aborting the transaction: its messages are "
                              "decided again"
                            : "; trying again");
        rd_kafka_error_destroy(e);
        if (rc < 0) {
                a->producer_fatal = 1;
                a->fatal          = 1;
        }
        return rc;
}

int kretry_txn_begin(kretry_adapter_t *a) {
        if (!a->txn.on || a->txn.open)
                return 0;
        if (a->txn.abort || a->txn.aborting || a->producer_fatal ||
            a->txn.spent)
                return -1;
        if (kretry_test_txn_begin_fails && kretry_test_txn_begin_fails()) {
                kretry_log(a, KRETRY_LOG_WARNING, "TXN",
                           "test: begin_transaction fails; trying again");
                return -1;
        }
        rd_kafka_error_t *e = rd_kafka_begin_transaction(a->producer);
        if (e) {
                if (kretry_txn_error(a, "begin_transaction", e) > 0)
                        a->txn.abort = 1;
                return -1;
        }
        a->txn.open = 1;
        if (!a->txn.since)
                a->txn.since = kretry_mono_ms();
        return 0;
}

void kretry_txn_note(kretry_adapter_t *a, kretry_part_t *part) {
        part->txn_dirty = 1;
        a->txn.decided++;
        if (!a->txn.since)
                a->txn.since = kretry_mono_ms();
}

void kretry_txn_copy_failed(kretry_adapter_t *a,
                            kretry_inflight_t *r,
                            rd_kafka_resp_err_t err) {
        if (!a->txn.aborting) {
                atomic_fetch_add_explicit(&a->stats.produce_errors, 1,
                                          memory_order_relaxed);
                int big = kretry_too_large(err);
                if (kretry_denied_err(err)) {
                        /* Cleared by the next transaction committed. */
                        char what[300];
                        snprintf(what, sizeof(what),
                                 "copy of %s [%d] offset %lld to %s "
                                 "(the transaction is aborted)",
                                 a->topics[r->part->tier],
                                 (int)r->part->partition,
                                 (long long)r->rkm->offset,
                                 kretry_dest_topic(a, r));
                        atomic_store_explicit(&a->stats.txn_denied, 1,
                                              memory_order_relaxed);
                        kretry_denied_note(a, KRETRY_DENIED_COPY, err, what);
                }
                if (big) {
                        atomic_fetch_add_explicit(&a->stats.too_large, 1,
                                                  memory_order_relaxed);
                        a->txn.stuck_tier = r->part->tier;
                        a->txn.stuck_p    = r->part->partition;
                }
                kretry_log(a, big ? KRETRY_LOG_ERR : KRETRY_LOG_WARNING, "TXN",
                           "copy of %s [%d] offset %lld failed: %s; the "
                           "transaction is aborted and its messages decided "
                           "again%s%s%s",
                           a->topics[r->part->tier], (int)r->part->partition,
                           (long long)r->rkm->offset, rd_kafka_err2str(err),
                           big ? "; the partition waits meanwhile: raise "
                                 "max.message.bytes of "
                               : "",
                           big ? kretry_dest_topic(a, r) : "",
                           big ? " (and producer.message.max.bytes, if set "
                                 "lower)"
                               : "");
                if (err == RD_KAFKA_RESP_ERR__FATAL)
                        kretry_producer_fatal(a);
                a->txn.abort = 1;
        }
        kretry_inflight_free(a, r);
}
