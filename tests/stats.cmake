# kretry stats: the figures, alert rules and renderings as a unit suite;
# the command itself on the mock cluster.
kretry_add_suite(test_stats_calc LABELS unit)
target_link_libraries(test_stats_calc PRIVATE PkgConfig::JANSSON m)
# test_transactional_source needs a real cluster (KRETRY_TEST_BOOTSTRAP):
# without one it is reported as skipped, on its own.
kretry_add_suite(it_stats TIMEOUT 120 LABELS "integration;secure"
                 SEPARATE test_transactional_source)
set_tests_properties(it_stats.test_transactional_source PROPERTIES LABELS "real;secure")
target_link_libraries(it_stats PRIVATE PkgConfig::JANSSON)
add_dependencies(it_stats kretry_cli)
# The assertion messages format the command's output into a 2 KiB buffer
# (cut short there, which is harmless in a message).
target_compile_options(it_stats PRIVATE -Wno-format-truncation)
# A usage error exits 64 (EX_USAGE) with the reason.
add_test(NAME cli_stats_help
         COMMAND ${KRETRY_EXPECT} --stdout 0 "usage: kretry stats --topology FILE"
                 $<TARGET_FILE:kretry_cli> stats --help)
set_tests_properties(cli_stats_help PROPERTIES LABELS cli)
add_test(NAME cli_stats_usage
         COMMAND ${KRETRY_EXPECT} 64 "--window 5: expected a duration"
                 $<TARGET_FILE:kretry_cli> stats --topology x --window 5)
set_tests_properties(cli_stats_usage PROPERTIES LABELS cli)
