# kf_test(NAME SOURCES a.cc b.cc DEPS lib1 lib2 [LABELS l])
# A GoogleTest binary registered with CTest; unit tests sit beside the code they test.
function(kf_test name)
  cmake_parse_arguments(T "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_compile_options(${name} PRIVATE ${KF_TEST_CODE_OPTIONS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT 600
    ENVIRONMENT "KF_BIN_DIR=${CMAKE_BINARY_DIR}/bin;KF_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()

# kf_fuzz(NAME SOURCES ... DEPS ...): a libFuzzer target, built only with -DKF_FUZZ=ON under clang.
function(kf_fuzz name)
  cmake_parse_arguments(F "" "" "SOURCES;DEPS" ${ARGN})
  if(NOT KF_FUZZ)
    return()
  endif()
  add_executable(${name} ${F_SOURCES})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${name} PRIVATE ${F_DEPS})
  add_dependencies(fuzz ${name})
endfunction()

# kf_use_tcmalloc(TARGET): links tcmalloc into an executable. Every append allocates on one
# thread (gRPC, the WAL sequencer) and frees on another (the WAL writer, a consumer): glibc's
# arenas then contend and trim (futex waits, mprotect and page faults per message); tcmalloc's
# per-thread caches do not (local_wal_bench (a), wal adaptor: 215k -> 330k+ appends/s).
function(kf_use_tcmalloc name)
  if(KF_TCMALLOC_LIB)
    # No symbol of it is referenced: keep it even where the linker defaults to --as-needed.
    # One item, so that CMake's deduplication of link flags cannot split the push/pop pair.
    target_link_libraries(${name} PRIVATE
      "-Wl,--push-state,--no-as-needed,${KF_TCMALLOC_LIB},--pop-state")
  endif()
endfunction()
