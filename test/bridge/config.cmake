# Bridge config loader (pdu-bridge/src/bridge_config.c): data-driven cases in cases/.
add_executable(test_bridge_config ${CMAKE_CURRENT_SOURCE_DIR}/test_bridge_config.c)
target_link_libraries(test_bridge_config PRIVATE hako_bridge hako_testcases PkgConfig::CMOCKA)
add_test(NAME bridge.config COMMAND test_bridge_config ${CMAKE_CURRENT_SOURCE_DIR}/cases)
set_tests_properties(bridge.config PROPERTIES TIMEOUT 60)
