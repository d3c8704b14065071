# Memory held by hostile peers across connections (pdu-endpoint/src/comm_tcp*.c, comm_ws.c): 200
# slow tcp peers and 200 silent websocket sessions against one server, resident memory bounded.
add_executable(test_endpoint_limits ${CMAKE_CURRENT_SOURCE_DIR}/test_limits.c)
target_link_libraries(test_endpoint_limits PRIVATE hako_ep_testutil hako_endpoint PkgConfig::CMOCKA Threads::Threads)
add_test(NAME endpoint.limits COMMAND test_endpoint_limits)
set_tests_properties(endpoint.limits PROPERTIES TIMEOUT 180)
# Connection limits idle peers cannot exhaust (comm_tcp*.c, comm_ws.c): 64 then 1,000 idle
# connections while a client streams, and silent connections closed after the first-frame deadline.
add_executable(test_endpoint_conn_limits ${CMAKE_CURRENT_SOURCE_DIR}/test_conn_limits.c)
target_link_libraries(test_endpoint_conn_limits PRIVATE hako_ep_testutil hako_endpoint PkgConfig::CMOCKA)
add_test(NAME endpoint.conn_limits COMMAND test_endpoint_conn_limits)
set_tests_properties(endpoint.conn_limits PROPERTIES TIMEOUT 300)
