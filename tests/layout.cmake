# The rooms' include directions and the engine's drawing from includes and
# calls (README.md, "Layout"): the check passes on the tree and this
# build's objects, and fails on a copy with an upward include, an upward
# call or a circle of three files planted in it.
add_test(NAME check_layout
         COMMAND sh ${PROJECT_SOURCE_DIR}/scripts/check-layout.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
set_tests_properties(check_layout PROPERTIES LABELS unit)
add_test(NAME check_layout_planted
         COMMAND ${KRETRY_EXPECT} 1
                 "adapter/src/shape.c:[0-9]+: engine includes \"topology.h\" of topology"
                 sh ${CMAKE_CURRENT_SOURCE_DIR}/check_layout_planted.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(check_layout_planted PROPERTIES LABELS unit)
add_test(NAME check_layout_planted_engine
         COMMAND ${KRETRY_EXPECT} 1
                 "adapter/src/part.c:[0-9]+: service includes \"route.h\" of phase"
                 sh ${CMAKE_CURRENT_SOURCE_DIR}/check_layout_planted.sh ${PROJECT_SOURCE_DIR} engine)
set_tests_properties(check_layout_planted_engine PROPERTIES LABELS unit)
add_test(NAME check_layout_planted_calls
         COMMAND ${KRETRY_EXPECT} 1
                 "adapter/src: part [(]service[)] -> route [(]phase[)]: calls kretry_dispatch"
                 sh ${CMAKE_CURRENT_SOURCE_DIR}/check_layout_planted.sh ${PROJECT_SOURCE_DIR} calls ${PROJECT_BINARY_DIR})
set_tests_properties(check_layout_planted_calls PROPERTIES LABELS unit)
add_test(NAME check_layout_planted_circle
         COMMAND ${KRETRY_EXPECT} 1
                 "^  restore -> drain: calls kretry_drain_and_commit"
                 sh ${CMAKE_CURRENT_SOURCE_DIR}/check_layout_planted.sh ${PROJECT_SOURCE_DIR} circle ${PROJECT_BINARY_DIR})
set_tests_properties(check_layout_planted_circle PROPERTIES LABELS unit)

# Every public function and type of kretry.h has a doc comment, and
# docs/api.md is what scripts/gen-api.py makes of the header now.
add_test(NAME api_reference
         COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/scripts/gen-api.py --check)
set_tests_properties(api_reference PROPERTIES LABELS unit)
