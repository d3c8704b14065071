# the world clock of a bridge run as an asset: tickers and throttles go on after a domain reset
add_executable(test_bridge_clock ${CMAKE_CURRENT_SOURCE_DIR}/test_bridge_clock.c)
target_link_libraries(test_bridge_clock PRIVATE hako_bridge hako_core hako_testutil
                      PkgConfig::CMOCKA Threads::Threads)
add_test(NAME bridge.clock COMMAND test_bridge_clock)
set_tests_properties(bridge.clock PROPERTIES TIMEOUT 60)
