/*
 * Phase: the open transaction (txn_open.c), routing=transactional: what
 * route.c calls while it decides. Polling thread.
 */
#ifndef KRETRY_TXN_OPEN_H
#define KRETRY_TXN_OPEN_H

#include "kretry/kretry.h"
#include "part.h"
#include "route.h"

#include <librdkafka/rdkafka.h>

/* Before a copy is produced: a transaction is open (begun now if none);
 * -1 while none can be (committing, aborting, fatal): produce later. */
int kretry_txn_begin(kretry_adapter_t *a);
/* An outcome of @p part was decided (its offset done). */
void kretry_txn_note(kretry_adapter_t *a, kretry_part_t *part);
/* A copy in the open transaction failed: it is given up and the
 * transaction aborted at the next step (its messages decided again). */
void kretry_txn_copy_failed(kretry_adapter_t *a,
                            kretry_inflight_t *r,
                            rd_kafka_resp_err_t err);
/* An error of a transaction call: logged; a fatal one stops the adapter.
 * Returns 1 when the transaction must be aborted, 0 when the call may be
 * made again (retriable), -1 when fatal. Takes @p e. */
int kretry_txn_error(kretry_adapter_t *a,
                     const char *call,
                     rd_kafka_error_t *e);
/* Test only: when set and it returns nonzero, begin_transaction fails with
 * a retriable error (the call is made again at the next step). Polling
 * thread. */
extern int (*kretry_test_txn_begin_fails)(void);

#endif
