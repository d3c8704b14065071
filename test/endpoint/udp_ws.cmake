# The udp and websocket comms (pdu-endpoint/src/comm_udp.c, comm_ws.c): endpoint pairs in one
# process on 127.0.0.1, ports picked by the kernel.
add_executable(test_endpoint_udp ${CMAKE_CURRENT_SOURCE_DIR}/test_udp.c)
target_link_libraries(test_endpoint_udp PRIVATE hako_ep_testutil hako_endpoint PkgConfig::CMOCKA Threads::Threads)
add_test(NAME endpoint.udp COMMAND test_endpoint_udp)
set_tests_properties(endpoint.udp PROPERTIES TIMEOUT 120)

add_executable(test_endpoint_ws ${CMAKE_CURRENT_SOURCE_DIR}/test_ws.c)
target_link_libraries(test_endpoint_ws PRIVATE hako_ep_testutil hako_endpoint PkgConfig::CMOCKA Threads::Threads)
add_test(NAME endpoint.ws COMMAND test_endpoint_ws)
set_tests_properties(endpoint.ws PROPERTIES TIMEOUT 120)
