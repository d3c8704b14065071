# hako-conductor tree over the fixture tree fed/ (one file of every kind Hakoniwa's gen writes,
# a refused conductor file, an unknown notes.txt): the exact lines and counts, and exit 1.
execute_process(COMMAND ${EXE} tree ${DIR}/fed OUTPUT_VARIABLE out RESULT_VARIABLE rc)
file(READ ${DIR}/expected.txt want)
if(NOT out STREQUAL want)
  message(FATAL_ERROR "output differs from expected.txt:\n${out}")
endif()
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "exit status ${rc}, want 1 (a refused and an unknown file)")
endif()
