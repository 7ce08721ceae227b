# Runs the JACK test program with a jackd that does not exist and fails unless it exits 77
# (ctest's SKIP_RETURN_CODE for monitor_against_jack) and says why.
#   cmake -DPROGRAM=<chunkscope_jack_tests> -P tests/check_jack_skip.cmake
set(ENV{CHUNKSCOPE_TEST_JACKD} chunkscope-no-such-jackd)
execute_process(COMMAND ${PROGRAM} "-tc=devices*" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 77)
  message(FATAL_ERROR "without jackd the JACK tests exited ${rc}, not 77 (skipped):\n${out}${err}")
endif()
if(NOT out MATCHES "skipped: 1 test\\(s\\) need jackd, which is not installed")
  message(FATAL_ERROR "without jackd the JACK tests did not say they skipped:\n${out}${err}")
endif()
message(STATUS "without jackd: exit 77, skipped")
