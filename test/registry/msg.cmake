# Types: the .msg parser (data-driven cases in msg_cases/), the layout engine, the registry and
# the built-in packages; and the embedder of built-in packages on awkward texts.
add_executable(test_msg test_msg.c)
target_compile_definitions(test_msg PRIVATE
  HAKO_MSG_CASES="${CMAKE_CURRENT_SOURCE_DIR}/msg_cases"
  HAKO_MSG_BUILTIN_DIR="${PROJECT_SOURCE_DIR}/registry/msg")
target_link_libraries(test_msg PRIVATE hako_registry hako_testcases PkgConfig::CMOCKA
                      Threads::Threads)
add_test(NAME registry.msg COMMAND test_msg ${CMAKE_CURRENT_SOURCE_DIR}/msg_cases)

# embed_msgs.cmake run on msg_embed/ (quotes, backslashes, '?', tabs, CRLF, a text too long for
# one literal); the test compares the compiled table with the files.
file(GLOB_RECURSE HAKO_EMBED_TEST_MSGS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/msg_embed/*.msg)
set(HAKO_EMBED_TEST_C ${CMAKE_CURRENT_BINARY_DIR}/msg_embed_data.c)
add_custom_command(OUTPUT ${HAKO_EMBED_TEST_C}
  COMMAND ${CMAKE_COMMAND} -DMSG_DIR=${CMAKE_CURRENT_SOURCE_DIR}/msg_embed -DOUT=${HAKO_EMBED_TEST_C}
          -P ${PROJECT_SOURCE_DIR}/registry/cmake/embed_msgs.cmake
  DEPENDS ${HAKO_EMBED_TEST_MSGS} ${PROJECT_SOURCE_DIR}/registry/cmake/embed_msgs.cmake
  COMMENT "Embedding the test .msg texts")
add_executable(test_msg_embed test_msg_embed.c ${HAKO_EMBED_TEST_C})
target_include_directories(test_msg_embed PRIVATE ${PROJECT_SOURCE_DIR}/registry/src
  ${PROJECT_SOURCE_DIR}/registry/include ${PROJECT_SOURCE_DIR}/base/include)
target_compile_definitions(test_msg_embed PRIVATE
  HAKO_MSG_EMBED_DIR="${CMAKE_CURRENT_SOURCE_DIR}/msg_embed")
target_link_libraries(test_msg_embed PRIVATE PkgConfig::CMOCKA)
add_test(NAME registry.msg_embed COMMAND test_msg_embed)

# Every built-in type against Hakoniwa's published PDU sizes (hakoniwa_pdu_sizes.h).
add_executable(test_builtin_sizes test_builtin_sizes.c)
target_link_libraries(test_builtin_sizes PRIVATE hako_registry PkgConfig::CMOCKA)
add_test(NAME registry.builtin_sizes COMMAND test_builtin_sizes)
