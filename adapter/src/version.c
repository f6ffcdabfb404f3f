/* Leaf: the library's version. */
#include "kretry/kretry.h"

#include <stddef.h>

#define KRETRY_STR2(x) #x
#define KRETRY_STR(x) KRETRY_STR2(x)

const char *kretry_version_str(void) {
        return KRETRY_STR(KRETRY_VERSION_MAJOR) "." KRETRY_STR(
                KRETRY_VERSION_MINOR) "." KRETRY_STR(KRETRY_VERSION_PATCH);
}

int kretry_version(void) {
        return KRETRY_VERSION;
}

const char *kretry_err2str(kretry_err_t err) {
        switch (err) {
#define KRETRY_ERR_STR(name, value, text)                                      \
        case KRETRY_ERR_##name:                                                \
                return text;
                KRETRY_ERR_MAP(KRETRY_ERR_STR)
#undef KRETRY_ERR_STR
        }
        return "unknown error";
}

const char *kretry_err2name(kretry_err_t err) {
        switch (err) {
#define KRETRY_ERR_NAME(name, value, text)                                     \
        case KRETRY_ERR_##name:                                                \
                return "KRETRY_ERR_" #name;
                KRETRY_ERR_MAP(KRETRY_ERR_NAME)
#undef KRETRY_ERR_NAME
        }
        return "KRETRY_ERR_UNKNOWN";
}
