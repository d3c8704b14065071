# the bridge runtime over comm-less endpoints with a fake clock: policies, epochs, control
add_executable(test_bridge_runtime ${CMAKE_CURRENT_SOURCE_DIR}/test_bridge.c)
target_link_libraries(test_bridge_runtime PRIVATE hako_bridge hako_testutil PkgConfig::CMOCKA
                      Threads::Threads)
add_test(NAME bridge.runtime COMMAND test_bridge_runtime)
set_tests_properties(bridge.runtime PROPERTIES TIMEOUT 60)
