# Fuzz targets for every parser of outside input: kretry-* headers, topology
# files, Avro values, kretry ui's requests, what an endpoint answers kretry
# run --http. By default each links a small mutation driver and runs
# as a bounded CTest case over its seed corpus (tests/fuzz/corpus/); with
# clang and -DKRETRY_FUZZ=ON they link libFuzzer instead:
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DKRETRY_FUZZ=ON \
#         -DKRETRY_SANITIZER=address,undefined
#   build-fuzz/tests/fuzz_topology tests/fuzz/corpus/topology
foreach(target headers topology codec ui http)
  set(name fuzz_${target})
  if(KRETRY_FUZZ)
    add_executable(${name} fuzz/${name}.c)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  else()
    add_executable(${name} fuzz/${name}.c fuzz/driver.c)
    add_test(NAME ${name}
             COMMAND ${name} --iterations 100000
                     ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${target})
    # The exit status decides: a crash, a sanitizer report or a leak found
    # at exit fails the test even after the driver printed "no crash".
    set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS fuzz
      ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  endif()
  target_link_libraries(${name} PRIVATE kretry_static)
  target_compile_definitions(${name} PRIVATE
    KRETRY_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
endforeach()
# kretry ui's request parsing lives with the page (adapter/ui/); the dlq
# options it fills are the operations layer's (adapter/ops/).
target_sources(fuzz_ui PRIVATE ${PROJECT_SOURCE_DIR}/adapter/ui/ui_body.c
               ${PROJECT_SOURCE_DIR}/adapter/ui/ui_http.c)
target_include_directories(fuzz_ui PRIVATE ${PROJECT_SOURCE_DIR}/adapter/ui)
target_link_libraries(fuzz_ui PRIVATE kretry_ops)

# What an endpoint answers kretry run --http (adapter/run/http_rules.c).
target_sources(fuzz_http PRIVATE ${PROJECT_SOURCE_DIR}/adapter/run/http_rules.c)
target_include_directories(fuzz_http PRIVATE ${PROJECT_SOURCE_DIR}/adapter/run)
target_link_libraries(fuzz_http PRIVATE PkgConfig::CURL)
