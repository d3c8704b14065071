# a ticker over an shm source PDU without notify_on_recv reads the channel on every tick
add_executable(test_bridge_shm_ticker ${CMAKE_CURRENT_SOURCE_DIR}/test_bridge_shm_ticker.c)
target_link_libraries(test_bridge_shm_ticker PRIVATE hako_bridge hako_core hako_testutil
                      PkgConfig::CMOCKA Threads::Threads)
add_test(NAME bridge.shm_ticker COMMAND test_bridge_shm_ticker)
set_tests_properties(bridge.shm_ticker PROPERTIES TIMEOUT 60)
