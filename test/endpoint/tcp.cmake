# The tcp comm (pdu-endpoint/src/comm_tcp*.c): servers and clients in one process, hostile peers.
add_executable(test_endpoint_tcp ${CMAKE_CURRENT_SOURCE_DIR}/test_tcp.c)
target_link_libraries(test_endpoint_tcp PRIVATE hako_ep_testutil hako_endpoint PkgConfig::CMOCKA Threads::Threads)
add_test(NAME endpoint.tcp COMMAND test_endpoint_tcp)
set_tests_properties(endpoint.tcp PROPERTIES TIMEOUT 120)
