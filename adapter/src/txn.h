/*
 * Phase: transactions, routing=transactional (txn.c): set up, committed,
 * aborted and rewound, driven by the loop; the open transaction that
 * route.c works in is txn_open.h's. Polling thread.
 */
#ifndef KRETRY_TXN_H
#define KRETRY_TXN_H

#include "kretry/kretry.h"
#include "part.h"
#include "txn_open.h"

#include <librdkafka/rdkafka.h>

/* txn.c: routing=transactional. */
/* Before the clients exist: the consumer commits nothing itself and reads
 * committed records only; the producer gets its transactional.id. */
kretry_err_t
kretry_txn_conf(kretry_adapter_t *a, char *errstr, size_t errstr_size);
/* Once the producer exists: fence an earlier instance of the same id. */
kretry_err_t
kretry_txn_init(kretry_adapter_t *a, char *errstr, size_t errstr_size);
/* From the poll loop: abort what must be, commit what is due; returns ms
 * until the next commit is due, or -1. */
int64_t kretry_txn_step(kretry_adapter_t *a, int64_t mono);
/* Commit the open transaction now, waiting for its copies until
 * @p deadline (revoke, close); on failure it is aborted and every assigned
 * partition but those of @p except (NULL: none) rewound. 0 when
 * committed (or nothing was open). */
int kretry_txn_commit_now(kretry_adapter_t *a,
                          const rd_kafka_topic_partition_list_t *except,
                          int64_t deadline);
/* Resume the partitions whose blocked_until passed at @p mono; the next
 * one's time to blocked_at. */
void kretry_txn_unblock(kretry_adapter_t *a, int64_t mono);
/* Test only, never set in production: when set and it returns nonzero, the
 * transaction being committed fails as a broker's refusal would (it is
 * aborted and its partitions rewound). Polling thread. */
extern int (*kretry_test_txn_fails)(void);
/* Test only: when set and it returns nonzero, the transaction whose offsets
 * were sent is not committed yet, as when its commit outlasts the step's
 * bound on a loaded cluster (tried again at the next step). */
extern int (*kretry_test_txn_commit_later)(void);
/* Abort the open transaction (a lost assignment, a close cut short) and
 * rewind every assigned partition but those of @p except (none while
 * closing: the next owner starts from the committed state). */
void kretry_txn_abort(kretry_adapter_t *a,
                      const rd_kafka_topic_partition_list_t *except);

#endif
