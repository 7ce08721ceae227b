# cmake --install puts the binary, the man page, the bash completion and the public stage header in place, and a stage built
# against the installed header alone loads in the installed binary.
#   cmake -DBUILD=<build dir> -DPREFIX=<empty folder> -DSOURCE=<source dir> -DCC=<C compiler> -P check_install.cmake
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
foreach(f bin/chunkscope include/chunkscope/stage.h share/man/man1/chunkscope.1 share/bash-completion/completions/chunkscope)
  if(NOT EXISTS ${PREFIX}/${f})
    message(FATAL_ERROR "cmake --install did not install ${f}")
  endif()
endforeach()
execute_process(COMMAND ${CC} -std=c11 -Wall -Wextra -Werror -shared -fPIC -I${PREFIX}/include
                        -o ${PREFIX}/libcompressor_stage.so ${SOURCE}/examples/compressor_stage.c -lm
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the example stage does not build against the installed header: ${err}")
endif()
execute_process(COMMAND ${PREFIX}/bin/chunkscope synth --duration 0.2s --speed max -q
                        -c "lp:9k | so:${PREFIX}/libcompressor_stage.so:ratio=3"
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed binary did not run the stage built against the installed header (${rc}): ${err}")
endif()
file(REMOVE_RECURSE ${PREFIX})
