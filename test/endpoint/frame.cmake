# Wire frames v1/v2 (pdu-endpoint/src/frame.c).
add_executable(test_frame ${CMAKE_CURRENT_SOURCE_DIR}/test_frame.c)
target_link_libraries(test_frame PRIVATE hako_endpoint PkgConfig::CMOCKA)
add_test(NAME endpoint.frame COMMAND test_frame)
set_tests_properties(endpoint.frame PROPERTIES TIMEOUT 60)
