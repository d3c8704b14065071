# Two hako-bridge daemons end to end: shm (domain A) -> tcp -> shm (domain B), 10,000 PDUs in
# order, a dead destination next to a live one
add_executable(test_bridge_e2e ${CMAKE_CURRENT_SOURCE_DIR}/test_bridge_e2e.c
               ${CMAKE_CURRENT_SOURCE_DIR}/bridge_stats.c)
target_link_libraries(test_bridge_e2e PRIVATE hako_endpoint hako_core hako_testutil
                      PkgConfig::CMOCKA Threads::Threads)
add_dependencies(test_bridge_e2e hako-bridge)
add_test(NAME bridge.e2e COMMAND test_bridge_e2e $<TARGET_FILE:hako-bridge>)
set_tests_properties(bridge.e2e PROPERTIES TIMEOUT 120)
