/*
 * Fuzz target: Avro values from the wire, raw and in the Confluent frame,
 * against the example Order schema. KRETRY_FUZZ_SCHEMA names the .avsc.
 */
#include "codec.h"

#include <stdint.h>
#include <stdlib.h>

static kretry_codec_t *raw, *confluent;

static void release(void) {
        kretry_codec_destroy(raw);
        kretry_codec_destroy(confluent);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char err[256], reason[256];
        if (!raw) {
                const char *schema = getenv("KRETRY_FUZZ_SCHEMA");
                if (!schema)
                        schema = KRETRY_SOURCE_DIR
                                "/schemas/examples/order.avsc";
                raw       = kretry_codec_new("avro", schema, "raw", "", err,
                                             sizeof(err));
                confluent = kretry_codec_new("avro", schema, "confluent", "",
                                             err, sizeof(err));
                if (!raw || !confluent)
                        abort();
                atexit(release);
        }
        avro_value_t *v;
        int64_t version;
        if (!kretry_codec_decode(raw, data, size, &v, reason, sizeof(reason)))
                kretry_codec_field_int64(v, "version", &version);
        kretry_codec_decode(confluent, data, size, &v, reason, sizeof(reason));
        return 0;
}
