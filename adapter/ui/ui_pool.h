/*
 * kretry ui's workers: a fixed pool of threads and one bounded queue, for
 * the requests that wait on the cluster (a DLQ page, a message, an
 * export). libmicrohttpd's polling threads never block on Kafka: they
 * suspend the connection and queue the request; a worker answers it and
 * resumes the connection. So a slow cluster, or many connections that
 * never finish their headers, cannot take every thread.
 *
 * Threads: ui_pool_push() from any thread (libmicrohttpd's); each item's
 * run() on a worker; ui_pool_stop() and ui_pool_destroy() from the thread
 * that made the pool, destroy once nothing can push any more.
 */
#ifndef KRETRY_UI_POOL_H
#define KRETRY_UI_POOL_H

#include <stddef.h>

typedef struct ui_pool_s ui_pool_t;

/* One queued request. The pool links items through @c next; the caller
 * owns the item (the pool never frees it). run() is called exactly once,
 * with @p cancelled set when the pool was destroyed before a worker took
 * the item (run() must then answer without waiting on anything). */
typedef struct ui_work_s {
        struct ui_work_s *next;
        void (*run)(struct ui_work_s *w, int cancelled);
} ui_work_t;

/* @p threads workers, at most @p max_queued items waiting. NULL when
 * threads or memory ran out. */
ui_pool_t *ui_pool_new(int threads, size_t max_queued);

/* Queue @p w. Returns 0, or -1 when the queue is full or the pool is
 * stopping (the caller answers 503; run() will not be called). */
int ui_pool_push(ui_pool_t *p, ui_work_t *w);

/* Items waiting (not yet taken by a worker). */
size_t ui_pool_queued(ui_pool_t *p);

/* Lets the running items finish, cancels the waiting ones (their run()
 * with cancelled = 1) and joins the workers; ui_pool_push() refuses from
 * then on. Once is enough; NULL is accepted. */
void ui_pool_stop(ui_pool_t *p);

/* ui_pool_stop(), then frees the pool; NULL is accepted. */
void ui_pool_destroy(ui_pool_t *p);

#endif
