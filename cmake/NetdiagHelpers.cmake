# Shared settings for netdiag's own code: one INTERFACE target carries the
# language level and the warning policy, so third-party headers are untouched.
add_library(netdiag_settings INTERFACE)
target_compile_features(netdiag_settings INTERFACE cxx_std_20)
target_include_directories(netdiag_settings INTERFACE ${PROJECT_SOURCE_DIR})
target_compile_options(netdiag_settings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
  -Wcast-align -Wunused -Woverloaded-virtual
  $<$<BOOL:${NETDIAG_WERROR}>:-Werror>)

# netdiag_add_library(NAME SOURCES... DEPS ...) builds netdiag_NAME with the
# alias netdiag::NAME.
function(netdiag_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(netdiag_${name} STATIC ${ARG_SOURCES})
  add_library(netdiag::${name} ALIAS netdiag_${name})
  target_link_libraries(netdiag_${name} PUBLIC netdiag_settings ${ARG_DEPS})
endfunction()

# netdiag_add_test(NAME SOURCES... DEPS ...) builds a GoogleTest binary and
# registers each of its tests with ctest.
function(netdiag_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE netdiag_settings GTest::gtest GTest::gmock
                        GTest::gtest_main ${ARG_DEPS})
  target_compile_definitions(${name} PRIVATE
    NETDIAG_FIXTURES="${PROJECT_SOURCE_DIR}/tests/fixtures")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS "unit;${ARG_LABELS}")
endfunction()
