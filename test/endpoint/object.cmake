# the endpoint object without a network: comm-less bus, names, wait, statistics, container
add_executable(test_endpoint_object ${CMAKE_CURRENT_SOURCE_DIR}/test_endpoint.c)
target_link_libraries(test_endpoint_object PRIVATE hako_ep_testutil hako_endpoint hako_testutil PkgConfig::CMOCKA
                      Threads::Threads)
add_test(NAME endpoint.object COMMAND test_endpoint_object)
set_tests_properties(endpoint.object PROPERTIES TIMEOUT 60)
