/*
 * A service with its own event loop: poll() waits on kretry_adapter_fd()
 * and a self-pipe for signals, for at most kretry_adapter_next_timeout_ms().
 * The handler runs inside kretry_adapter_poll() on the loop thread
 * (handler.thread=poll), so it must not block: it holds each message and
 * queues it for a backend thread (standing for an asynchronous client),
 * which answers with kretry_msg_complete() from that thread.
 *
 *   orders_loop BOOTSTRAP [PROPERTY=VALUE]...
 *
 * "fail..." values are dead-lettered, "flaky..." ones succeed on their
 * first retry, the rest at once.
 */
#include <kretry/kretry.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The backend's queue: the loop thread pushes held messages, the backend
 * thread pops and completes them. One lock, never held across a kretry
 * call. */
struct job {
        kretry_msg_t *held;
        struct job *next;
};
static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct job *head, **tail;
        int closing;
} queue = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL,
           &queue.head, 0};

static int sigpipe[2];

static void on_signal(int sig) {
        int saved = errno;
        (void)sig;
        (void)!write(sigpipe[1], "x", 1);
        errno = saved;
}

static void push(kretry_msg_t *held) {
        struct job *j = malloc(sizeof(*j));
        if (!j) {
                kretry_msg_complete(held, KRETRY_RETRY);
                return;
        }
        j->held = held;
        j->next = NULL;
        pthread_mutex_lock(&queue.lock);
        *queue.tail = j;
        queue.tail  = &j->next;
        pthread_cond_signal(&queue.cond);
        pthread_mutex_unlock(&queue.lock);
}

/* Loop thread, inside kretry_adapter_poll(): hold and hand over. */
static kretry_action_t handle(kretry_msg_t *msg, void *opaque) {
        (void)opaque;
        kretry_msg_t *held = kretry_msg_hold(msg);
        if (!held)
                return KRETRY_RETRY; /* out of memory: try again later */
        push(held);
        return KRETRY_ASYNC;
}

/* Backend thread: the "remote call", then the answer, from this thread.
 * The held handle stays valid until kretry_msg_complete(). */
static void answer(kretry_msg_t *held) {
        size_t klen, vlen;
        const char *key        = kretry_msg_key(held, &klen);
        const char *value      = kretry_msg_value(held, &vlen);
        int attempt            = kretry_msg_attempt(held);
        kretry_action_t action = KRETRY_OK;
        nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
        if (value && vlen >= 4 && !memcmp(value, "fail", 4)) {
                kretry_msg_set_error(held, "VALIDATION",
                                     "the order is invalid");
                action = KRETRY_FAIL;
        } else if (value && vlen >= 5 && !memcmp(value, "flaky", 5) &&
                   attempt == 1) {
                kretry_msg_set_error(held, "HTTP_503",
                                     "payment service unavailable");
                action = KRETRY_RETRY;
        }
        printf("%.*s attempt %d: %s\n", key ? (int)klen : 0, key ? key : "",
               attempt,
               action == KRETRY_OK      ? "OK"
               : action == KRETRY_RETRY ? "RETRY"
                                        : "FAIL");
        kretry_msg_complete(held, action);
}

static void *backend(void *arg) {
        (void)arg;
        pthread_mutex_lock(&queue.lock);
        for (;;) {
                while (!queue.head && !queue.closing)
                        pthread_cond_wait(&queue.cond, &queue.lock);
                struct job *j = queue.head;
                if (!j)
                        break; /* closing and drained */
                queue.head = j->next;
                if (!queue.head)
                        queue.tail = &queue.head;
                pthread_mutex_unlock(&queue.lock);
                answer(j->held);
                free(j);
                pthread_mutex_lock(&queue.lock);
        }
        pthread_mutex_unlock(&queue.lock);
        return NULL;
}

static int
configure(kretry_conf_t *conf, int argc, char **argv, char *err, size_t errsz) {
        const char *props[][2] = {
                {"bootstrap.servers", argv[1]}, {"group.id", "orders-loop"},
                {"source.topic", "orders"},     {"retry.tiers", "1s,10s,1m"},
                {"handler.thread", "poll"},     {"handler.concurrency", "16"},
        };
        for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
                if (kretry_conf_set(conf, props[i][0], props[i][1], err, errsz))
                        return -1;
        for (int i = 2; i < argc; i++) {
                char *eq = strchr(argv[i], '=');
                if (!eq) {
                        snprintf(err, errsz, "%s: expected PROPERTY=VALUE",
                                 argv[i]);
                        return -1;
                }
                *eq = '\0';
                if (kretry_conf_set(conf, argv[i], eq + 1, err, errsz))
                        return -1;
        }
        kretry_conf_set_handler(conf, handle, NULL);
        return 0;
}

/* The application's loop: kretry's fd, the signal pipe, kretry's timer. */
static kretry_err_t loop(kretry_adapter_t *a) {
        for (;;) {
                struct pollfd fds[2] = {{kretry_adapter_fd(a), POLLIN, 0},
                                        {sigpipe[0], POLLIN, 0}};
                if (poll(fds, 2, kretry_adapter_next_timeout_ms(a)) < 0 &&
                    errno != EINTR)
                        return KRETRY_ERR_IO;
                if (fds[1].revents & POLLIN)
                        return KRETRY_ERR_OK;
                kretry_err_t rc = kretry_adapter_poll(a, 0);
                if (rc != KRETRY_ERR_OK)
                        return rc;
        }
}

int main(int argc, char **argv) {
        char err[1024];
        if (argc < 2) {
                fprintf(stderr, "usage: %s BOOTSTRAP [PROPERTY=VALUE]...\n",
                        argv[0]);
                return 64;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (pipe(sigpipe) || fcntl(sigpipe[1], F_SETFL, O_NONBLOCK))
                return 1;
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        kretry_conf_t *conf = kretry_conf_new();
        if (!conf || configure(conf, argc, argv, err, sizeof(err))) {
                fprintf(stderr, "%s\n", conf ? err : "out of memory");
                kretry_conf_destroy(conf);
                return 1;
        }
        kretry_adapter_t *a = kretry_adapter_new(conf, err, sizeof(err));
        if (!a) {
                fprintf(stderr, "%s\n", err);
                kretry_conf_destroy(conf);
                return 1;
        }
        pthread_t th;
        pthread_create(&th, NULL, backend, NULL);
        printf("orders-loop: consuming orders (kretry %s)\n",
               kretry_version_str());
        kretry_err_t rc = loop(a);
        /* Stop: let the backend answer what it holds, route those answers
         * with one last poll, then close (commit, leave the group). */
        pthread_mutex_lock(&queue.lock);
        queue.closing = 1;
        pthread_cond_signal(&queue.cond);
        pthread_mutex_unlock(&queue.lock);
        pthread_join(th, NULL);
        if (rc == KRETRY_ERR_OK)
                kretry_adapter_poll(a, 100);
        kretry_err_t closed = kretry_adapter_close(a);
        kretry_adapter_destroy(a);
        if (rc == KRETRY_ERR_OK)
                rc = closed;
        printf("orders-loop: stopped (%s)\n", kretry_err2str(rc));
        return rc == KRETRY_ERR_OK ? 0 : 1;
}
