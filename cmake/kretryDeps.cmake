# The libraries libkretry links, as imported targets named
# PkgConfig::kretry_dep_<name>: included by the build and by the installed
# kretryConfig.cmake alike, so that the exported kretry::kretry_static
# names the same targets in both places (a name of kretry's own, which
# never collides with an application's own PkgConfig:: targets).
# KRETRY_DEPS_RDKAFKA_PCDIR, when set, is searched first for rdkafka.pc: the
# private prefix of the librdkafka kretry was built against, as kretry.pc
# users name it in PKG_CONFIG_PATH. With KRETRY_DEPS_REQUIRED (the build)
# a missing one fails; the package config only needs them for
# kretry::kretry_static, which then fails at its first use instead.
find_package(PkgConfig REQUIRED QUIET)
if(KRETRY_DEPS_RDKAFKA_PCDIR AND EXISTS "${KRETRY_DEPS_RDKAFKA_PCDIR}/rdkafka.pc")
  set(_kretry_saved_pcpath "$ENV{PKG_CONFIG_PATH}")
  set(ENV{PKG_CONFIG_PATH} "${KRETRY_DEPS_RDKAFKA_PCDIR}:$ENV{PKG_CONFIG_PATH}")
endif()
foreach(_kretry_dep rdkafka jansson libcyaml yaml-0.1 avro-c)
  string(REGEX REPLACE "[^a-z]" "" _kretry_name "${_kretry_dep}")
  if(NOT TARGET PkgConfig::kretry_dep_${_kretry_name})
    if(KRETRY_DEPS_REQUIRED)
      pkg_check_modules(kretry_dep_${_kretry_name} REQUIRED QUIET IMPORTED_TARGET
                        ${_kretry_dep})
    else()
      pkg_check_modules(kretry_dep_${_kretry_name} QUIET IMPORTED_TARGET ${_kretry_dep})
    endif()
  endif()
endforeach()
if(DEFINED _kretry_saved_pcpath)
  set(ENV{PKG_CONFIG_PATH} "${_kretry_saved_pcpath}")
  unset(_kretry_saved_pcpath)
endif()
