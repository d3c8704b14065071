# Endpoints between processes: ep_peer (one side) driven by test_pairs (cmocka), one ctest test
# per scenario, named endpoint.pairs.<protocol>[_<what>].
add_executable(ep_peer ${CMAKE_CURRENT_SOURCE_DIR}/ep_peer.c)
target_link_libraries(ep_peer PRIVATE hako_testutil hako_endpoint)

add_executable(test_endpoint_pairs ${CMAKE_CURRENT_SOURCE_DIR}/test_pairs.c)
target_link_libraries(test_endpoint_pairs PRIVATE hako_ep_testutil hako_testutil hako_endpoint PkgConfig::CMOCKA
                      Threads::Threads)
add_dependencies(test_endpoint_pairs ep_peer)

foreach(scenario shm udp_v2 tcp_hostile udp_hostile websocket_hostile)
  add_test(NAME endpoint.pairs.${scenario}
           COMMAND test_endpoint_pairs $<TARGET_FILE:ep_peer> ${scenario})
  set_tests_properties(endpoint.pairs.${scenario} PROPERTIES TIMEOUT 180)
endforeach()
# The conformance suite of the stream comms (test_pairs.c): every scenario against every one.
foreach(comm tcp_v2 tcp_v1 websocket_v2 websocket_v1 tcp_mux_v2 tcp_mux_v1)
  foreach(scenario pair fanout reconnect burst hostile overflow stop_drain)
    add_test(NAME endpoint.pairs.${comm}_${scenario}
             COMMAND test_endpoint_pairs $<TARGET_FILE:ep_peer> ${comm}_${scenario})
    set_tests_properties(endpoint.pairs.${comm}_${scenario} PROPERTIES TIMEOUT 180)
  endforeach()
endforeach()
