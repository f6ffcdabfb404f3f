/*
 * kretry ui's replay: one job at a time, run by dlq_replay_run() — the
 * replay of kretry dlq replay, resumable through the same progress group —
 * on a thread of its own, its counters read by GET /api/replay/ID. The
 * request's JSON (a filter, chosen rows, rate, target, dry run) becomes the
 * command's options; the target can only be the topology's source or one
 * of its tiers.
 */
#include "ui.h"

#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

/* Owned by ui_t.lock's holder, except: ctl (dlq_replay_ctl_t's rules),
 * running, and rc/ended_ms, written by the job's thread before it clears
 * running. */
struct ui_job_s {
        int64_t id;
        pthread_t th;
        dlq_replay_ctl_t ctl;
        dlq_opts_t o;
        dlq_target_t tg;
        const char *target; /* topic */
        json_t *body;       /* holds the strings o points into */
        dlq_row_t *rows;
        atomic_int running;
        int rc;
        int64_t started_ms;
        atomic_llong ended_ms;
        /* A dry run that resumes: matching messages before its resume
         * point, which it did not count (-1: not known or not asked). */
        atomic_llong before_resume;
};

/* A job whose thread never started. */
static void job_discard(ui_job_t *j) {
        json_decref(j->body);
        free(j->rows);
        free(j);
}

static void job_free(ui_job_t *j) {
        if (!j)
                return;
        pthread_join(j->th, NULL);
        job_discard(j);
}

static void *job_main(void *arg) {
        ui_job_t *j = arg;
        prctl(PR_SET_NAME, "kretry:replay", 0, 0, 0); /* for top -H, perf */
        j->rc = dlq_replay_run(&j->o, &j->tg, &j->ctl);
        if (!j->rc && j->o.dry_run && !j->o.restart &&
            !atomic_load(&j->ctl.stop)) {
                /* The replay trap: a filter that matches nothing after the
                 * progress of an earlier replay may match messages before
                 * it; the page offers to include them (restart). */
                char err[512];
                atomic_store(&j->before_resume,
                             dlq_replay_before_resume(&j->o, &j->tg, err,
                                                      sizeof(err)));
        }
        atomic_store(&j->ended_ms, dlq_now_ms());
        /* The operator's record of what was written, as the command's
         * summary line is. */
        fprintf(stderr,
                "kretry ui: replay %lld %s: %lld message%s %s to %s (%lld "
                "read from %s)%s%s\n",
                (long long)j->id,
                j->rc                       ? "failed"
                : atomic_load(&j->ctl.stop) ? "stopped"
                                            : "done",
                (long long)atomic_load(&j->ctl.replayed),
                atomic_load(&j->ctl.replayed) == 1 ? "" : "s",
                j->o.dry_run ? "would be replayed" : "replayed", j->target,
                (long long)atomic_load(&j->ctl.read), j->tg.t->dlq,
                j->ctl.error[0] ? ": " : "", j->ctl.error);
        atomic_store(&j->running, 0);
        return NULL;
}

static json_t *job_json(ui_job_t *j) {
        int running       = atomic_load(&j->running);
        json_t *o         = json_object();
        const char *state = running                     ? "running"
                            : j->rc                     ? "failed"
                            : atomic_load(&j->ctl.stop) ? "stopped"
                                                        : "done";
        long long ended   = atomic_load(&j->ended_ms);
        json_object_set_new(o, "id", json_integer(j->id));
        json_object_set_new(o, "state", json_string(state));
        json_object_set_new(o, "dry_run", json_boolean(j->o.dry_run));
        json_object_set_new(o, "topology", json_string(j->tg.t->name));
        json_object_set_new(o, "target", json_string(j->target));
        json_object_set_new(o, "rate", json_real(j->o.rate));
        json_object_set_new(o, "total",
                            json_integer(atomic_load(&j->ctl.total)));
        json_object_set_new(o, "read", json_integer(atomic_load(&j->ctl.read)));
        json_object_set_new(o, "replayed",
                            json_integer(atomic_load(&j->ctl.replayed)));
        long long before = atomic_load(&j->before_resume);
        json_object_set_new(o, "before_resume",
                            !running && before >= 0 ? json_integer(before)
                                                    : json_null());
        json_object_set_new(o, "started_at", json_integer(j->started_ms));
        json_object_set_new(o, "ended_at",
                            ended ? json_integer(ended) : json_null());
        json_object_set_new(o, "error",
                            !running && j->ctl.error[0]
                                    ? json_string(j->ctl.error)
                                    : json_null());
        return o;
}

static ui_job_t *job_new(ui_req_t *q,
                         const kretry_topology_t *t,
                         json_t *body,
                         ui_reply_t *out) {
        char err[512];
        ui_job_t *j = calloc(1, sizeof(*j));
        if (!j) {
                ui_reply_error(out, 500, "out of memory");
                return NULL;
        }
        ui_opts_init(q->ui, &j->o);
        atomic_store(&j->before_resume, -1);
        j->o.show_value = 0;
        j->tg           = (dlq_target_t){q->ui->f, t};
        j->body         = json_incref(body);
        int rc = ui_replay_body(body, t, &j->o, &j->rows, err, sizeof(err));
        if (rc) {
                if (rc == -2)
                        ui_reply_error(out, 500, "out of memory");
                else
                        ui_reply_error(out, 400, "%s", err);
                job_discard(j);
                return NULL;
        }
        int tier  = dlq_replay_tier(j->o.to, t);
        j->target = tier ? t->tier_topics[tier - 1] : t->source;
        return j;
}

void ui_replay_post(ui_req_t *q,
                    const kretry_topology_t *t,
                    json_t *body,
                    ui_reply_t *out) {
        ui_t *ui    = q->ui;
        ui_job_t *j = job_new(q, t, body, out);
        if (!j)
                return;
        pthread_mutex_lock(&ui->lock);
        if (ui->job && atomic_load(&ui->job->running)) {
                ui_reply_error(out, 409,
                               "replay %lld is still running (GET "
                               "/api/replay/%lld; POST .../stop ends it)",
                               (long long)ui->job->id, (long long)ui->job->id);
                pthread_mutex_unlock(&ui->lock);
                job_discard(j);
                return;
        }
        job_free(ui->job);
        ui->job       = j;
        j->id         = ++ui->next_job_id;
        j->started_ms = dlq_now_ms();
        fprintf(stderr,
                "kretry ui: replay %lld started: %s of topology %s into %s "
                "at %g/s%s\n",
                (long long)j->id, j->o.rows ? "chosen rows" : "the filter",
                t->name, j->target, j->o.rate,
                j->o.dry_run ? " (dry run)" : "");
        atomic_store(&j->running, 1);
        if (pthread_create(&j->th, NULL, job_main, j)) {
                ui->job = NULL;
                job_discard(j);
                ui_reply_error(out, 500, "cannot start the replay thread");
        } else {
                ui_reply_json(out, 202, job_json(j));
        }
        pthread_mutex_unlock(&ui->lock);
}

void ui_replay_get(ui_req_t *q, int64_t id, int stop, ui_reply_t *out) {
        ui_t *ui = q->ui;
        pthread_mutex_lock(&ui->lock);
        ui_job_t *j = ui->job && ui->job->id == id ? ui->job : NULL;
        if (!j)
                ui_reply_error(out, 404,
                               "no replay %lld (only the last one "
                               "is kept)",
                               (long long)id);
        else {
                if (stop)
                        atomic_store(&j->ctl.stop, 1);
                ui_reply_json(out, stop ? 202 : 200, job_json(j));
        }
        pthread_mutex_unlock(&ui->lock);
}

void ui_replay_shutdown(ui_t *ui) {
        pthread_mutex_lock(&ui->lock);
        if (ui->job)
                atomic_store(&ui->job->ctl.stop, 1);
        job_free(ui->job);
        ui->job = NULL;
        pthread_mutex_unlock(&ui->lock);
}
