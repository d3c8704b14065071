# hako-bridge: the bridge daemon of one node (wall clock, or a core asset on world time).
add_executable(hako-bridge ${CMAKE_CURRENT_LIST_DIR}/hako_bridge_tool.c)
target_link_libraries(hako-bridge PRIVATE hako_cli hako_rd hako_bridge hako_endpoint hako_core hako_registry
                      PkgConfig::JANSSON Threads::Threads)
target_compile_definitions(hako-bridge PRIVATE HAKO_VERSION="${PROJECT_VERSION}")
# Installed under any prefix, the tool finds the libraries next to it.
set_target_properties(hako-bridge PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS hako-bridge RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
