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

# The mqtt comm (pdu-endpoint/src/comm_mqtt.c) against a real mosquitto broker and clients.
if(HAKO_WITH_MQTT)
  add_executable(test_endpoint_mqtt ${CMAKE_CURRENT_SOURCE_DIR}/test_mqtt.c)
  target_compile_definitions(test_endpoint_mqtt PRIVATE TEST_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/fixtures")
  target_link_libraries(test_endpoint_mqtt PRIVATE hako_ep_testutil hako_endpoint PkgConfig::CMOCKA Threads::Threads)
  add_test(NAME endpoint.mqtt COMMAND test_endpoint_mqtt)
  set_tests_properties(endpoint.mqtt PROPERTIES TIMEOUT 180)
endif()
