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
  # npm's mqtt client (test/node/mqtt_interop.js) against hako-endpoint through a mosquitto of
  # its own. node is looked for when the test runs (make test installs it after configuring);
  # without node or mosquitto the test is skipped, saying which.
  find_program(HAKO_NODE node)
  add_test(NAME endpoint.mqtt_npm
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_mqtt_npm.sh $<TARGET_FILE:hako-endpoint>
                   ${PROJECT_SOURCE_DIR}/test/node ${CMAKE_CURRENT_SOURCE_DIR}/fixtures)
  set_tests_properties(endpoint.mqtt_npm PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
  if(HAKO_NODE)
    set_tests_properties(endpoint.mqtt_npm PROPERTIES ENVIRONMENT "HAKO_NODE=${HAKO_NODE}")
  endif()
endif()
