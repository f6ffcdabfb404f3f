/*
 * kretry ui: one process serving a topology file's figures, its DLQ
 * browser, replay and export over HTTP (libmicrohttpd), and the page that
 * uses them. Every answer comes from the operations the command line uses
 * too (adapter/ops/): stats_collect() (kretry stats), dlq_message_json()
 * and the DLQ reader (dlq inspect), dlq_replay_run() (dlq replay),
 * dlq_export_file() (dlq export).
 *
 * Threads: libmicrohttpd's fixed pool of polling threads reads requests
 * and answers the quick routes (ui_api_quick()); the rest run on
 * ui_pool.c's workers; a request's Kafka clients are its own. One more
 * thread takes the figures and history (ui_figures.c, its own lock), one
 * reaps connections past the header deadline (ui_deadline.c, its own
 * lock), and each replay job runs on a thread of its own. What they share
 * is read-only after start-up (ui_t's settings and the loaded topology
 * file), except the replay job, which ui_t.lock guards; a job's counters
 * are atomics its own thread writes.
 */
#ifndef KRETRY_UI_H
#define KRETRY_UI_H

#include "dlq_ops.h"
#include "topology.h"
#include "ui_body.h"
#include "ui_deadline.h"
#include "ui_figures.h"
#include "ui_http.h"
#include "ui_pool.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdint.h>

typedef struct ui_job_s ui_job_t;

typedef struct {
        /* settings, fixed once serving */
        const char *file;
        kretry_topology_file_t *f;
        const char *bootstrap; /* NULL: the file's */
        const char *token;     /* NULL: none (loopback only) */
        int show_values;
        int timeout_ms;
        int64_t window_ms; /* default rate window of the figures */
        ui_listen_t listen;
        int port; /* the bound port */
        struct MHD_Daemon *d;
        ui_pool_t *pool;         /* the workers of the requests that wait */
        ui_deadline_t *deadline; /* the header deadline's reaper */
        ui_figures_t *figures;   /* the figures and history, taken behind */
        /* the replay job: the running one, or the last */
        pthread_mutex_t lock;
        ui_job_t *job;
        int64_t next_job_id;
} ui_t;

/* What a request is answered with. */
typedef struct {
        unsigned status;
        const char *type;
        char *body; /* malloc'd; NULL with fd */
        size_t len;
        int fd; /* -1, or a file to send (closed by the response) */
        uint64_t fd_size;
        char disposition[128]; /* Content-Disposition, "" for none */
} ui_reply_t;

typedef struct {
        ui_t *ui;
        struct MHD_Connection *c;
        const char *method, *path;
        const char *body; /* POST only */
        size_t body_len;
} ui_req_t;

/* Answer an authorised request (ui_server.c checked Host, token, origin
 * and sizes). */
void ui_api_handle(ui_req_t *q, ui_reply_t *out);

/* 1 when @p q is answered without waiting on the cluster (the page, the
 * cached figures, the history, a job's state): on the polling thread. */
int ui_api_quick(const ui_req_t *q);

/* dlq_opts_t as the commands' defaults, with the UI's settings. */
void ui_opts_init(const ui_t *ui, dlq_opts_t *o);

/* JSON replies: @p j is taken. */
void ui_reply_json(ui_reply_t *out, unsigned status, json_t *j);
void ui_reply_error(ui_reply_t *out, unsigned status, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Start serving: binds ui->listen. Returns 0, or -1 with @p errstr. */
int ui_server_start(ui_t *ui, char *errstr, size_t errstr_size);
void ui_server_stop(ui_t *ui);

/* The replay job (ui_replay.c): POST /api/replay, GET /api/replay/ID,
 * POST /api/replay/ID/stop. */
void ui_replay_post(ui_req_t *q,
                    const kretry_topology_t *t,
                    json_t *body,
                    ui_reply_t *out);
void ui_replay_get(ui_req_t *q, int64_t id, int stop, ui_reply_t *out);
/* Stop a running job and wait for it (shutdown). */
void ui_replay_shutdown(ui_t *ui);

/* kretry ui: its options, then serve until SIGINT/SIGTERM (cmd_ui.c).
 * Returns an exit status. */
int cmd_ui(int argc, char **argv);

/* The page (ui_page.html, compiled in). */
extern const char kretry_ui_page[];

#endif
