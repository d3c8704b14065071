# hako_endpoint_drain on the shm comm, with a late watcher: the last write delivered once
add_executable(test_endpoint_shm_drain ${CMAKE_CURRENT_SOURCE_DIR}/test_shm_drain.c)
target_link_libraries(test_endpoint_shm_drain PRIVATE hako_endpoint hako_testutil
                      PkgConfig::CMOCKA Threads::Threads)
add_test(NAME endpoint.shm_drain COMMAND test_endpoint_shm_drain)
set_tests_properties(endpoint.shm_drain PROPERTIES TIMEOUT 120)
