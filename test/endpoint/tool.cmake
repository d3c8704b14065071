# hako-endpoint from the shell (test_tool.sh): usage, check against the loader's cases, probe +
# send through tcp, comm-less and shm endpoints.
add_test(NAME endpoint.tool
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_tool.sh $<TARGET_FILE:hako-endpoint>
                 $<TARGET_FILE:hako-cmd> ${CMAKE_CURRENT_SOURCE_DIR}/cases)
set_tests_properties(endpoint.tool PROPERTIES TIMEOUT 120)
