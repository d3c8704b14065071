# ROS 2 CDR and ros2msg schemas: unit tests, and the check against Foxglove's own npm packages.
add_executable(test_cdr test_cdr.c cdr_fill.c)
target_link_libraries(test_cdr PRIVATE hako_registry PkgConfig::CMOCKA)
add_test(NAME registry.cdr COMMAND test_cdr)

add_executable(cdr_vectors cdr_vectors.c cdr_fill.c)
target_link_libraries(cdr_vectors PRIVATE hako_registry)
# node and test/node's packages are looked for when the test runs (test/node/run.sh): `make test`
# installs them after cmake has configured. Missing, the test fails and says how to install them.
find_program(HAKO_NODE node)
add_test(NAME registry.cdr_foxglove
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cdr_foxglove.sh $<TARGET_FILE:cdr_vectors>
          ${PROJECT_SOURCE_DIR}/test/node)
if(HAKO_NODE)
  set_tests_properties(registry.cdr_foxglove PROPERTIES ENVIRONMENT "HAKO_NODE=${HAKO_NODE}")
endif()
