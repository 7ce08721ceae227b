# The skip rule: a case that failed and then said "skipped" is not reported skipped.
#   cmake -DPROGRAM=<skip_probe> -P check_skip_rule.cmake
execute_process(COMMAND ${PROGRAM} "-tc=probe: fails and then says skipped" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR out MATCHES "CASE SKIPPED: ")
  message(FATAL_ERROR "a failed case that says skipped was not a failure (rc ${rc}):\n${out}")
endif()
execute_process(COMMAND ${PROGRAM} "-tc=probe: says skipped" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "CASE SKIPPED: nothing to run here")
  message(FATAL_ERROR "a case that only skips was not reported skipped (rc ${rc}):\n${out}")
endif()
