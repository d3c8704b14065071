# hako-bridge over tcp: forwarding, control socket, SIGUSR1 / SIGTERM statistics, errors
add_executable(test_bridge_daemon ${CMAKE_CURRENT_SOURCE_DIR}/test_bridge_daemon.c)
target_link_libraries(test_bridge_daemon PRIVATE hako_endpoint hako_registry hako_testutil
                      PkgConfig::CMOCKA Threads::Threads)
add_test(NAME bridge.daemon COMMAND test_bridge_daemon $<TARGET_FILE:hako-bridge>)
set_tests_properties(bridge.daemon PROPERTIES TIMEOUT 120)
