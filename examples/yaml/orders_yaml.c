/*
 * A service whose topology comes from a YAML file (the format of
 * `kretry topology validate`): source, group, tiers, DLQ and librdkafka
 * properties are the operator's, the handler is the program's.
 *
 *   orders_yaml FILE [NAME]
 *
 * ${VAR} in the file is read from the environment (KAFKA_BOOTSTRAP in
 * orders.yaml). "fail..." values are dead-lettered, "flaky..." ones succeed
 * on their first retry.
 */
#include <kretry/kretry.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>

static kretry_adapter_t *adapter;

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

/* Logs (kretry's and librdkafka's) from any thread: warnings and worse. */
static void log_line(kretry_log_level_t level,
                     const char *facility,
                     const char *message,
                     void *opaque) {
        (void)opaque;
        if (level <= KRETRY_LOG_WARNING)
                fprintf(stderr, "%s: %s\n", facility, message);
}

int main(int argc, char **argv) {
        char err[2048];
        if (argc < 2 || argc > 3) {
                fprintf(stderr, "usage: %s FILE [NAME]\n", argv[0]);
                return 64;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        kretry_conf_t *conf = kretry_conf_new();
        if (!conf)
                return 1;
        /* Every problem of the file, one "FILE:LINE:COL: text" per line. */
        if (kretry_conf_load_topology(conf, argv[1], argc > 2 ? argv[2] : NULL,
                                      err, sizeof(err))) {
                fprintf(stderr, "%s\n", err);
                kretry_conf_destroy(conf);
                return 1;
        }
        kretry_conf_set_handler(conf, handle, NULL);
        kretry_conf_set_log_cb(conf, log_line, NULL);
        char source[256];
        kretry_conf_get(conf, "source.topic", source, sizeof(source));
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
        printf("orders-yaml: consuming %s (kretry %s)\n", source,
               kretry_version_str());
        kretry_err_t rc = kretry_adapter_run(adapter);
        kretry_adapter_destroy(adapter);
        printf("orders-yaml: stopped (%s)\n", kretry_err2str(rc));
        return rc == KRETRY_ERR_OK ? 0 : 1;
}
