/*
 * kretry ui's header deadline and shedding: a connection whose request
 * headers are not complete UI_HEADER_DEADLINE_MS after its request began
 * (its accept, or the end of its previous request) is shut down, however
 * slowly it keeps sending. libmicrohttpd's own timeout is one of idleness
 * only: a client trickling a byte every few seconds would keep its slot for
 * ever. And at most max_waiting connections wait for their headers: a new
 * connection beyond that sheds the one that has waited longest, so a flood
 * of stalled connections never locks out a request that sends its headers
 * at once. That holds whatever the client addresses — the same for every
 * client on loopback or behind a reverse proxy, where a bound per address
 * would lock out the page's own users with the stalled ones.
 *
 * Threads: the notify callback and ui_deadline_reading() run on
 * libmicrohttpd's polling threads, the reaper on its own; the connections'
 * state is guarded by one lock, which the reaper holds while it shuts a
 * socket down, and which libmicrohttpd's "closed" notification takes
 * before it closes the socket, so the reaper never touches a descriptor
 * that was closed (and perhaps reused).
 */
#ifndef KRETRY_UI_DEADLINE_H
#define KRETRY_UI_DEADLINE_H

#include <microhttpd.h>
#include <stdint.h>

#define UI_HEADER_DEADLINE_MS 5000

typedef struct ui_deadline_s ui_deadline_t;

/* Start the reaper: connections whose headers take longer than
 * @p deadline_ms are shut down, and beyond @p max_waiting connections
 * waiting for their headers the oldest is. NULL when threads or memory
 * ran out. */
ui_deadline_t *ui_deadline_start(int64_t deadline_ms, int max_waiting);

/* Stop the reaper and free; after the daemon stopped (no connection
 * left). NULL is accepted. */
void ui_deadline_stop(ui_deadline_t *d);

/* MHD_OPTION_NOTIFY_CONNECTION's callback; @p cls is the ui_deadline_t. */
void ui_deadline_notify(void *cls,
                        struct MHD_Connection *c,
                        void **socket_context,
                        enum MHD_ConnectionNotificationCode toe);

/* The request on @p c has its headers (@p reading 0), or ended and the
 * connection waits for the next one's (1). */
void ui_deadline_reading(ui_deadline_t *d,
                         struct MHD_Connection *c,
                         int reading);

#endif
