# Generated headers (hako-msggen): the layout test, the inline helpers against the codec, and the
# tool itself on user types.

# layout_table.c includes every built-in header and tabulates offsetof/sizeof; compiled as
# strict ISO C11 with warnings as errors, so it also checks that the headers are clean C11.
get_property(HAKO_MSGS_HEADERS GLOBAL PROPERTY HAKO_MSGS_HEADERS)
set(HAKO_LAYOUT_TABLE ${CMAKE_CURRENT_BINARY_DIR}/layout_table.c)
add_custom_command(OUTPUT ${HAKO_LAYOUT_TABLE}
  COMMAND ${CMAKE_COMMAND} -E env --unset=HAKO_MSG_PATH
          $<TARGET_FILE:hako-msggen> --all-builtin --no-headers --layout-check ${HAKO_LAYOUT_TABLE}
  DEPENDS hako-msggen hako_msgs_headers ${HAKO_MSGS_HEADERS}
  COMMENT "Tabulating the layout of the generated structs"
  VERBATIM)
add_library(hako_layout_table OBJECT ${HAKO_LAYOUT_TABLE})
target_include_directories(hako_layout_table PRIVATE ${PROJECT_BINARY_DIR}/include/hako/msgs)
target_link_libraries(hako_layout_table PRIVATE hako_registry)
target_compile_options(hako_layout_table PRIVATE -Wall -Wextra -Wpedantic -Werror)
set_target_properties(hako_layout_table PROPERTIES C_EXTENSIONS OFF)
add_dependencies(hako_layout_table hako_msgs_headers)

add_executable(test_layout_gcc test_layout_gcc.c $<TARGET_OBJECTS:hako_layout_table>)
target_link_libraries(test_layout_gcc PRIVATE hako_registry PkgConfig::CMOCKA)
add_test(NAME registry.layout_gcc COMMAND test_layout_gcc)

add_executable(test_msggen_helpers test_msggen_helpers.c)
target_link_libraries(test_msggen_helpers PRIVATE hako_registry PkgConfig::CMOCKA)
target_compile_options(test_msggen_helpers PRIVATE -Wall -Wextra -Wpedantic -Werror)
add_dependencies(test_msggen_helpers hako_msgs_headers)
add_test(NAME registry.msggen_helpers COMMAND test_msggen_helpers)

add_test(NAME registry.msggen
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_msggen.sh $<TARGET_FILE:hako-msggen>
          ${CMAKE_C_COMPILER} ${PROJECT_SOURCE_DIR}/registry/include ${PROJECT_SOURCE_DIR}/base/include)
set_tests_properties(registry.msggen PROPERTIES TIMEOUT 60)
