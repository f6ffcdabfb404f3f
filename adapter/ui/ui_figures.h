/*
 * kretry ui's figures, taken in the background: one thread runs
 * stats_collect() (kretry stats) for every topology of the file once per
 * interval while someone watches (a request within the watch window),
 * once per idle interval otherwise, keeps the last result of each and
 * appends it to the topology's history (ui_history.c). GET
 * /api/topologies reads the last result (with its age) instead of taking
 * figures per request, so a page refresh costs nothing and many pages
 * cost the cluster no more than one; an idle server costs a round a
 * minute. The first request after a quiet spell wakes the thread and
 * waits for its round, as the first request after start does.
 *
 * Threads: the figures thread writes every slot; requests read them
 * through the functions below (one lock, never held across a cluster
 * call).
 */
#ifndef KRETRY_UI_FIGURES_H
#define KRETRY_UI_FIGURES_H

#include "topology.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define UI_FIGURES_INTERVAL_MS 5000
/* A round a minute when nobody watches: the history keeps its points. */
#define UI_FIGURES_IDLE_INTERVAL_MS 60000
/* Watched: a request within the last 90 s, so a page refreshing at its
 * slowest (1 min) or a scrape of /metrics a minute keeps the pace. */
#define UI_FIGURES_WATCH_MS 90000
/* What the history shows: six hours; the samples kept per topology fill
 * it at the interval (idle samples are further apart). */
#define UI_HISTORY_SPAN_MS (6 * 3600 * 1000LL)
#define UI_HISTORY_SAMPLES (UI_HISTORY_SPAN_MS / UI_FIGURES_INTERVAL_MS)

typedef struct ui_figures_s ui_figures_t;

/* How often rounds are taken: every @c interval_ms while a request came
 * within @c watch_ms, every @c idle_interval_ms otherwise. */
typedef struct {
        int64_t interval_ms, idle_interval_ms, watch_ms;
} ui_figures_pace_t;

/* Start taking @p f's figures (borrowed until ui_figures_stop()) at
 * @p pace (copied), with the rate window @p window_ms. The first round
 * starts at once. NULL when threads or memory ran out. */
ui_figures_t *ui_figures_start(const kretry_topology_file_t *f,
                               const char *bootstrap,
                               int64_t window_ms,
                               int timeout_ms,
                               const ui_figures_pace_t *pace);

/* Stop (waits for a round in progress) and free; NULL is accepted. */
void ui_figures_stop(ui_figures_t *g);

/* 1 when every topology has a result (or an error) that
 * ui_figures_reports() returns without waiting: not one of a round taken
 * while nobody watched that is older than the interval. */
int ui_figures_fresh(ui_figures_t *g);

/* Someone watches (a request for the page, the API or /metrics): rounds
 * at the interval for the watch window from now; wakes the thread when it
 * was idle, so a round that is due starts at once. Any thread. */
void ui_figures_watch(ui_figures_t *g);

/* Rounds finished since start (every topology taken once each). */
uint64_t ui_figures_rounds(ui_figures_t *g);

/* The last results as GET /api/topologies' "topologies" (each report
 * with "age_ms"), of topology @p name only when not NULL. Watches
 * (ui_figures_watch()) and waits up to @p wait_ms for the first round, or
 * for a fresh one when the last was taken idle (ui_figures_fresh()); past
 * that wait, the last results as they are. *@p computed_at receives when the
 * oldest was taken. NULL with @p errstr filled when a topology's last round
 * failed, or none came in time. */
json_t *ui_figures_reports(ui_figures_t *g,
                           const char *name,
                           int wait_ms,
                           int64_t *computed_at,
                           char *errstr,
                           size_t errstr_size);

/* Topology @p name's history (ui_history_json()) since @p since_ms and
 * within the last UI_HISTORY_SPAN_MS, with "interval_ms" and
 * "idle_interval_ms"; NULL when no such topology. */
json_t *ui_figures_history(ui_figures_t *g, const char *name, int64_t since_ms);

#endif
