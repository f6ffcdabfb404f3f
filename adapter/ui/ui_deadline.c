#include "ui_deadline.h"

#include "ops_time.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

/* One TCP connection; every field guarded by ui_deadline_t.lock. */
typedef struct track_s {
        struct track_s *prev, *next;
        int fd;
        int64_t since_ms; /* when its current request began */
        int reading;      /* its headers are not complete */
        int cut;          /* shut down by the reaper */
} track_t;

struct ui_deadline_s {
        int64_t deadline_ms;
        int max_waiting;
        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC: the reaper's stop */
        track_t *head;
        int stop, started;
        pthread_t reaper;
};

/* Under the lock. */
static void reap(ui_deadline_t *d, int64_t now) {
        for (track_t *t = d->head; t; t = t->next)
                if (t->reading && !t->cut &&
                    now - t->since_ms > d->deadline_ms) {
                        shutdown(t->fd, SHUT_RDWR);
                        t->cut = 1;
                }
}

/* Under the lock: shut down the connections that waited longest for their
 * headers until fewer than max_waiting wait, making room for one more. A
 * scan per accept: a few hundred connections at most. */
static void shed(ui_deadline_t *d) {
        for (;;) {
                track_t *oldest = NULL;
                int waiting     = 0;
                for (track_t *t = d->head; t; t = t->next) {
                        if (!t->reading || t->cut)
                                continue;
                        waiting++;
                        if (!oldest || t->since_ms <= oldest->since_ms)
                                oldest = t;
                }
                if (waiting < d->max_waiting || !oldest)
                        return;
                shutdown(oldest->fd, SHUT_RDWR);
                oldest->cut = 1;
        }
}

static void *reaper(void *arg) {
        ui_deadline_t *d = arg;
        struct timespec ts;
        pthread_mutex_lock(&d->lock);
        while (!d->stop) {
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_sec += 1; /* a second late at most */
                pthread_cond_timedwait(&d->cond, &d->lock, &ts);
                reap(d, ops_mono_ms());
        }
        pthread_mutex_unlock(&d->lock);
        return NULL;
}

ui_deadline_t *ui_deadline_start(int64_t deadline_ms, int max_waiting) {
        pthread_condattr_t ca;
        ui_deadline_t *d = calloc(1, sizeof(*d));
        if (!d)
                return NULL;
        d->deadline_ms = deadline_ms;
        d->max_waiting = max_waiting;
        pthread_mutex_init(&d->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&d->cond, &ca);
        pthread_condattr_destroy(&ca);
        if (pthread_create(&d->reaper, NULL, reaper, d)) {
                ui_deadline_stop(d);
                return NULL;
        }
        d->started = 1;
        return d;
}

void ui_deadline_stop(ui_deadline_t *d) {
        if (!d)
                return;
        pthread_mutex_lock(&d->lock);
        d->stop = 1;
        pthread_cond_signal(&d->cond);
        pthread_mutex_unlock(&d->lock);
        if (d->started)
                pthread_join(d->reaper, NULL);
        while (d->head) { /* none once the daemon stopped; defensive */
                track_t *t = d->head;
                d->head    = t->next;
                free(t);
        }
        pthread_cond_destroy(&d->cond);
        pthread_mutex_destroy(&d->lock);
        free(d);
}

static void track_add(ui_deadline_t *d, struct MHD_Connection *c, void **sc) {
        const union MHD_ConnectionInfo *fd =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        track_t *t = fd ? calloc(1, sizeof(*t)) : NULL;
        *sc        = t;
        if (!t)
                return; /* not tracked: the idle timeout still applies */
        t->fd       = fd->connect_fd;
        t->since_ms = ops_mono_ms();
        t->reading  = 1;
        pthread_mutex_lock(&d->lock);
        shed(d);
        t->next = d->head;
        if (d->head)
                d->head->prev = t;
        d->head = t;
        pthread_mutex_unlock(&d->lock);
}

static void track_remove(ui_deadline_t *d, track_t *t) {
        pthread_mutex_lock(&d->lock);
        if (t->prev)
                t->prev->next = t->next;
        else
                d->head = t->next;
        if (t->next)
                t->next->prev = t->prev;
        pthread_mutex_unlock(&d->lock);
        free(t);
}

void ui_deadline_notify(void *cls,
                        struct MHD_Connection *c,
                        void **socket_context,
                        enum MHD_ConnectionNotificationCode toe) {
        ui_deadline_t *d = cls;
        if (toe == MHD_CONNECTION_NOTIFY_STARTED)
                track_add(d, c, socket_context);
        else if (*socket_context) {
                track_remove(d, *socket_context);
                *socket_context = NULL;
        }
}

void ui_deadline_reading(ui_deadline_t *d,
                         struct MHD_Connection *c,
                         int reading) {
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        track_t *t = info ? info->socket_context : NULL;
        if (!d || !t)
                return;
        pthread_mutex_lock(&d->lock);
        t->reading  = reading;
        t->since_ms = ops_mono_ms();
        pthread_mutex_unlock(&d->lock);
}
