# Topology files: loading, validation (golden files under topology/),
# planning, the library call, and apply against KRETRY_TEST_BOOTSTRAP.
kretry_add_suite(test_topology TIMEOUT 60)
kretry_add_suite(test_topology_plan TIMEOUT 60)
kretry_add_suite(test_topology_shape TIMEOUT 60)
kretry_add_suite(test_topology_conf TIMEOUT 60)
# test_real_apply needs a real cluster (KRETRY_TEST_BOOTSTRAP): without one
# it is reported as skipped, on its own; label real puts it in the real
# pass of scripts/test.sh.
kretry_add_suite(test_topology_apply TIMEOUT 120 SEPARATE test_real_apply)
# secure-admin: on the secured cluster too, logged in as its admin (applying
# a topology creates topics and alters their configuration).
set_tests_properties(test_topology_apply.test_real_apply PROPERTIES LABELS "real;secure-admin")
