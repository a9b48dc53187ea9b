# ctest go.gofmt: fails listing the .go files under DIR that gofmt would change.
execute_process(COMMAND ${GOFMT} -l ${DIR} OUTPUT_VARIABLE unformatted RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gofmt failed (${rc})")
endif()
if(NOT unformatted STREQUAL "")
  message(FATAL_ERROR "not gofmt-formatted (run gofmt -w):\n${unformatted}")
endif()
message(STATUS "all Go files under ${DIR} are gofmt-formatted")
