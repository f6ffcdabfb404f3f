# Avro values: the codec (unit) and kretry dlq export (mock cluster).
kretry_add_suite(test_codec LABELS unit)
