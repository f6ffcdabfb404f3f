// A C++17 service on the RAII wrapper of kretry.hpp. Signals are blocked in
// every thread (kretry's and librdkafka's inherit the mask) and taken by
// one thread with sigwait(), which stops the adapter: no code runs in a
// signal handler.
//
//   orders_service_cpp BOOTSTRAP [PROPERTY=VALUE]...
#include "kretry.hpp"

#include <csignal>
#include <cstdio>
#include <iostream>
#include <pthread.h>
#include <thread>

int main(int argc, char **argv) {
        if (argc < 2) {
                std::cerr << "usage: " << argv[0] << " BOOTSTRAP [PROPERTY=VALUE]...\n";
                return 64;
        }
        std::setvbuf(stdout, nullptr, _IOLBF, 0);
        sigset_t stop_signals;
        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGTERM);
        sigaddset(&stop_signals, SIGINT);
        pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
        try {
                kr::Config config;
                config.set("bootstrap.servers", argv[1])
                    .set("group.id", "orders-service-cpp")
                    .set("source.topic", "orders")
                    .set("retry.tiers", "1s,10s,1m")
                    .set("handler.concurrency", "4");
                for (int i = 2; i < argc; i++) {
                        std::string kv = argv[i];
                        auto eq = kv.find('=');
                        if (eq == std::string::npos)
                                throw kr::Error(KRETRY_ERR_INVALID_ARG, kv + ": expected PROPERTY=VALUE");
                        config.set(kv.substr(0, eq), kv.substr(eq + 1));
                }
                kr::Adapter adapter(std::move(config), [](kr::Message &m) {
                        kretry_action_t action = KRETRY_OK;
                        if (m.value().substr(0, 4) == "fail") {
                                m.error("VALIDATION", "the order is invalid");
                                action = KRETRY_FAIL;
                        } else if (m.value().substr(0, 5) == "flaky" && m.attempt() == 1) {
                                m.error("HTTP_503", "payment service unavailable");
                                action = KRETRY_RETRY;
                        }
                        std::printf("%.*s attempt %d: %s\n", (int)m.key().size(), m.key().data(),
                                    m.attempt(),
                                    action == KRETRY_OK ? "OK" : action == KRETRY_RETRY ? "RETRY" : "FAIL");
                        return action;
                });
                std::thread signals([&adapter, stop_signals] {
                        int sig;
                        sigwait(&stop_signals, &sig);
                        adapter.stop();
                });
                std::printf("orders-service-cpp: consuming orders (kretry %s)\n", kretry_version_str());
                kretry_err_t rc = adapter.run();
                // run() returns only after a stop (or a fatal error): wake
                // the signal thread if it still waits, then join it.
                if (rc != KRETRY_ERR_OK && rc != KRETRY_ERR_TIMED_OUT)
                        pthread_kill(signals.native_handle(), SIGTERM);
                signals.join();
                std::printf("orders-service-cpp: stopped (%s)\n", kretry_err2str(rc));
                return rc == KRETRY_ERR_OK ? 0 : 1;
        } catch (const kr::Error &e) {
                std::cerr << e.what() << "\n";
                return 1;
        }
}
