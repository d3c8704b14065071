# Endpoint config loaders (pdu-endpoint/src/endpoint_config.c): data-driven cases in cases/.
add_executable(test_endpoint_config ${CMAKE_CURRENT_SOURCE_DIR}/test_endpoint_config.c)
target_link_libraries(test_endpoint_config PRIVATE hako_endpoint hako_testcases PkgConfig::CMOCKA)
add_test(NAME endpoint.config COMMAND test_endpoint_config ${CMAKE_CURRENT_SOURCE_DIR}/cases)
set_tests_properties(endpoint.config PROPERTIES TIMEOUT 60)
# The mqtt comm's files: read when it is built in, refused by name when it is not.
if(HAKO_WITH_MQTT)
  add_test(NAME endpoint.config_mqtt COMMAND test_endpoint_config ${CMAKE_CURRENT_SOURCE_DIR}/cases ${CMAKE_CURRENT_SOURCE_DIR}/cases_mqtt)
  set_tests_properties(endpoint.config_mqtt PROPERTIES TIMEOUT 60)
else()
  add_test(NAME endpoint.config_nomqtt COMMAND test_endpoint_config ${CMAKE_CURRENT_SOURCE_DIR}/cases ${CMAKE_CURRENT_SOURCE_DIR}/cases_nomqtt)
  set_tests_properties(endpoint.config_nomqtt PROPERTIES TIMEOUT 60)
endif()
