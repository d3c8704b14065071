# The shm comm of the endpoint: two endpoints (and two processes) on a private domain per test.
add_executable(test_endpoint_shm ${CMAKE_CURRENT_SOURCE_DIR}/test_shm.c)
target_link_libraries(test_endpoint_shm PRIVATE hako_endpoint hako_testutil PkgConfig::CMOCKA
                      Threads::Threads)
add_test(NAME endpoint.shm COMMAND test_endpoint_shm)
set_tests_properties(endpoint.shm PROPERTIES TIMEOUT 120)
