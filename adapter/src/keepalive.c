/*
 * Keeping the group membership of a consumer whose handler runs long.
 * librdkafka leaves the group when the application does not poll within
 * max.poll.interval.ms; the handler runs on the polling thread, so a slow
 * handler (a long HTTP call, a lock) would get the instance kicked out and
 * its partitions moved. A small thread watches the handler: when one call
 * has been running for a whole tick, it blocks in a poll on a private, empty
 * queue of the consumer — librdkafka does not enforce the interval while the
 * application blocks in a poll — until the handler returns. Nothing is
 * consumed and no callback runs on that thread. Cost on the hot path: two
 * relaxed atomic increments per handler call.
 */
#include "adapter_int.h"

#include <errno.h>
#include <time.h>

#define KRETRY_KEEPALIVE_TICK_MS 1000

static void *keepalive_main(void *arg) {
        kretry_adapter_t *a = arg;
        unsigned long seen  = 0;
        pthread_mutex_lock(&a->ka_lock);
        while (!a->ka_stop) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += KRETRY_KEEPALIVE_TICK_MS / 1000;
                pthread_cond_timedwait(&a->ka_cond, &a->ka_lock, &ts);
                unsigned long seq =
                        atomic_load_explicit(&a->ka_seq, memory_order_relaxed);
                /* Odd: a handler call is running; the same odd value a tick
                 * later: it has run for a whole tick. */
                if (!(seq & 1) || seq != seen) {
                        seen = seq;
                        continue;
                }
                pthread_mutex_unlock(&a->ka_lock);
                atomic_fetch_add_explicit(&a->stats.keepalives, 1,
                                          memory_order_relaxed);
                while (atomic_load_explicit(&a->ka_seq, memory_order_relaxed) ==
                               seq &&
                       !a->ka_stop) {
                        rd_kafka_event_t *ev =
                                rd_kafka_queue_poll(a->ka_queue, 200);
                        if (ev)
                                rd_kafka_event_destroy(ev);
                }
                pthread_mutex_lock(&a->ka_lock);
        }
        pthread_mutex_unlock(&a->ka_lock);
        return NULL;
}

int kretry_keepalive_start(kretry_adapter_t *a) {
        a->ka_queue = rd_kafka_queue_new(a->consumer);
        if (!a->ka_queue)
                return -1;
        pthread_mutex_init(&a->ka_lock, NULL);
        pthread_cond_init(&a->ka_cond, NULL);
        if (pthread_create(&a->ka_thread, NULL, keepalive_main, a)) {
                pthread_cond_destroy(&a->ka_cond);
                pthread_mutex_destroy(&a->ka_lock);
                rd_kafka_queue_destroy(a->ka_queue);
                a->ka_queue = NULL;
                return -1;
        }
        a->ka_running = 1;
        return 0;
}

void kretry_keepalive_stop(kretry_adapter_t *a) {
        if (!a->ka_running)
                return;
        pthread_mutex_lock(&a->ka_lock);
        a->ka_stop = 1;
        pthread_cond_signal(&a->ka_cond);
        pthread_mutex_unlock(&a->ka_lock);
        pthread_join(a->ka_thread, NULL);
        pthread_cond_destroy(&a->ka_cond);
        pthread_mutex_destroy(&a->ka_lock);
        rd_kafka_queue_destroy(a->ka_queue);
        a->ka_queue   = NULL;
        a->ka_running = 0;
}
