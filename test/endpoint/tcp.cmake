# The tcp comm (pdu-endpoint/src/comm_tcp*.c): servers and clients in one process, hostile peers.
add_executable(test_endpoint_tcp ${CMAKE_CURRENT_SOURCE_DIR}/test_tcp.c)
target_link_libraries(test_endpoint_tcp PRIVATE hako_ep_testutil hako_endpoint PkgConfig::CMOCKA Threads::Threads)
add_test(NAME endpoint.tcp COMMAND test_endpoint_tcp)
set_tests_properties(endpoint.tcp PROPERTIES TIMEOUT 120)
# The TCP mux (a tcp server file with expected_clients): streams, a client that names itself, a
# reconnecting client, a flood of 1,000 connections.
add_executable(test_endpoint_tcp_mux ${CMAKE_CURRENT_SOURCE_DIR}/test_tcp_mux.c)
target_link_libraries(test_endpoint_tcp_mux PRIVATE hako_ep_testutil hako_endpoint PkgConfig::CMOCKA)
add_test(NAME endpoint.tcp_mux COMMAND test_endpoint_tcp_mux)
set_tests_properties(endpoint.tcp_mux PROPERTIES TIMEOUT 120)
# The tcp comm's frames on the wire, byte for byte, whichever send path (direct, pooled, big).
add_executable(test_endpoint_tcp_stream ${CMAKE_CURRENT_SOURCE_DIR}/test_tcp_stream.c)
target_link_libraries(test_endpoint_tcp_stream PRIVATE hako_ep_testutil hako_endpoint PkgConfig::CMOCKA Threads::Threads)
add_test(NAME endpoint.tcp_stream COMMAND test_endpoint_tcp_stream)
set_tests_properties(endpoint.tcp_stream PROPERTIES TIMEOUT 120)
