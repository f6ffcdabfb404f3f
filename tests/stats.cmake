# kretry stats: the figures, alert rules and renderings as a unit suite;
# the command itself on the mock cluster.
kretry_add_suite(test_stats_calc LABELS unit
                 SOURCES ${PROJECT_SOURCE_DIR}/adapter/cli/stats_calc.c)
target_include_directories(test_stats_calc PRIVATE
                           ${PROJECT_SOURCE_DIR}/adapter/cli)
target_link_libraries(test_stats_calc PRIVATE PkgConfig::JANSSON m)
