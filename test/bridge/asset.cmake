# hako-bridge --asset: a core asset ticking on world time (tickers follow it; start, stop and
# reset acknowledged; SIGTERM while stopped and while running)
add_executable(test_bridge_asset ${CMAKE_CURRENT_SOURCE_DIR}/test_bridge_asset.c
               ${CMAKE_CURRENT_SOURCE_DIR}/bridge_asset_kit.c ${CMAKE_CURRENT_SOURCE_DIR}/bridge_stats.c)
target_link_libraries(test_bridge_asset PRIVATE hako_endpoint hako_core hako_testutil
                      PkgConfig::CMOCKA Threads::Threads)
add_dependencies(test_bridge_asset hako-bridge)
add_test(NAME bridge.asset COMMAND test_bridge_asset $<TARGET_FILE:hako-bridge>)
set_tests_properties(bridge.asset PROPERTIES TIMEOUT 120)
