/*
 * Phase: intake. What the poll loop takes from the consumer's queues and
 * where each message goes: to the handler (route.c), behind a held tier
 * message in kretry's memory, or back to be fetched again; held messages
 * handed on at their due time; copies waiting for their source (keyed.c
 * keeps them); the state each assignment's pause follows from (applied by
 * kretry_part_update_pause, part.c). Polling thread only (adapter_int.h).
 */
#include "intake.h"
#include "adapter_int.h"
#include "assign.h"
#include "clock.h"
#include "denied.h"
#include "keyed.h"
#include "log.h"
#include "owned.h"
#include "part.h"
#include "route.h"
#include "stats.h"
#include "workers.h"

#include <stdio.h>
#include <string.h>

/* Messages consumed per poll before the loop looks at due messages and
 * delivery reports again. */
#define KRETRY_POLL_BATCH 500

/* Memory all buffers behind held messages take now (written on this
 * thread only). */
static int64_t buffered_total(const kretry_adapter_t *a) {
        return atomic_load_explicit(&a->stats.buffered_bytes,
                                    memory_order_relaxed);
}

/* Whether @p part's buffer takes one more message of @p bytes: its own
 * bounds (a first message of any size), and all buffers' together
 * (tier.buffer.total.bytes). */
static int behind_room(const kretry_adapter_t *a,
                       const kretry_part_t *part,
                       int64_t bytes) {
        const kretry_rkm_fifo_t *f = &part->behind;
        return f->cnt < kretry_part_behind_cap(a, part) &&
               (!f->cnt || f->bytes + bytes <= a->conf->tier_buffer_bytes) &&
               buffered_total(a) + bytes <= a->conf->tier_buffer_total;
}

/* A full buffer stays full (its partition paused) until half of it is free
 * and all buffers together are at most three quarters of their bound: a
 * buffer at a bound must not pause and resume its partition on every
 * message. Held back by the total alone, it is looked at again when the
 * total falls (kretry_intake_stalled). */
static void behind_maybe_resume(kretry_adapter_t *a, kretry_part_t *part) {
        const kretry_rkm_fifo_t *f = &part->behind;
        if (part->behind_full &&
            f->cnt <= kretry_part_behind_cap(a, part) / 2 &&
            f->bytes <= a->conf->tier_buffer_bytes / 2) {
                if (buffered_total(a) <= a->conf->tier_buffer_total / 4 * 3)
                        part->behind_full = 0;
                else
                        a->behind_stalled = 1;
        }
        kretry_part_update_pause(a, part);
}

/* The messages kept behind @p part's held one, in order, now that it is
 * gone: each is admitted as if it arrived now, until one is held again (not
 * due yet) or max.inflight or the breaker stops them. */
static int release_behind(kretry_adapter_t *a, kretry_part_t *part) {
        kretry_rkm_fifo_t *f = &part->behind;
        int n                = 0;
        while (f->cnt && !part->held && !a->full && !a->breaker_paused) {
                rd_kafka_message_t *rkm = kretry_rkm_fifo_pop(f);
                kretry_count_buffered(a, -1, -(int64_t)kretry_rkm_size(rkm));
                kretry_dispatch(a, part, rkm);
                n++;
        }
        if (f->cnt && !part->held)
                a->behind_stalled = 1;
        behind_maybe_resume(a, part);
        return n;
}

/* The copies of @p part waiting for their source that may go now, to
 * kretry_dispatch in consume order; the others wait on, in order. A copy
 * is looked at here before it goes, so that the list (and with it the
 * partition's pause) empties only once the source caught up. */
static int source_caught_up(kretry_adapter_t *a, kretry_part_t *part) {
        kretry_rkm_fifo_t all = part->src_wait;
        rd_kafka_message_t *rkm;
        int n = 0;
        memset(&part->src_wait, 0, sizeof(part->src_wait));
        while ((rkm = kretry_rkm_fifo_pop(&all))) {
                if (kretry_keyed_source_behind(a, part, rkm)) {
                        /* Owned already: nothing to allocate. */
                        kretry_rkm_fifo_push(&part->src_wait, &rkm);
                        continue;
                }
                atomic_fetch_sub_explicit(&a->stats.held, 1,
                                          memory_order_relaxed);
                kretry_dispatch(a, part, rkm);
                n++;
        }
        kretry_part_update_pause(a, part);
        return n;
}

/* Every partition's copies waiting for their source, when their time to
 * look again has come. */
static int dispatch_source_waits(kretry_adapter_t *a) {
        int n = 0, left = 0;
        int64_t now = kretry_mono_ms();
        if (!a->src_wait_at || a->src_wait_at > now)
                return 0;
        for (int t = 1; t < a->topic_cnt; t++)
                for (int p = 0; p < a->part_cap[t]; p++) {
                        kretry_part_t *part = a->parts[t][p];
                        if (!part || !part->src_wait.cnt)
                                continue;
                        n += source_caught_up(a, part);
                        left += part->src_wait.cnt;
                }
        a->src_wait_at = left ? now + KRETRY_SOURCE_WAIT_MS : 0;
        return n;
}

/* Hand every held message whose due time has come to the handler, and the
 * copies waiting for their source that may go. */
int kretry_intake_due(kretry_adapter_t *a, int64_t now) {
        kretry_part_t *due = NULL, **pp = &a->held_list;
        int n = 0;
        if (a->breaker_paused)
                return 0; /* held messages wait for the breaker too */
        n += dispatch_source_waits(a);
        while (*pp) {
                kretry_part_t *part = *pp;
                if (part->held_due > now) {
                        pp = &part->next_held;
                        continue;
                }
                *pp             = part->next_held;
                part->next_held = due;
                due             = part;
        }
        while (due) {
                kretry_part_t *part     = due;
                rd_kafka_message_t *rkm = part->held;
                due                     = part->next_held;
                part->next_held         = NULL;
                part->held              = NULL;
                atomic_fetch_sub_explicit(&a->stats.held, 1,
                                          memory_order_relaxed);
                kretry_part_update_pause(a, part);
                kretry_dispatch(a, part, rkm);
                n += 1 + release_behind(a, part);
        }
        return n;
}

/* Messages kept behind a held one whose turn came while max.inflight or
 * the breaker stopped them, and full buffers held back by the total. */
int kretry_intake_stalled(kretry_adapter_t *a) {
        int n = 0;
        if (!a->behind_stalled || a->full || a->breaker_paused)
                return 0;
        a->behind_stalled = 0;
        for (int t = 1; t < a->topic_cnt; t++)
                for (int p = 0; p < a->part_cap[t]; p++) {
                        kretry_part_t *part = a->parts[t][p];
                        if (!part || !part->assigned)
                                continue;
                        if (!part->held)
                                n += release_behind(a, part);
                        else
                                behind_maybe_resume(a, part);
                }
        return n;
}

static void consumer_error(kretry_adapter_t *a, rd_kafka_message_t *rkm) {
        if (rkm->err == RD_KAFKA_RESP_ERR__FATAL) {
                char reason[512];
                rd_kafka_fatal_error(a->consumer, reason, sizeof(reason));
                kretry_log(a, KRETRY_LOG_ERR, "FATAL", "consumer: %s", reason);
                a->fatal = 1;
                return;
        }
        /* The coordinator refuses the session timeout on every JoinGroup,
         * and librdkafka would ask again forever without ever joining:
         * a configuration error, said once and fatal. */
        if (rkm->err == RD_KAFKA_RESP_ERR_INVALID_SESSION_TIMEOUT) {
                char ms[32] = "?";
                size_t size = sizeof(ms);
                rd_kafka_conf_get(rd_kafka_conf(a->consumer),
                                  "session.timeout.ms", ms, &size);
                kretry_log(a, KRETRY_LOG_ERR, "FATAL",
                           "the group coordinator refuses "
                           "consumer.session.timeout.ms %s: it must lie "
                           "within the broker's group.min.session.timeout.ms "
                           "and group.max.session.timeout.ms (6 s and 30 min "
                           "by default)",
                           ms);
                a->fatal = 1;
                return;
        }
        if (rkm->err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED) {
                /* The group's Read: no commit either (cleared by the next
                 * commit that succeeds). */
                atomic_store_explicit(&a->stats.commit_denied, 1,
                                      memory_order_relaxed);
                kretry_denied_note(a, KRETRY_DENIED_COMMIT, rkm->err,
                                   "the consumer group");
                return;
        }
        if (kretry_denied_err(rkm->err)) {
                /* Cleared by the next message of that topic (consumed). */
                const char *t = rkm->rkt ? rd_kafka_topic_name(rkm->rkt) : "";
                int i         = kretry_topic_index(a, t);
                char what[300];
                snprintf(what, sizeof(what), "consuming %s",
                         *t ? t : "a topic of the topology");
                atomic_store_explicit(&a->stats.read_denied, i + 2,
                                      memory_order_relaxed);
                kretry_denied_note(a, KRETRY_DENIED_READ, rkm->err, what);
                return;
        }
        kretry_log(a, KRETRY_LOG_WARNING, "CONSUME", "%s%s%s",
                   rkm->rkt ? rd_kafka_topic_name(rkm->rkt) : "",
                   rkm->rkt ? ": " : "", rd_kafka_message_errstr(rkm));
}

/* A message of a topic whose reading was refused: granted again. The
 * topic's index + 2 (1: a topic not known by name). */
static void read_granted(kretry_adapter_t *a, const kretry_part_t *part) {
        int d = atomic_load_explicit(&a->stats.read_denied,
                                     memory_order_relaxed);
        if (d && (d == part->tier + 2 || d == 1))
                atomic_store_explicit(&a->stats.read_denied, 0,
                                      memory_order_relaxed);
}

/* A message for a paused partition (its buffer behind a held message full,
 * or the breaker open) cannot normally arrive: the pause flushed its fetch
 * queue. Should one slip through, fetch it again once the partition resumes
 * rather than lose it. */
static void refetch_later(kretry_adapter_t *a,
                          kretry_part_t *part,
                          rd_kafka_message_t *rkm,
                          const char *why) {
        kretry_log(a, KRETRY_LOG_WARNING, "HOLD",
                   "%s [%d] offset %lld arrived %s; fetching it again later",
                   a->topics[part->tier], (int)part->partition,
                   (long long)rkm->offset, why);
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, a->topics[part->tier],
                                          part->partition)
                ->offset = rkm->offset;
        /* Batched messages of the partition past it are fetched again
         * too: handled, they would put its offsets out of order. */
        kretry_sbuf_drop(a, l);
        rd_kafka_error_t *e = rd_kafka_seek_partitions(a->consumer, l, -1);
        if (e)
                rd_kafka_error_destroy(e);
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_message_destroy(rkm);
}

/* @p rkm arrived behind a held message of @p part (or behind others kept
 * so): kept in order in kretry's memory while tier.buffer.* has room, which
 * leaves the partition fetching; at the bound the partition is paused, and
 * a message still arriving is fetched again after the resume. */
static void
keep_behind(kretry_adapter_t *a, kretry_part_t *part, rd_kafka_message_t *rkm) {
        kretry_rkm_fifo_t *f = &part->behind;
        int64_t bytes        = (int64_t)kretry_rkm_size(rkm);
        if (!part->behind_full && behind_room(a, part, bytes) &&
            !kretry_rkm_fifo_push(f, &rkm)) {
                kretry_count_consumed(a, part, f->tail);
                kretry_count_buffered(a, 1, bytes);
                if (f->cnt >= kretry_part_behind_cap(a, part) ||
                    f->bytes >= a->conf->tier_buffer_bytes ||
                    buffered_total(a) >= a->conf->tier_buffer_total) {
                        part->behind_full = 1;
                        kretry_part_update_pause(a, part);
                }
                return;
        }
        part->behind_full = 1; /* no room, or no memory for the copy */
        kretry_part_update_pause(a, part);
        refetch_later(a, part, rkm, "behind a held message");
}

/* Delivery reports and due messages are served every this many consumed
 * messages, so a slow handler delays neither commits nor due tiers by a
 * whole batch. */
#define KRETRY_SERVE_EVERY 16

/* The next message of @p q, if any. */
static rd_kafka_message_t *take(rd_kafka_queue_t *q) {
        /* A length check is a lock and a read; an empty consume costs
         * several times that, on every message of the happy path. */
        return rd_kafka_queue_length(q) ? rd_kafka_consume_queue(q, 0) : NULL;
}

/* The next source message: from the batch taken last, else while the
 * source queue gives messages up to KRETRY_SBUF_MAX of them for one lock;
 * once it was empty, its length is checked first. */
static rd_kafka_message_t *take_source(kretry_adapter_t *a) {
        if (a->sbuf_pos < a->sbuf_cnt)
                return a->sbuf[a->sbuf_pos++];
        a->sbuf_pos = a->sbuf_cnt = 0;
        if (a->sq_flowing) {
                ssize_t n = rd_kafka_consume_batch_queue(a->sq, 0, a->sbuf,
                                                         KRETRY_SBUF_MAX);
                if (n > 0) {
                        a->sbuf_cnt = (int)n;
                        a->sbuf_pos = 1;
                        return a->sbuf[0];
                }
                a->sq_flowing = 0;
                return NULL;
        }
        rd_kafka_message_t *rkm = take(a->sq);
        a->sq_flowing           = rkm != NULL;
        return rkm;
}

/* Whether @p m is of an element of @p l at or past its offset. */
/* The group's events first (served by consumer_poll: a message comes that
 * way only from a source partition whose forward is not set yet), then tier
 * messages: a source backlog prefetched ahead of them must not make due
 * retries wait (see rebalance.c). Every eighth take prefers the source, so
 * that it never starves. The consumer queue is looked at before every
 * take: a partition's first messages may still wait there when its later
 * ones reach the source queue, and taking those first would put its
 * offsets out of order. Each look at a queue is a lock: the tier queue is
 * looked at every take while it gives messages and every
 * KRETRY_SERVE_EVERY takes once it was empty (and again before the source
 * queue's end is taken as the end). */
static rd_kafka_message_t *next_message(kretry_adapter_t *a, int n) {
        rd_kafka_message_t *rkm = NULL;
        int look                = n % KRETRY_SERVE_EVERY == 0;
        if (rd_kafka_queue_length(a->cq) &&
            (rkm = rd_kafka_consumer_poll(a->consumer, 0)))
                return rkm;
        if (n % 8 == 7 && (rkm = take_source(a)))
                return rkm;
        if (look || a->tq_flowing) {
                if ((rkm = take(a->tq)))
                        return a->tq_flowing = 1, rkm;
                a->tq_flowing = 0;
        }
        if ((rkm = take_source(a)) || look)
                return rkm;
        return next_message(a, 0); /* nothing is left unseen */
}

/* The partition @p rkm was consumed from, or NULL when not assigned. */
static kretry_part_t *assigned_part(kretry_adapter_t *a,
                                    const rd_kafka_message_t *rkm) {
        /* The consumer's topic handles are librdkafka's own, which its
         * messages point to: a pointer compared per topic, not its name. */
        int tier = -1;
        for (int i = 0; i < a->topic_cnt && tier < 0; i++)
                if (rkm->rkt == a->rkts[i])
                        tier = i;
        if (tier < 0)
                tier = kretry_topic_index(a, rd_kafka_topic_name(rkm->rkt));
        kretry_part_t *part = kretry_part_find(a, tier, rkm->partition);
        return part && part->assigned ? part : NULL;
}

/* The breaker paused every partition: nothing is handled, but the consumer
 * is still polled, so rebalances and the group's traffic are served and
 * max.poll.interval.ms is never exceeded, however long the cool-down. A
 * message that still arrives (prefetched before the pause, or from a
 * partition assigned just now) is fetched again after the cool-down. The
 * caller then sleeps: a group event wakes it through the eventfd. */
static void serve_paused(kretry_adapter_t *a) {
        for (int n = 0; n < KRETRY_POLL_BATCH && !a->fatal; n++) {
                /* Batched before the breaker opened: fetched again after
                 * its cool-down, like the others (refetch_later drops
                 * the rest of their partition's). */
                rd_kafka_message_t *rkm = a->sbuf_pos < a->sbuf_cnt
                                                  ? a->sbuf[a->sbuf_pos++]
                                                  : take(a->tq);
                if (!rkm && !(rkm = take(a->sq)) &&
                    !(rkm = rd_kafka_consumer_poll(a->consumer, 0)))
                        return;
                kretry_part_t *part = rkm->err ? NULL : assigned_part(a, rkm);
                if (rkm->err)
                        consumer_error(a, rkm);
                if (part)
                        refetch_later(a, part, rkm,
                                      "while the breaker is open");
                else
                        rd_kafka_message_destroy(rkm);
        }
}

/* Handle what one consumed @p rkm calls for. */
static void consumed(kretry_adapter_t *a, rd_kafka_message_t *rkm) {
        if (rkm->err) {
                consumer_error(a, rkm);
                rd_kafka_message_destroy(rkm);
                return;
        }
        kretry_part_t *part = assigned_part(a, rkm);
        if (part && part->first < 0)
                part->first = rkm->offset;
        if (part)
                read_granted(a, part);
        if (!part)
                rd_kafka_message_destroy(rkm);
        else if (part->held || part->behind.cnt)
                keep_behind(a, part, rkm);
        else
                kretry_process(a, part, rkm);
}

/* Copies not yet acknowledged (tier, DLQ, changelog) are bounded by
 * max.inflight.copies: each keeps its source message, and so the Fetch
 * response holding it, allocated until its delivery report. Without this
 * bound a handler deciding faster than the broker acknowledges filled
 * librdkafka's producer queue (100,000 copies at its defaults: about 300 MB
 * of RSS through a 1,000,000-message retry hop). Not max.inflight.messages:
 * at 1,000 the copies' round trip to the broker cost a fifth of the retry
 * hop's throughput on real Kafka. A delivery report wakes the loop (the
 * producer queue signals the eventfd). */
static int copies_full(const kretry_adapter_t *a) {
        return a->inflight >= a->conf->max_inflight_copies;
}

int kretry_intake_consume(kretry_adapter_t *a) {
        int n;
        if (a->breaker_paused) {
                serve_paused(a);
                return 0;
        }
        /* max.inflight.messages or max.inflight.copies reached: no
         * message is taken, nothing is
         * paused (a pause drops what librdkafka prefetched), the group's
         * events are served; a result coming back wakes the loop. A
         * message on the consumer queue itself is taken all the same: its
         * partition's forward is being set (rebalance.c). */
        if (a->full || copies_full(a)) {
                rd_kafka_message_t *rkm;
                for (n = 0; n < KRETRY_POLL_BATCH && !a->fatal &&
                            (rkm = rd_kafka_consumer_poll(a->consumer, 0));
                     n++)
                        consumed(a, rkm);
                return n;
        }
        /* Polled once whatever else waits: it serves the group's events and
         * tells librdkafka the application is polling
         * (max.poll.interval.ms), which taking from tq and sq also does. */
        rd_kafka_message_t *first = rd_kafka_consumer_poll(a->consumer, 0);
        if (first)
                consumed(a, first);
        /* Nothing more is taken once the breaker paused every partition:
         * a message polled now would be skipped on resume. */
        for (n = 0;
             n < KRETRY_POLL_BATCH && !atomic_load(&a->stop) &&
             !a->breaker_paused && !a->full && !a->fatal && !copies_full(a);
             n++) {
                if (n > 0 && n % KRETRY_SERVE_EVERY == 0) {
                        int was = kretry_store_begin(a);
                        rd_kafka_poll(a->producer, 0);
                        kretry_store_end(a, was);
                        kretry_workers_reap(a);
                        if (a->held_list || a->src_wait_at)
                                kretry_intake_due(a, kretry_now_ms());
                }
                rd_kafka_message_t *rkm = next_message(a, n);
                if (!rkm)
                        return n + !!first;
                consumed(a, rkm);
        }
        /* A full batch: more may be waiting. A batch cut short by the
         * breaker, max.inflight.messages or a fatal error is not: the next
         * poll may sleep. */
        a->more = n >= KRETRY_POLL_BATCH;
        return n + !!first;
}
