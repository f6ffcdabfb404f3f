# Avro values: the codec (unit) and kretry dlq export (mock cluster).
kretry_add_suite(test_codec LABELS unit)
kretry_add_suite(it_dlq_export TIMEOUT 180 LABELS integration)
add_dependencies(it_dlq_export kretry_cli)
