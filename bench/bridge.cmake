# bridge_overhead: shm -> bridge -> tcp -> bridge -> shm (two bridge processes, two domains) per
# transfer policy, with a direct tcp endpoint pair as the in-run baseline.
add_executable(bridge_overhead ${CMAKE_CURRENT_LIST_DIR}/bridge_overhead.c)
target_link_libraries(bridge_overhead PRIVATE hako_bench_common hako_bridge hako_endpoint hako_core
                      hako_registry Threads::Threads)
if(HAKO_BUILD_TESTS)
  add_test(NAME bench.bridge_overhead_quick COMMAND sh -c "${_check}" $<TARGET_FILE:bridge_overhead> "${_hdr}")
  # Serial: four processes and their comm threads on both CPUs.
  set_tests_properties(bench.bridge_overhead_quick PROPERTIES TIMEOUT 180 RUN_SERIAL TRUE)
endif()
