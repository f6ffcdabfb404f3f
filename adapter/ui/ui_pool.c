#include "ui_pool.h"

#include <pthread.h>
#include <stdlib.h>

/* Owner: the queue (head, tail, queued, stopping) is guarded by lock;
 * threads and n are written once by ui_pool_new(). */
struct ui_pool_s {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        ui_work_t *head, *tail;
        size_t queued, max_queued;
        int stopping;
        int n;
        pthread_t *threads;
};

/* The next item, or NULL once the pool stops. */
static ui_work_t *take(ui_pool_t *p) {
        pthread_mutex_lock(&p->lock);
        while (!p->head && !p->stopping)
                pthread_cond_wait(&p->cond, &p->lock);
        ui_work_t *w = p->stopping ? NULL : p->head;
        if (w) {
                p->head = w->next;
                if (!p->head)
                        p->tail = NULL;
                p->queued--;
        }
        pthread_mutex_unlock(&p->lock);
        return w;
}

static void *worker(void *arg) {
        ui_pool_t *p = arg;
        ui_work_t *w;
        while ((w = take(p)))
                w->run(w, 0);
        return NULL;
}

ui_pool_t *ui_pool_new(int threads, size_t max_queued) {
        ui_pool_t *p = calloc(1, sizeof(*p));
        if (!p)
                return NULL;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        p->max_queued = max_queued;
        if (!(p->threads = calloc((size_t)threads, sizeof(*p->threads))))
                goto err;
        for (; p->n < threads; p->n++)
                if (pthread_create(&p->threads[p->n], NULL, worker, p))
                        goto err;
        return p;
err:
        ui_pool_destroy(p);
        return NULL;
}

int ui_pool_push(ui_pool_t *p, ui_work_t *w) {
        int rc = -1;
        pthread_mutex_lock(&p->lock);
        if (!p->stopping && p->queued < p->max_queued) {
                w->next = NULL;
                if (p->tail)
                        p->tail->next = w;
                else
                        p->head = w;
                p->tail = w;
                p->queued++;
                pthread_cond_signal(&p->cond);
                rc = 0;
        }
        pthread_mutex_unlock(&p->lock);
        return rc;
}

size_t ui_pool_queued(ui_pool_t *p) {
        pthread_mutex_lock(&p->lock);
        size_t n = p->queued;
        pthread_mutex_unlock(&p->lock);
        return n;
}

void ui_pool_stop(ui_pool_t *p) {
        if (!p)
                return;
        pthread_mutex_lock(&p->lock);
        int n        = p->n;
        p->n         = 0; /* joined once */
        p->stopping  = 1;
        ui_work_t *w = p->head;
        p->head = p->tail = NULL;
        p->queued         = 0;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        for (int i = 0; i < n; i++)
                pthread_join(p->threads[i], NULL);
        while (w) {
                ui_work_t *next = w->next;
                w->run(w, 1);
                w = next;
        }
}

void ui_pool_destroy(ui_pool_t *p) {
        if (!p)
                return;
        ui_pool_stop(p);
        free(p->threads);
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        free(p);
}
