# the endpoint cache: latest / queue semantics, read_next order, subscribers, a thread stress test
add_executable(test_endpoint_cache ${CMAKE_CURRENT_SOURCE_DIR}/test_cache.c)
target_link_libraries(test_endpoint_cache PRIVATE hako_ep_testutil hako_endpoint PkgConfig::CMOCKA Threads::Threads)
add_test(NAME endpoint.cache COMMAND test_endpoint_cache)
set_tests_properties(endpoint.cache PROPERTIES TIMEOUT 60)
