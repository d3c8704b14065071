# The storage comm: Hakoniwa's file layout, a writer and a reader on one file, hostile files.
add_executable(test_endpoint_storage ${CMAKE_CURRENT_SOURCE_DIR}/test_storage.c)
target_link_libraries(test_endpoint_storage PRIVATE hako_ep_testutil)
add_test(NAME endpoint.storage COMMAND test_endpoint_storage)
set_tests_properties(endpoint.storage PROPERTIES TIMEOUT 120)
