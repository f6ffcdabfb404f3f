/*
 * kretry dlq replay on the terminal: dlq_replay_run() (adapter/ops/) with
 * SIGINT/SIGTERM as its stop, a dry run's listing and a summary on stdout,
 * a progress bar and the reason of a failure on stderr.
 */
#include "cli.h"
#include "dlq_cli.h"

#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define PROG "kretry dlq replay"

/* The replay's control: static, for the signal handler, which may run
 * after the replay returned (atomic_int is lock-free, so storing to it
 * there is safe). One replay per process. */
static dlq_replay_ctl_t ctl;

static void on_signal(int sig) {
        (void)sig;
        atomic_store(&ctl.stop, 1);
}

typedef struct {
        const dlq_opts_t *o;
        int tty;
        int64_t start_us, last_progress_us;
} view_t;

static int64_t mono_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void refuse_target(const char *to, const kretry_topology_t *t) {
        fprintf(stderr,
                PROG ": --to %s is not a target of topology \"%s\": use "
                     "source (%s) or tier:1..%d (",
                to, t->name, t->source, t->tier_cnt);
        for (int i = 0; i < t->tier_cnt; i++)
                fprintf(stderr, "%s%s", i ? ", " : "", t->tier_topics[i]);
        fprintf(stderr, ")\n");
}

static void progress(view_t *v, dlq_replay_ctl_t *ctl, int final) {
        int64_t now = mono_us();
        if (!v->tty || (!final && now - v->last_progress_us < 100000))
                return;
        v->last_progress_us = now;
        long long read      = atomic_load(&ctl->read);
        long long replayed  = atomic_load(&ctl->replayed);
        long long total     = atomic_load(&ctl->total);
        long long whole     = total > 0 ? total : 1;
        int width = 30, fill = (int)(read * width / whole);
        char bar[31];
        for (int i = 0; i < width; i++)
                bar[i] = i < fill ? '#' : '.';
        bar[width]  = '\0';
        double secs = (double)(now - v->start_us) / 1e6;
        fprintf(stderr, "\r[%s] %lld/%lld read, %lld replayed, %.0f/s ", bar,
                read, total, replayed,
                secs > 0 ? (double)replayed / secs : 0.0);
        if (final)
                fputc('\n', stderr);
}

static void on_event(dlq_replay_ctl_t *ctl,
                     dlq_replay_event_t ev,
                     const rd_kafka_message_t *m,
                     void *opaque) {
        view_t *v = opaque;
        switch (ev) {
        case DLQ_REPLAY_STARTED:
                if (v->o->dry_run)
                        dlq_print_heading(stdout, v->o->show_value);
                v->start_us = mono_us();
                break;
        case DLQ_REPLAY_LISTED:
                dlq_print_message(stdout, m, v->o, dlq_now_ms());
                break;
        case DLQ_REPLAY_PROGRESS:
                progress(v, ctl, 0);
                break;
        case DLQ_REPLAY_ENDED:
                progress(v, ctl, 1);
                break;
        }
}

static void summary(const view_t *v,
                    dlq_replay_ctl_t *ctl,
                    const kretry_topology_t *t,
                    int ok) {
        const dlq_opts_t *o = v->o;
        double secs         = (double)(mono_us() - v->start_us) / 1e6;
        long long read      = atomic_load(&ctl->read);
        long long replayed  = atomic_load(&ctl->replayed);
        if (o->dry_run) {
                printf("dry run: %lld message%s would be replayed to %s "
                       "(%lld read from %s); nothing was written\n",
                       replayed, replayed == 1 ? "" : "s", ctl->target, read,
                       t->dlq);
                return;
        }
        printf("%s %lld message%s to %s in %.1fs (%lld read from %s)%s; "
               "progress committed under group %s\n",
               ok ? (atomic_load(&ctl->stop) ? "stopped after replaying"
                                             : "replayed")
                  : "failed after replaying",
               replayed, replayed == 1 ? "" : "s", ctl->target, secs, read,
               t->dlq, o->max && replayed >= o->max ? " (--max reached)" : "",
               ctl->group);
}

int dlq_replay(const dlq_opts_t *o, const dlq_target_t *tg) {
        if (dlq_replay_tier(o->to, tg->t) < 0) {
                refuse_target(o->to, tg->t);
                return KRETRY_EX_USAGE;
        }
        view_t v            = {.o = o, .tty = !o->dry_run && isatty(2)};
        ctl.event_cb        = on_event;
        ctl.opaque          = &v;
        struct sigaction sa = {.sa_handler = on_signal,
                               .sa_flags   = (int)SA_RESETHAND};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        int rc = dlq_replay_run(o, tg, &ctl);
        if (ctl.error[0])
                fprintf(stderr, PROG ": %s\n", ctl.error);
        if (v.start_us)
                summary(&v, &ctl, tg->t, rc == 0);
        return rc;
}
