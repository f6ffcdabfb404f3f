# Avro values: the codec (unit) and kretry dlq export (mock cluster).
kretry_add_suite(test_codec LABELS unit)
# The independent readers run as tests of their own: each skips (and says
# so) when its tool is missing; scripts/install-deps.sh --test installs both.
kretry_add_suite(it_dlq_export TIMEOUT 180 LABELS "integration;secure"
                 SEPARATE test_export_avrocat test_export_python)
add_dependencies(it_dlq_export kretry_cli)
