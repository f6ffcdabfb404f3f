// A small RAII wrapper over kretry's C API, part of this example only (the
// library stays C): a Config and an Adapter that free themselves, errors as
// exceptions, and a std::function handler.
#pragma once

#include <kretry/kretry.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kr {

class Error : public std::runtime_error {
      public:
        Error(kretry_err_t code, const std::string &what)
            : std::runtime_error(what), code_(code) {}
        kretry_err_t code() const { return code_; }

      private:
        kretry_err_t code_;
};

// A view of one message, borrowed for the handler's call.
class Message {
      public:
        explicit Message(kretry_msg_t *msg) : msg_(msg) {}
        std::string_view key() const {
                size_t len = 0;
                const void *p = kretry_msg_key(msg_, &len);
                return bytes(p, len);
        }
        std::string_view value() const {
                size_t len = 0;
                const void *p = kretry_msg_value(msg_, &len);
                return bytes(p, len);
        }
        int attempt() const { return kretry_msg_attempt(msg_); }
        void error(const std::string &code, const std::string &message) {
                kretry_msg_set_error(msg_, code.c_str(), message.c_str());
        }

      private:
        static std::string_view bytes(const void *p, size_t n) {
                return p ? std::string_view(static_cast<const char *>(p), n) : std::string_view();
        }
        kretry_msg_t *msg_;
};

using Handler = std::function<kretry_action_t(Message &)>;

class Config {
      public:
        Config() : conf_(kretry_conf_new(), kretry_conf_destroy) {
                if (!conf_)
                        throw Error(KRETRY_ERR_NO_MEM, "out of memory");
        }
        Config &set(const std::string &name, const std::string &value) {
                char err[512];
                kretry_err_t rc = kretry_conf_set(conf_.get(), name.c_str(), value.c_str(),
                                                  err, sizeof(err));
                if (rc != KRETRY_ERR_OK)
                        throw Error(rc, err);
                return *this;
        }

      private:
        friend class Adapter;
        std::unique_ptr<kretry_conf_t, decltype(&kretry_conf_destroy)> conf_;
};

// Owns the adapter; the handler lives as long as the adapter does. The
// handler runs on kretry's worker threads: it must be thread-safe with
// handler.concurrency above 1, and an exception must not leave it (it
// becomes a RETRY here).
class Adapter {
      public:
        Adapter(Config &&config, Handler handler)
            : handler_(std::make_unique<Handler>(std::move(handler))),
              adapter_(nullptr, kretry_adapter_destroy) {
                kretry_conf_set_handler(config.conf_.get(), trampoline, handler_.get());
                char err[1024];
                adapter_.reset(kretry_adapter_new(config.conf_.get(), err, sizeof(err)));
                if (!adapter_)
                        throw Error(KRETRY_ERR_STATE, err);
                config.conf_.release(); // the adapter took ownership
        }
        // Until stop(); then closes (commit, leave the group).
        kretry_err_t run() { return kretry_adapter_run(adapter_.get()); }
        // Any thread, or a signal handler.
        void stop() { kretry_adapter_stop(adapter_.get()); }

      private:
        static kretry_action_t trampoline(kretry_msg_t *msg, void *opaque) noexcept {
                Message m(msg);
                try {
                        return (*static_cast<Handler *>(opaque))(m);
                } catch (const std::exception &e) {
                        m.error("EXCEPTION", e.what());
                        return KRETRY_RETRY;
                }
        }
        std::unique_ptr<Handler> handler_; // before adapter_: destroyed after it
        std::unique_ptr<kretry_adapter_t, decltype(&kretry_adapter_destroy)> adapter_;
};

} // namespace kr
