# The I/O loop of the network comms (pdu-endpoint/src/ep_loop.c), white-box: timers, posted
# tasks, ios deleted during a round, the thread's life.
add_executable(test_endpoint_loop ${CMAKE_CURRENT_SOURCE_DIR}/test_loop.c)
target_include_directories(test_endpoint_loop PRIVATE ${PROJECT_SOURCE_DIR}/pdu-endpoint/src)
target_include_directories(test_endpoint_loop PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_endpoint_loop PRIVATE hako_endpoint_objs hako_testutil hako_kit hako_core hako_registry
                      hako_base PkgConfig::CMOCKA PkgConfig::JANSSON PkgConfig::LWS Threads::Threads)
add_test(NAME endpoint.loop COMMAND test_endpoint_loop)
set_tests_properties(endpoint.loop PROPERTIES TIMEOUT 60)
# An endpoint set's network comms served by one loop thread (tcp servers and clients, udp).
add_executable(test_endpoint_set ${CMAKE_CURRENT_SOURCE_DIR}/test_set.c)
target_link_libraries(test_endpoint_set PRIVATE hako_ep_testutil hako_endpoint PkgConfig::CMOCKA Threads::Threads)
add_test(NAME endpoint.set COMMAND test_endpoint_set)
set_tests_properties(endpoint.set PROPERTIES TIMEOUT 60)
