# Subscriptions and what the cache stores (pdu-endpoint/src/cache.c, endpoint.c): the unsubscribe
# contract under a tcp stream, from inside a callback and across close; HAKO_CACHE_STORE_READ.
add_executable(test_endpoint_subscribe ${CMAKE_CURRENT_SOURCE_DIR}/test_subscribe.c)
target_link_libraries(test_endpoint_subscribe PRIVATE hako_ep_testutil hako_endpoint PkgConfig::CMOCKA
                      Threads::Threads)
add_test(NAME endpoint.subscribe COMMAND test_endpoint_subscribe)
set_tests_properties(endpoint.subscribe PROPERTIES TIMEOUT 120)
