# Endpoint config loaders (pdu-endpoint/src/endpoint_config.c): data-driven cases in cases/.
add_executable(test_endpoint_config ${CMAKE_CURRENT_SOURCE_DIR}/test_endpoint_config.c)
target_link_libraries(test_endpoint_config PRIVATE hako_endpoint hako_testcases PkgConfig::CMOCKA)
add_test(NAME endpoint.config COMMAND test_endpoint_config ${CMAKE_CURRENT_SOURCE_DIR}/cases)
set_tests_properties(endpoint.config PROPERTIES TIMEOUT 60)
