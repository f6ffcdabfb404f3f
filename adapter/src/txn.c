/*
 * Phase: transactions (routing=transactional).
 *
 * routing=transactional: every copy kretry writes (to a tier, the DLQ, the
 * version changelog) and the consumed offsets of what they decide are
 * committed in one Kafka transaction (KIP-98), the offsets sent with the
 * consumer's group metadata (KIP-447), so that a copy is visible to
 * read_committed readers exactly when its source offset is committed.
 *
 * One transaction at a time on the adapter's producer: begun before its
 * first copy, committed transaction.interval.ms later (or after
 * transaction.max.messages outcomes), on revocation and on close. A commit
 * first waits for every copy's delivery report, so that each copy's offset
 * is done, then sends the committable offset of every partition that
 * decided something, with the offsets decided above it as metadata
 * (offsets.h: out-of-order outcomes), then commits.
 *
 * A transaction that fails (a copy refused, the group's generation moved on
 * because this instance was fenced as a zombie, the broker aborted it) is
 * aborted and the partitions rewound: each assignment is retired and made
 * again from the group's committed offsets, as a new owner would start, so
 * every message decided in the aborted transaction is decided again. The
 * handler's own side effects stay at least once.
 *
 * Here: the setup, the commit, the abort and the rewind, called by the
 * loop, drain.c and rebalance.c; the open transaction route.c works in
 * (begin, note, a copy failed) is txn_open.c's, below.
 *
 * Polling thread only (adapter_int.h).
 */
#include "txn.h"
#include "acls.h"
#include "adapter_int.h"
#include "assign.h"
#include "clock.h"
#include "commit.h"
#include "conf.h"
#include "delay.h"
#include "denied.h"
#include "log.h"
#include "offsets.h"
#include "part.h"
#include "restore.h"
#include "startup_check.h"
#include "stats.h"
#include "txn_open.h"
#include "workers.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long one blocking transaction call may wait in the poll loop before
 * the loop moves on (the call is resumed at the next step). */
#define KRETRY_TXN_CALL_MS 5000
/* ... taken in slices of this, so that a stop is seen between them. */
#define KRETRY_TXN_SLICE_MS 500

int (*kretry_test_txn_fails)(void);
int (*kretry_test_txn_commit_later)(void);

kretry_err_t
kretry_txn_conf(kretry_adapter_t *a, char *errstr, size_t errstr_size) {
        kretry_conf_t *c = a->conf;
        a->txn.on        = c->routing_txn;
        if (!a->txn.on)
                return KRETRY_ERR_OK;
        /* Offsets travel in the transaction: librdkafka must commit
         * nothing on its own, and the consumer (with the restorer made from
         * its configuration) must never read a copy of an aborted or open
         * transaction. */
        a->txn.stuck_tier = a->txn.stuck_p = -1;
        static const char *consumer[][2]   = {
                  {"enable.auto.commit", "false"},
                  {"isolation.level", "read_committed"},
        };
        for (size_t i = 0; i < sizeof(consumer) / sizeof(consumer[0]); i++)
                if (rd_kafka_conf_set(c->consumer, consumer[i][0],
                                      consumer[i][1], errstr,
                                      errstr_size) != RD_KAFKA_CONF_OK)
                        return KRETRY_ERR_INVALID_VALUE;
        char id[1024];
        size_t size = sizeof(id);
        if (rd_kafka_conf_get(c->producer, "transactional.id", id, &size) ==
                    RD_KAFKA_CONF_OK &&
            id[0])
                return KRETRY_ERR_OK; /* the operator's: one per instance */
        /* KIP-447: one id per instance is enough, fencing of a zombie
         * rests on the group's generation. A static member keeps its id
         * across restarts, so a restarted instance aborts its predecessor's
         * open transaction at once instead of after
         * transaction.timeout.ms. */
        char inst[256], host[128];
        size = sizeof(inst);
        if (rd_kafka_conf_get(c->consumer, "group.instance.id", inst, &size) !=
                    RD_KAFKA_CONF_OK ||
            !inst[0]) {
                if (gethostname(host, sizeof(host)))
                        snprintf(host, sizeof(host), "host");
                host[sizeof(host) - 1] = '\0';
                snprintf(inst, sizeof(inst), "%s-%d-%08x", host, (int)getpid(),
                         (unsigned)(kretry_rng_unit(&a->rng) * 4294967295.0));
        }
        snprintf(id, sizeof(id), "kretry.%s.%s", a->group, inst);
        if (rd_kafka_conf_set(c->producer, "transactional.id", id, errstr,
                              errstr_size) != RD_KAFKA_CONF_OK)
                return KRETRY_ERR_INVALID_VALUE;
        return KRETRY_ERR_OK;
}

/* "; missing ACL: Write on transactional-id ..." for the producer's id:
 * kretry's own (kretry.{group}.{instance}) by their prefix, as `kretry
 * topology acls` grants them, an operator's exactly. */
static void txn_acl_hint(const kretry_adapter_t *a, char *dest, size_t size) {
        char id[1024], prefix[300], hint[1500];
        size_t n = sizeof(id);
        if (rd_kafka_conf_get(a->conf->producer, "transactional.id", id, &n) !=
            RD_KAFKA_CONF_OK)
                return;
        snprintf(prefix, sizeof(prefix), "kretry.%s.", a->group);
        int own              = strncmp(id, prefix, strlen(prefix)) != 0;
        kretry_acls_t need   = {0};
        kretry_acl_chain_t c = {a->topics[0],
                                a->topics + 1,
                                a->topic_cnt - 1,
                                a->dlq,
                                a->versions_topic,
                                a->group,
                                1,
                                own ? id : NULL,
                                a->parked_topic};
        if (!kretry_acls_add(&need, &c, KRETRY_ACL_ROLE_RUN))
                for (size_t i = 0; i < need.cnt; i++)
                        if (need.items[i].restype ==
                            RD_KAFKA_RESOURCE_TRANSACTIONAL_ID) {
                                kretry_acl_hint(a, &need.items[i], hint,
                                                sizeof(hint));
                                snprintf(dest, size, "; %s", hint);
                        }
        kretry_acls_clear(&need);
}

kretry_err_t
kretry_txn_init(kretry_adapter_t *a, char *errstr, size_t errstr_size) {
        if (!a->txn.on)
                return KRETRY_ERR_OK;
        rd_kafka_error_t *e = rd_kafka_init_transactions(
                a->producer, a->conf->topology_check_timeout_ms);
        if (!e)
                return KRETRY_ERR_OK;
        int n = snprintf(errstr, errstr_size,
                         "routing transactional: init_transactions: %s",
                         rd_kafka_error_string(e));
        /* No cluster reports the operations allowed on a transactional id
         * (the startup check cannot ask): the refusal names the grant. */
        if (rd_kafka_error_code(e) ==
                    RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED &&
            n > 0 && (size_t)n < errstr_size)
                txn_acl_hint(a, errstr + n, errstr_size - (size_t)n);
        rd_kafka_error_destroy(e);
        return KRETRY_ERR_KAFKA;
}

/* A transaction call's timeout: what is left of @p deadline, at most a
 * slice. */
static int call_ms(int64_t deadline) {
        return kretry_left_ms(deadline, KRETRY_TXN_SLICE_MS);
}

/* 1 when a call that failed retriably is not tried again: @p deadline
 * passed, or the adapter was asked to stop outside its close (the close
 * tries again within its own bound, or aborts). */
static int txn_gives_up(kretry_adapter_t *a, int64_t deadline) {
        return !kretry_left_ms(deadline, -1) ||
               (atomic_load(&a->stop) && !a->closed);
}

/* No transaction is open any more (committed, aborted, or none was). */
static void txn_ended(kretry_adapter_t *a) {
        a->txn.open = a->txn.sent = 0;
        a->txn.since              = 0;
        a->txn.decided            = 0;
}

/* What was decided after the committed transaction's offsets were sent
 * (its commit outlasted a step: the polling loop decided more meanwhile)
 * goes with the next one, whose interval starts now: without it, nothing
 * would commit those offsets until the partition decided something else. */
static void txn_carry(kretry_adapter_t *a) {
        for (int t = 0; t < a->topic_cnt; t++)
                for (int p = 0; p < a->part_cap[t]; p++) {
                        const kretry_part_t *part = a->parts[t][p];
                        if (part && part->assigned && part->txn_dirty) {
                                a->txn.since = kretry_mono_ms();
                                return;
                        }
                }
}

/* The offset of @p tp sent with the open transaction, and its metadata
 * (taken from @p tp): committed with it, they are where a rewind goes when
 * the cluster cannot tell (rewind_to). What its partition decided is in the
 * transaction now: committed with it, or decided again after its abort. */
static void offsets_sent(kretry_adapter_t *a, rd_kafka_topic_partition_t *tp) {
        kretry_part_t *part = kretry_part_of(a, tp);
        if (!part)
                return;
        part->txn_dirty = 0;
        part->stored = part->txn_sent = tp->offset;
        free(part->txn_sent_md);
        part->txn_sent_md     = tp->metadata;
        part->txn_sent_md_len = tp->metadata_size;
        tp->metadata          = NULL;
        tp->metadata_size     = 0;
}

/* The transaction committed: what it sent is the assigned partitions'
 * committed state. */
static void offsets_committed(kretry_adapter_t *a) {
        for (int t = 0; t < a->topic_cnt; t++)
                for (int p = 0; p < a->part_cap[t]; p++) {
                        kretry_part_t *part = a->parts[t][p];
                        if (!part || part->txn_sent < 0)
                                continue;
                        free(part->txn_md);
                        part->txn_committed   = part->txn_sent;
                        part->txn_md          = part->txn_sent_md;
                        part->txn_md_len      = part->txn_sent_md_len;
                        part->txn_sent        = -1;
                        part->txn_sent_md     = NULL;
                        part->txn_sent_md_len = 0;
                }
}

/* What a partition's last committed transaction committed, carried from
 * the retired assignment to the one made again; mine: the rewind went
 * there because the cluster did not tell the committed offset. */
typedef struct {
        int64_t off;
        void *md;
        size_t len;
        int mine;
} kept_t;

/* Where each partition of @p l starts again: the group's committed offset;
 * when the cluster does not tell it (it is down), the offset the last
 * transaction of this assignment committed (@p kept[i].mine set: its
 * decided metadata is the assignment's own too), or without one the first
 * offset this assignment took (a batched source message's, if it took none
 * yet), which the group's committed offset was when it began;
 * RD_KAFKA_OFFSET_INVALID: nothing was taken, nothing to go back to.
 * @p kept may be NULL (out of memory). */
static void rewind_to(kretry_adapter_t *a,
                      rd_kafka_topic_partition_list_t *l,
                      kept_t *kept) {
        rd_kafka_topic_partition_list_t *c =
                rd_kafka_topic_partition_list_copy(l);
        rd_kafka_resp_err_t err =
                kretry_test_txn_blind && kretry_test_txn_blind()
                        ? RD_KAFKA_RESP_ERR__TIMED_OUT
                        : rd_kafka_committed(a->consumer, c,
                                             KRETRY_TXN_CALL_MS);
        for (int i = 0; i < l->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &l->elems[i];
                kretry_part_t *part            = kretry_part_of(a, tp);
                int64_t first                  = part ? part->first : -1;
                int own                        = 0;
                for (int j = a->sbuf_pos; first < 0 && j < a->sbuf_cnt; j++)
                        if (a->sbuf[j]->partition == tp->partition &&
                            !strcmp(rd_kafka_topic_name(a->sbuf[j]->rkt),
                                    tp->topic))
                                first = a->sbuf[j]->offset;
                tp->offset = RD_KAFKA_OFFSET_INVALID;
                if (!err && !c->elems[i].err && c->elems[i].offset >= 0)
                        tp->offset = c->elems[i].offset;
                else if ((err || c->elems[i].err) && part &&
                         part->txn_committed >= 0) {
                        tp->offset = part->txn_committed;
                        own        = 1;
                } else if (first >= 0)
                        tp->offset = first;
                if (err || c->elems[i].err)
                        kretry_log(
                                a, KRETRY_LOG_WARNING, "TXN",
                                "%s [%d]: committed offset unknown (%s); "
                                "rewinding to %lld (%s)",
                                tp->topic, (int)tp->partition,
                                rd_kafka_err2str(err ? err : c->elems[i].err),
                                (long long)tp->offset,
                                own ? "what this instance committed last"
                                : first >= 0 ? "where this assignment began"
                                             : "nothing taken yet");
                if (kept)
                        kept[i].mine = own;
        }
        rd_kafka_topic_partition_list_destroy(c);
}

static void kept_take(kept_t *k, kretry_part_t *part) {
        k->off           = part->txn_committed;
        k->md            = part->txn_md;
        k->len           = part->txn_md_len;
        part->txn_md     = NULL;
        part->txn_md_len = 0;
}

/* When the rewind went to @p k's offset (k->mine), the offsets decided
 * above it are taken from its metadata (what the restore reads from the
 * commit when it can), and under ordering=key the source resumes there. */
static void kept_give(kretry_adapter_t *a, kept_t *k, kretry_part_t *part) {
        if (k->mine && k->md &&
            kretry_decided_parse(&part->decided, k->off, INT64_MAX, k->md,
                                 k->len))
                kretry_log(a, KRETRY_LOG_WARNING, "TXN",
                           "%s [%d]: the offsets decided above %lld could "
                           "not be read from the last commit's metadata; "
                           "they are handled again",
                           a->topics[part->tier], (int)part->partition,
                           (long long)k->off);
        if (k->mine && !part->tier && a->conf->ordering == KRETRY_ORDER_KEY)
                part->src_next = k->off;
        part->txn_committed = k->off;
        part->txn_md        = k->md;
        part->txn_md_len    = k->len;
        k->md               = NULL;
}

/* After an abort: the assignments of @p l start again from the group's
 * committed state, as a new owner's would (rebalance.c), without leaving
 * the group: retired (held messages, gates and buffered source messages
 * dropped, handler calls awaited and their results discarded), made again,
 * their key state rebuilt, the consumer sought back. */
static void rewind_parts(kretry_adapter_t *a,
                         rd_kafka_topic_partition_list_t *l) {
        if (!l->cnt)
                return;
        int64_t deadline = kretry_mono_ms() + a->conf->revoke_timeout_ms;
        /* NULL, out of memory: the offsets decided above are handled
         * again. */
        kept_t *kept = calloc((size_t)l->cnt, sizeof(*kept));
        rewind_to(a, l, kept);
        rd_kafka_topic_partition_list_t *all =
                rd_kafka_topic_partition_list_copy(l);
        for (int i = 0; i < all->cnt; i++)
                all->elems[i].offset = RD_KAFKA_OFFSET_INVALID;
        kretry_sbuf_drop(a, all); /* every batched message of them */
        for (int i = 0; i < l->cnt; i++) {
                kretry_part_t *part = kretry_part_of(a, &l->elems[i]);
                if (part && kept)
                        kept_take(&kept[i], part);
                if (part)
                        kretry_part_retire(a, part);
        }
        kretry_workers_revoke(a, all, deadline);
        rd_kafka_topic_partition_list_t *src =
                rd_kafka_topic_partition_list_new(l->cnt);
        for (int i = 0; i < l->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &l->elems[i];
                int tier = kretry_topic_index(a, tp->topic);
                kretry_part_t *part =
                        kretry_part_assign(a, tier, tp->partition);
                if (!part)
                        kretry_log(a, KRETRY_LOG_ERR, "TXN",
                                   "%s [%d]: out of memory: its messages are "
                                   "not handled until the next assignment",
                                   tp->topic, (int)tp->partition);
                else if (kept)
                        kept_give(a, &kept[i], part);
                if (part && tier == 0)
                        rd_kafka_topic_partition_list_add(src, tp->topic,
                                                          tp->partition);
        }
        if (kept)
                for (int i = 0; i < l->cnt; i++)
                        free(kept[i].md);
        free(kept);
        kretry_restore(a, src);
        rd_kafka_topic_partition_list_destroy(src);
        rd_kafka_topic_partition_list_t *seek =
                rd_kafka_topic_partition_list_new(l->cnt);
        for (int i = 0; i < l->cnt; i++)
                if (l->elems[i].offset >= 0)
                        rd_kafka_topic_partition_list_add(
                                seek, l->elems[i].topic, l->elems[i].partition)
                                ->offset = l->elems[i].offset;
        rd_kafka_error_t *e =
                seek->cnt ? rd_kafka_seek_partitions(a->consumer, seek,
                                                     KRETRY_TXN_CALL_MS)
                          : NULL;
        if (e) {
                kretry_log(a, KRETRY_LOG_ERR, "TXN",
                           "seeking back after the abort: %s; stopping: "
                           "messages of the aborted transaction would not be "
                           "decided again",
                           rd_kafka_error_string(e));
                rd_kafka_error_destroy(e);
                a->fatal = 1;
        }
        for (int i = 0; !e && i < seek->cnt; i++)
                if (seek->elems[i].err) {
                        kretry_log(a, KRETRY_LOG_ERR, "TXN",
                                   "%s [%d]: seeking back to %lld: %s; "
                                   "stopping",
                                   seek->elems[i].topic,
                                   (int)seek->elems[i].partition,
                                   (long long)seek->elems[i].offset,
                                   rd_kafka_err2str(seek->elems[i].err));
                        a->fatal = 1;
                }
        rd_kafka_topic_partition_list_destroy(seek);
        rd_kafka_topic_partition_list_destroy(all);
        /* A partition whose copy was refused as too large waits before it
         * fails a transaction again (doubling, up to 10 s). */
        kretry_part_t *stuck =
                a->txn.stuck_tier >= 0
                        ? kretry_part_find(a, a->txn.stuck_tier, a->txn.stuck_p)
                        : NULL;
        if (stuck) {
                int b = a->txn.stuck_backoff_ms;
                b     = b ? b * 2 : a->conf->produce_backoff_ms;
                a->txn.stuck_backoff_ms = b > 10000 ? 10000 : b;
                stuck->blocked_until =
                        kretry_mono_ms() + a->txn.stuck_backoff_ms;
                if (!a->txn.blocked_at ||
                    stuck->blocked_until < a->txn.blocked_at)
                        a->txn.blocked_at = stuck->blocked_until;
                kretry_part_update_pause(a, stuck);
        }
        a->txn.stuck_tier = a->txn.stuck_p = -1;
        /* An open breaker holds them back as before. */
        if (a->breaker_paused)
                kretry_update_pause_all(a);
}

void kretry_txn_unblock(kretry_adapter_t *a, int64_t mono) {
        a->txn.blocked_at = 0;
        for (int t = 0; t < a->topic_cnt; t++)
                for (int p = 0; p < a->part_cap[t]; p++) {
                        kretry_part_t *part = a->parts[t][p];
                        if (!part || !part->blocked_until)
                                continue;
                        if (part->blocked_until <= mono) {
                                part->blocked_until = 0;
                                kretry_part_update_pause(a, part);
                        } else if (!a->txn.blocked_at ||
                                   part->blocked_until < a->txn.blocked_at) {
                                a->txn.blocked_at = part->blocked_until;
                        }
                }
}

void kretry_txn_abort(kretry_adapter_t *a,
                      const rd_kafka_topic_partition_list_t *except) {
        if (!a->txn.on)
                return;
        int was_open = a->txn.open || a->txn.abort;
        if (a->txn.open && !a->producer_fatal) {
                a->txn.aborting = 1;
                rd_kafka_error_t *e;
                /* A close cut short has its own bound (abort_by): the
                 * cluster may be gone, and the broker aborts the
                 * transaction after transaction.timeout.ms anyway. */
                int64_t deadline =
                        a->txn.abort_by ? a->txn.abort_by
                                        : kretry_mono_ms() + KRETRY_TXN_CALL_MS;
                while ((e = rd_kafka_abort_transaction(a->producer,
                                                       call_ms(deadline)))) {
                        int rc = kretry_txn_error(a, "abort_transaction", e);
                        if (rc || txn_gives_up(a, deadline)) {
                                /* The broker aborts it after
                                 * transaction.timeout.ms; this producer
                                 * cannot go on meanwhile. */
                                if (!rc && !a->closed)
                                        a->fatal = 1;
                                break;
                        }
                }
                a->txn.aborting = 0;
        }
        a->txn.abort = 0;
        txn_ended(a);
        if (!was_open)
                return;
        atomic_fetch_add_explicit(&a->stats.txn_aborts, 1,
                                  memory_order_relaxed);
        /* Said once per abort, whatever caused it (a failed call, a lost
         * assignment, a cut-short close): the reason an operator looks for
         * when handler calls repeat. Closing, stopping (a close follows),
         * or unable to go on (a->fatal): nothing is rewound, which would
         * wait for the cluster (restore.timeout.ms) to no purpose, and
         * nothing more is committed (txn.spent): the next owner starts
         * from the committed state. */
        int ending = a->closed || a->fatal || atomic_load(&a->stop);
        if (ending)
                a->txn.spent = 1;
        rd_kafka_topic_partition_list_t *l =
                ending ? rd_kafka_topic_partition_list_new(0)
                       : kretry_assigned_list(a, except);
        if (ending)
                kretry_log(a, KRETRY_LOG_WARNING, "TXN",
                           "transaction aborted: none of its copies becomes "
                           "visible; %s: nothing more is committed, the next "
                           "owner starts from the committed offsets",
                           a->closed || atomic_load(&a->stop)
                                   ? "stopping"
                                   : "this instance cannot go on");
        else
                kretry_log(a, KRETRY_LOG_WARNING, "TXN",
                           "transaction aborted: none of its copies becomes "
                           "visible; %d partitions start again from their "
                           "committed offsets",
                           l->cnt);
        rewind_parts(a, l);
        rd_kafka_topic_partition_list_destroy(l);
}

/* The offsets of every assigned partition that decided something since
 * the last commit: the committable offset (or where a new owner resumes),
 * with the offsets decided above it as metadata; NULL when none. */
static rd_kafka_topic_partition_list_t *txn_offsets(kretry_adapter_t *a) {
        rd_kafka_topic_partition_list_t *l = NULL;
        int oom                            = 0;
        for (int t = 0; t < a->topic_cnt; t++)
                for (int p = 0; p < a->part_cap[t]; p++) {
                        kretry_part_t *part = a->parts[t][p];
                        /* Still dirty until the offsets are in the
                         * transaction (offsets_sent): a begin that fails
                         * retriably sends them with the next one. */
                        if (!part || !part->assigned || !part->txn_dirty)
                                continue;
                        oom |= kretry_commit_add(a, &l, part, 0) < 0;
                }
        /* An offset without the offsets decided above it would have the
         * next owner (or a rewind) decide those again and copy them twice:
         * the transaction is aborted instead, its messages decided again. */
        if (oom) {
                kretry_log(a, KRETRY_LOG_ERR, "TXN",
                           "out of memory for the offsets a transaction "
                           "commits; aborting it");
                a->txn.abort = 1;
        }
        return l;
}

/* The group metadata the offsets are sent with, or NULL when this
 * instance is not a member now (it was fenced: its session expired, it
 * exceeded max.poll.interval.ms). A transactional offset commit without a
 * member id and generation is accepted by the broker whoever owns the
 * partitions (older producers send none), so a zombie's must never go out
 * that way: the member id is read before and after the metadata is taken,
 * and only the same, non-empty id on both sides lets it go. */
static rd_kafka_consumer_group_metadata_t *
member_metadata(kretry_adapter_t *a) {
        char *before = rd_kafka_memberid(a->consumer);
        rd_kafka_consumer_group_metadata_t *md =
                rd_kafka_consumer_group_metadata(a->consumer);
        char *after = rd_kafka_memberid(a->consumer);
        int member  = before && after && *before && !strcmp(before, after) &&
                     !rd_kafka_assignment_lost(a->consumer);
        if (before)
                rd_kafka_mem_free(a->consumer, before);
        if (after)
                rd_kafka_mem_free(a->consumer, after);
        if (!member && md) {
                rd_kafka_consumer_group_metadata_destroy(md);
                md = NULL;
        }
        return md;
}

/* Wait for every copy's delivery report until @p deadline; 0 when none is
 * left. */
static int txn_flush(kretry_adapter_t *a, int64_t deadline) {
        while (a->inflight > 0 && !a->txn.abort) {
                if (txn_gives_up(a, deadline))
                        return -1;
                int left = kretry_left_ms(deadline, 100);
                int was  = kretry_store_begin(a);
                rd_kafka_poll(a->producer, left);
                kretry_store_end(a, was);
        }
        return 0;
}

/* Commit the open transaction (or offsets decided without a copy, in one
 * begun for them). 0: committed or nothing to commit; 1: not yet (copies
 * unacknowledged, or a retriable error at @p deadline: resumed later); -1:
 * aborted (and rewound but @p except) or fatal. */
static int txn_commit(kretry_adapter_t *a,
                      const rd_kafka_topic_partition_list_t *except,
                      int64_t deadline) {
        if (a->producer_fatal || a->txn.spent)
                return -1;
        if (!a->txn.abort && txn_flush(a, deadline))
                return 1;
        if (a->txn.abort) {
                kretry_txn_abort(a, except);
                return -1;
        }
        if (!a->txn.sent) {
                rd_kafka_topic_partition_list_t *l = txn_offsets(a);
                if (a->txn.abort) {
                        if (l)
                                rd_kafka_topic_partition_list_destroy(l);
                        kretry_txn_abort(a, except);
                        return -1;
                }
                if (!l && !a->txn.open) {
                        txn_ended(a);
                        return 0;
                }
                if (l && kretry_txn_begin(a)) {
                        /* Decided again once the abort rewinds them. */
                        rd_kafka_topic_partition_list_destroy(l);
                        if (a->txn.abort)
                                kretry_txn_abort(a, except);
                        return -1;
                }
                rd_kafka_consumer_group_metadata_t *cgmd =
                        l ? member_metadata(a) : NULL;
                int failed = 0;
                if (cgmd && kretry_test_txn_fails && kretry_test_txn_fails()) {
                        kretry_log(a, KRETRY_LOG_WARNING, "TXN",
                                   "test: the transaction fails");
                        rd_kafka_consumer_group_metadata_destroy(cgmd);
                        cgmd         = NULL;
                        a->txn.abort = failed = 1;
                } else if (l && !cgmd) {
                        kretry_log(a, KRETRY_LOG_WARNING, "TXN",
                                   "this instance is no longer a member of "
                                   "the group (fenced: its partitions may "
                                   "be another's now); aborting the "
                                   "transaction");
                        a->txn.abort = failed = 1;
                }
                rd_kafka_error_t *e;
                while (cgmd &&
                       (e = rd_kafka_send_offsets_to_transaction(
                                a->producer, l, cgmd, call_ms(deadline)))) {
                        int rc = kretry_txn_error(
                                a, "send_offsets_to_transaction", e);
                        if (rc || txn_gives_up(a, deadline)) {
                                a->txn.abort = rc >= 0;
                                failed       = 1;
                                break;
                        }
                }
                if (cgmd)
                        rd_kafka_consumer_group_metadata_destroy(cgmd);
                if (!failed && l)
                        for (int i = 0; i < l->cnt; i++)
                                offsets_sent(a, &l->elems[i]);
                if (l)
                        rd_kafka_topic_partition_list_destroy(l);
                if (failed) {
                        if (a->txn.abort)
                                kretry_txn_abort(a, except);
                        return -1;
                }
                a->txn.sent = 1;
        }
        if (kretry_test_txn_commit_later && kretry_test_txn_commit_later())
                return 1;
        rd_kafka_error_t *e;
        while ((e = rd_kafka_commit_transaction(a->producer,
                                                call_ms(deadline)))) {
                int rc = kretry_txn_error(a, "commit_transaction", e);
                if (rc > 0) {
                        a->txn.abort = 1;
                        kretry_txn_abort(a, except);
                        return -1;
                }
                if (rc < 0)
                        return -1;
                if (txn_gives_up(a, deadline))
                        return 1; /* resumed at the next step, or closing */
        }
        offsets_committed(a);
        txn_ended(a);
        txn_carry(a);
        a->txn.stuck_backoff_ms = 0;
        atomic_store_explicit(&a->stats.txn_denied, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&a->stats.txn_commits, 1,
                                  memory_order_relaxed);
        return 0;
}

int64_t kretry_txn_step(kretry_adapter_t *a, int64_t mono) {
        if (!a->txn.on || a->producer_fatal)
                return -1;
        if (a->txn.abort) {
                kretry_txn_abort(a, NULL);
                return -1;
        }
        if (!a->txn.since)
                return -1;
        int64_t due = a->txn.since + a->conf->txn_interval_ms;
        if (mono < due && a->txn.decided < a->conf->txn_max_msgs)
                return due - mono;
        if (txn_commit(a, NULL, mono + KRETRY_TXN_CALL_MS) == 1)
                return 1; /* copies still unacknowledged: soon again */
        return -1;
}

int kretry_txn_commit_now(kretry_adapter_t *a,
                          const rd_kafka_topic_partition_list_t *except,
                          int64_t deadline) {
        if (!a->txn.on)
                return 0;
        int rc = txn_commit(a, except, deadline);
        if (rc == 1) {
                kretry_log(a, KRETRY_LOG_WARNING, "TXN",
                           "the transaction could not be committed in time "
                           "(%d copies unacknowledged); aborting it: its "
                           "messages are consumed again",
                           a->inflight);
                a->txn.abort = 1;
                kretry_txn_abort(a, except);
        }
        return rc ? -1 : 0;
}
