# Topology files: loading, validation (golden files under topology/),
# planning, the library call, and apply against KRETRY_TEST_BOOTSTRAP.
kretry_add_suite(test_topology TIMEOUT 60)
kretry_add_suite(test_topology_plan TIMEOUT 60)
kretry_add_suite(test_topology_conf TIMEOUT 60)
kretry_add_suite(test_topology_apply TIMEOUT 120)
