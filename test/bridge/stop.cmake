# hako-bridge --asset at a stop and a reset with a late shm watcher: nothing written before the
# stop is lost (100 rounds of start, writes, stop, reset)
add_executable(test_bridge_stop ${CMAKE_CURRENT_SOURCE_DIR}/test_bridge_stop.c
               ${CMAKE_CURRENT_SOURCE_DIR}/bridge_asset_kit.c ${CMAKE_CURRENT_SOURCE_DIR}/bridge_stats.c)
target_link_libraries(test_bridge_stop PRIVATE hako_endpoint hako_core hako_testutil
                      PkgConfig::CMOCKA Threads::Threads)
add_dependencies(test_bridge_stop hako-bridge)
add_test(NAME bridge.stop COMMAND test_bridge_stop $<TARGET_FILE:hako-bridge>)
set_tests_properties(bridge.stop PROPERTIES TIMEOUT 120)
