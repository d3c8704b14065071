# PDU codec (meta, validate, variable arrays, writer) and PDU <-> JSON.
add_executable(test_pdu_codec test_pdu_codec.c)
target_link_libraries(test_pdu_codec PRIVATE hako_registry PkgConfig::CMOCKA)
add_test(NAME registry.pdu_codec COMMAND test_pdu_codec)

add_executable(test_pdu_json test_pdu_json.c)
target_link_libraries(test_pdu_json PRIVATE hako_registry PkgConfig::CMOCKA m)
add_test(NAME registry.pdu_json COMMAND test_pdu_json)
