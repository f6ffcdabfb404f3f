/*
 * A plain C service: the handler runs on kretry's worker threads,
 * kretry_adapter_run() drives the adapter on the main thread, and SIGTERM
 * or SIGINT stop it cleanly (in-flight copies finished, offsets committed,
 * the group left).
 *
 *   orders_service BOOTSTRAP [PROPERTY=VALUE]...
 *
 * A value starting "fail" is a permanent failure (dead-lettered), one
 * starting "flaky" fails once and is handled by its first retry; anything
 * else is handled at once.
 */
#include <kretry/kretry.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>

static kretry_adapter_t *adapter;

/* kretry_adapter_stop() is async-signal-safe: it sets a flag and wakes
 * the thread in kretry_adapter_run(). */
static void on_signal(int sig) {
        (void)sig;
        kretry_adapter_stop(adapter);
}

static kretry_action_t handle(kretry_msg_t *msg, void *opaque) {
        size_t klen, vlen;
        const char *key        = kretry_msg_key(msg, &klen);
        const char *value      = kretry_msg_value(msg, &vlen);
        int attempt            = kretry_msg_attempt(msg);
        kretry_action_t action = KRETRY_OK;
        (void)opaque;
        if (value && vlen >= 4 && !memcmp(value, "fail", 4)) {
                kretry_msg_set_error(msg, "VALIDATION", "the order is invalid");
                action = KRETRY_FAIL;
        } else if (value && vlen >= 5 && !memcmp(value, "flaky", 5) &&
                   attempt == 1) {
                kretry_msg_set_error(msg, "HTTP_503",
                                     "payment service unavailable");
                action = KRETRY_RETRY;
        }
        printf("%.*s attempt %d: %s\n", key ? (int)klen : 0, key ? key : "",
               attempt,
               action == KRETRY_OK      ? "OK"
               : action == KRETRY_RETRY ? "RETRY"
                                        : "FAIL");
        return action;
}

/* Runs on the thread in kretry_adapter_run() once an outcome is durable. */
static void routed(const char *topic,
                   int32_t partition,
                   int64_t offset,
                   kretry_route_t route,
                   int tier,
                   const char *error_class,
                   int attempt,
                   void *opaque) {
        (void)attempt;
        (void)opaque;
        if (route == KRETRY_ROUTE_RETRY)
                printf("%s[%d]@%lld -> retry tier %d\n", topic, (int)partition,
                       (long long)offset, tier);
        else if (route == KRETRY_ROUTE_DLQ)
                printf("%s[%d]@%lld -> dead-letter topic (%s)\n", topic,
                       (int)partition, (long long)offset, error_class);
}

static int
configure(kretry_conf_t *conf, int argc, char **argv, char *err, size_t errsz) {
        const char *props[][2] = {
                {"bootstrap.servers", argv[1]}, {"group.id", "orders-service"},
                {"source.topic", "orders"},     {"retry.tiers", "1s,10s,1m"},
                {"retry.max.attempts", "4"},    {"handler.concurrency", "4"},
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
        kretry_conf_set_route_cb(conf, routed);
        return 0;
}

int main(int argc, char **argv) {
        char err[1024];
        if (argc < 2) {
                fprintf(stderr, "usage: %s BOOTSTRAP [PROPERTY=VALUE]...\n",
                        argv[0]);
                return 64;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        kretry_conf_t *conf = kretry_conf_new();
        if (!conf || configure(conf, argc, argv, err, sizeof(err))) {
                fprintf(stderr, "%s\n", conf ? err : "out of memory");
                kretry_conf_destroy(conf);
                return 1;
        }
        adapter = kretry_adapter_new(conf, err, sizeof(err));
        if (!adapter) {
                fprintf(stderr, "%s\n", err);
                kretry_conf_destroy(conf);
                return 1;
        }
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        printf("orders-service: consuming orders (kretry %s)\n",
               kretry_version_str());
        kretry_err_t rc = kretry_adapter_run(adapter);
        kretry_adapter_destroy(adapter);
        printf("orders-service: stopped (%s)\n", kretry_err2str(rc));
        return rc == KRETRY_ERR_OK ? 0 : 1;
}
