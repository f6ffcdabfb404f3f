#include "ui_figures.h"

#include "dlq_ops.h"
#include "ops_time.h"
#include "stats_collect.h"
#include "ui_history.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One topology's last round. */
typedef struct {
        const kretry_topology_t *t;
        json_t *report; /* stats_report_json(), NULL before the first */
        int64_t at_ms;  /* when it was taken */
        char error[1024];
        int done; /* a round ended for it (report or error) */
        ui_history_t *history;
} slot_t;

/* Settings are fixed at start. Everything else is guarded by lock: the
 * slots, round_at, round_idle and rounds are written by the figures
 * thread, watched_at by requests (ui_figures_watch()), stop by
 * ui_figures_stop(). cond signals a finished round to waiting requests,
 * and a stop or a watcher after a quiet spell to the thread. Times named
 * _at without _ms are CLOCK_MONOTONIC milliseconds. */
struct ui_figures_s {
        const kretry_topology_file_t *f;
        const char *bootstrap;
        int64_t window_ms;
        ui_figures_pace_t pace;
        int timeout_ms;
        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC */
        slot_t *slots;
        size_t n;
        int64_t watched_at; /* the last request; 0: none yet */
        int64_t round_at;   /* when the last finished round started */
        int round_idle;     /* nobody watched when it started */
        uint64_t rounds;    /* rounds finished */
        int stop, started;
        pthread_t thread;
};

static void deadline_at(struct timespec *ts, int64_t at) {
        ts->tv_sec  = (time_t)(at / 1000);
        ts->tv_nsec = (long)(at % 1000) * 1000000;
}

static void deadline_in(struct timespec *ts, int64_t ms) {
        deadline_at(ts, ops_mono_ms() + ms);
}

/* Under the lock. */
static int watched(const ui_figures_t *g, int64_t now) {
        return g->watched_at && now - g->watched_at < g->pace.watch_ms;
}

/* When the next round is due: an interval after the last one while
 * someone watches, an idle interval otherwise. Under the lock. */
static int64_t next_round_at(const ui_figures_t *g, int64_t now) {
        return g->round_at + (watched(g, now) ? g->pace.interval_ms
                                              : g->pace.idle_interval_ms);
}

/* The last round was taken while nobody watched and is older than an
 * interval: a request waits for the next one (which its watch starts at
 * once) rather than show figures up to an idle interval old. Under the
 * lock. */
static int stale(const ui_figures_t *g, int64_t now, int64_t margin_ms) {
        return g->rounds && g->round_idle &&
               now - g->round_at + margin_ms >= g->pace.interval_ms;
}

/* One topology's figures, taken without the lock, then published. */
static void take(ui_figures_t *g, slot_t *s) {
        char errstr[1024] = "";
        stats_report_t *r =
                stats_collect(g->f, s->t, g->bootstrap, g->window_ms,
                              g->timeout_ms, 0, errstr, sizeof(errstr));
        json_t *j = r ? stats_report_json(r) : NULL;
        pthread_mutex_lock(&g->lock);
        if (j) {
                json_decref(s->report);
                s->report   = j;
                s->at_ms    = r->at_ms;
                s->error[0] = '\0';
                ui_history_add(s->history, r);
        } else {
                snprintf(s->error, sizeof(s->error), "%s",
                         errstr[0] ? errstr : "out of memory");
        }
        s->done = 1;
        pthread_cond_broadcast(&g->cond);
        pthread_mutex_unlock(&g->lock);
        stats_report_free(r);
}

/* Wait until the next round is due or a stop; a watcher arriving wakes
 * the wait, which then measures again. Under the lock. */
static void wait_round(ui_figures_t *g) {
        struct timespec until;
        while (!g->stop) {
                int64_t now = ops_mono_ms(), due = next_round_at(g, now);
                if (due <= now)
                        return;
                deadline_at(&until, due);
                pthread_cond_timedwait(&g->cond, &g->lock, &until);
        }
}

static void *run(void *arg) {
        ui_figures_t *g = arg;
        pthread_mutex_lock(&g->lock);
        while (!g->stop) {
                int64_t at = ops_mono_ms();
                int idle   = !watched(g, at);
                for (size_t i = 0; i < g->n && !g->stop; i++) {
                        pthread_mutex_unlock(&g->lock);
                        take(g, &g->slots[i]);
                        pthread_mutex_lock(&g->lock);
                }
                g->round_at   = at;
                g->round_idle = idle;
                g->rounds++;
                pthread_cond_broadcast(&g->cond);
                wait_round(g);
        }
        pthread_mutex_unlock(&g->lock);
        return NULL;
}

ui_figures_t *ui_figures_start(const kretry_topology_file_t *f,
                               const char *bootstrap,
                               int64_t window_ms,
                               int timeout_ms,
                               const ui_figures_pace_t *pace) {
        pthread_condattr_t ca;
        ui_figures_t *g = calloc(1, sizeof(*g));
        if (!g)
                return NULL;
        g->f          = f;
        g->bootstrap  = bootstrap;
        g->window_ms  = window_ms;
        g->timeout_ms = timeout_ms;
        g->pace       = *pace;
        pthread_mutex_init(&g->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&g->cond, &ca);
        pthread_condattr_destroy(&ca);
        g->n = kretry_topology_count(f);
        if (!(g->slots = calloc(g->n ? g->n : 1, sizeof(*g->slots))))
                goto err;
        for (size_t i = 0; i < g->n; i++) {
                g->slots[i].t = kretry_topology_at(f, i);
                if (!(g->slots[i].history = ui_history_new(UI_HISTORY_SAMPLES)))
                        goto err;
        }
        if (pthread_create(&g->thread, NULL, run, g))
                goto err;
        g->started = 1;
        return g;
err:
        ui_figures_stop(g);
        return NULL;
}

void ui_figures_stop(ui_figures_t *g) {
        if (!g)
                return;
        pthread_mutex_lock(&g->lock);
        g->stop = 1;
        pthread_cond_broadcast(&g->cond);
        pthread_mutex_unlock(&g->lock);
        if (g->started)
                pthread_join(g->thread, NULL);
        for (size_t i = 0; g->slots && i < g->n; i++) {
                json_decref(g->slots[i].report);
                ui_history_destroy(g->slots[i].history);
        }
        free(g->slots);
        pthread_cond_destroy(&g->cond);
        pthread_mutex_destroy(&g->lock);
        free(g);
}

/* Under the lock. */
static int all_done(const ui_figures_t *g) {
        for (size_t i = 0; i < g->n; i++)
                if (!g->slots[i].done)
                        return 0;
        return 1;
}

/* A second of margin: what a polling thread found fresh is still fresh
 * when it reads it, so ui_figures_reports() does not wait there. */
int ui_figures_fresh(ui_figures_t *g) {
        pthread_mutex_lock(&g->lock);
        int ready = all_done(g) && !stale(g, ops_mono_ms(), 1000);
        pthread_mutex_unlock(&g->lock);
        return ready;
}

void ui_figures_watch(ui_figures_t *g) {
        pthread_mutex_lock(&g->lock);
        int64_t now = ops_mono_ms();
        if (!watched(g, now))
                pthread_cond_broadcast(&g->cond); /* the thread may be due */
        g->watched_at = now;
        pthread_mutex_unlock(&g->lock);
}

uint64_t ui_figures_rounds(ui_figures_t *g) {
        pthread_mutex_lock(&g->lock);
        uint64_t n = g->rounds;
        pthread_mutex_unlock(&g->lock);
        return n;
}

/* The report of slot @p s with its age; under the lock. */
static json_t *
slot_report(const slot_t *s, int64_t now, char *errstr, size_t errstr_size) {
        if (s->error[0]) {
                snprintf(errstr, errstr_size, "%s", s->error);
                return NULL;
        }
        json_t *j = json_deep_copy(s->report);
        json_object_set_new(j, "age_ms", json_integer(now - s->at_ms));
        return j;
}

json_t *ui_figures_reports(ui_figures_t *g,
                           const char *name,
                           int wait_ms,
                           int64_t *computed_at,
                           char *errstr,
                           size_t errstr_size) {
        struct timespec until;
        json_t *arr  = json_array();
        int64_t now  = dlq_now_ms();
        *computed_at = now;
        ui_figures_watch(g);
        deadline_in(&until, wait_ms);
        pthread_mutex_lock(&g->lock);
        /* a round that finishes from now on started after the watch */
        uint64_t fresh = g->rounds + (stale(g, ops_mono_ms(), 0) ? 1 : 0);
        while ((!all_done(g) || g->rounds < fresh) && !g->stop &&
               pthread_cond_timedwait(&g->cond, &g->lock, &until) == 0)
                ;
        *computed_at = now = dlq_now_ms();
        if (!all_done(g)) {
                snprintf(errstr, errstr_size,
                         "the figures are not taken yet (the cluster did not "
                         "answer within %d ms)",
                         wait_ms);
                json_decref(arr);
                arr = NULL;
        }
        for (size_t i = 0; arr && i < g->n; i++) {
                const slot_t *s = &g->slots[i];
                if (name && strcmp(name, s->t->name))
                        continue;
                json_t *j = slot_report(s, now, errstr, errstr_size);
                if (!j) {
                        json_decref(arr);
                        arr = NULL;
                        break;
                }
                json_array_append_new(arr, j);
                if (s->at_ms < *computed_at)
                        *computed_at = s->at_ms;
        }
        pthread_mutex_unlock(&g->lock);
        return arr;
}

json_t *
ui_figures_history(ui_figures_t *g, const char *name, int64_t since_ms) {
        json_t *j = NULL;
        /* The ring holds UI_HISTORY_SAMPLES; idle rounds are further apart,
         * so it may reach back further than the span. */
        int64_t from = dlq_now_ms() - UI_HISTORY_SPAN_MS;
        if (since_ms < from)
                since_ms = from;
        pthread_mutex_lock(&g->lock);
        for (size_t i = 0; !j && i < g->n; i++)
                if (!strcmp(name, g->slots[i].t->name)) {
                        j = ui_history_json(g->slots[i].history, since_ms);
                        json_object_set_new(j, "topology", json_string(name));
                        json_object_set_new(j, "interval_ms",
                                            json_integer(g->pace.interval_ms));
                        json_object_set_new(
                                j, "idle_interval_ms",
                                json_integer(g->pace.idle_interval_ms));
                }
        pthread_mutex_unlock(&g->lock);
        return j;
}
