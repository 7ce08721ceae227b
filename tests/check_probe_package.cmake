# cmake --install puts the probe library, its header, the CMake package and the pkg-config
# file in place, and examples/probe_client (a project of its own) builds against them.
#   cmake -DBUILD=<build dir> -DPREFIX=<folder> -DCLIENT_BUILD=<folder> -DSOURCE=<source dir>
#         -DCMAKE=<cmake> -P check_probe_package.cmake
file(REMOVE_RECURSE ${PREFIX} ${CLIENT_BUILD})
# the client is a JACK client: without JACK's development files there is nothing to build
# (ctest reports the entry skipped; the JACK test of the client then skips too)
execute_process(COMMAND pkg-config --exists jack RESULT_VARIABLE has_jack)
if(NOT has_jack EQUAL 0)
  message("probe client: SKIPPED: JACK's development files (libjack-jackd2-dev) or pkg-config are not installed")
  return()
endif()
execute_process(COMMAND ${CMAKE} --install ${BUILD} --prefix ${PREFIX} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
file(GLOB_RECURSE installed RELATIVE ${PREFIX} ${PREFIX}/*)
foreach(want include/chunkscope/probe.h libchunkscope_probe.so chunkscopeConfig.cmake chunkscopeConfigVersion.cmake
             chunkscopeTargets.cmake chunkscope-probe.pc)
  string(FIND ";${installed};" ";${want};" at_top)
  string(FIND ";${installed};" "/${want};" below)
  if(at_top EQUAL -1 AND below EQUAL -1)
    message(FATAL_ERROR "cmake --install did not install ${want} (installed: ${installed})")
  endif()
endforeach()
set(client_flags "")
if(CLIENT_FLAGS)  # a sanitized build: the client is built with the same sanitizers
  set(client_flags "-DCMAKE_C_FLAGS=${CLIENT_FLAGS}" "-DCMAKE_CXX_FLAGS=${CLIENT_FLAGS}"
                   "-DCMAKE_EXE_LINKER_FLAGS=${CLIENT_FLAGS}")
endif()
execute_process(COMMAND ${CMAKE} -S ${SOURCE}/examples/probe_client -B ${CLIENT_BUILD} -DCMAKE_PREFIX_PATH=${PREFIX}
                        ${client_flags}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "examples/probe_client does not configure against the installed package:\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE} --build ${CLIENT_BUILD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "examples/probe_client does not build against the installed package:\n${out}\n${err}")
endif()
# the pkg-config file names the same library and header
file(GLOB_RECURSE pc ${PREFIX}/*/chunkscope-probe.pc)
get_filename_component(pcdir "${pc}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pcdir})
execute_process(COMMAND pkg-config --cflags --libs chunkscope-probe RESULT_VARIABLE rc OUTPUT_VARIABLE flags
                ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REGEX MATCH "-I([^ ]+)" _ "${flags}")
set(incdir "${CMAKE_MATCH_1}")
string(REGEX MATCH "-L([^ ]+)" _ "${flags}")
set(libdir "${CMAKE_MATCH_1}")
if(NOT rc EQUAL 0 OR NOT EXISTS "${incdir}/chunkscope/probe.h" OR NOT EXISTS "${libdir}/libchunkscope_probe.so"
   OR NOT flags MATCHES "-lchunkscope_probe")
  message(FATAL_ERROR "pkg-config chunkscope-probe does not name the installed header and library: '${flags}' ${err}")
endif()
# ... and a program built with those flags starts from a prefix outside the library path when
# it carries the library folder as its rpath, as the docs show, and one built without it
# starts with LD_LIBRARY_PATH, the other way the docs give (whether it starts bare depends on
# whether the package is also installed under /usr, as CI installs it)
set(prog ${CLIENT_BUILD}/probe_pkgconfig)
execute_process(COMMAND sh -c "${CC} ${CLIENT_FLAGS} $(pkg-config --cflags chunkscope-probe) '${SOURCE}/tests/data/probe_pkgconfig.c' -o '${prog}' $(pkg-config --libs chunkscope-probe) -Wl,-rpath,$(pkg-config --variable=libdir chunkscope-probe)"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the docs' pkg-config build line fails:\n${out}\n${err}")
endif()
execute_process(COMMAND env -u LD_LIBRARY_PATH ${prog} ${CLIENT_BUILD}/probe_pkgconfig.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS ${CLIENT_BUILD}/probe_pkgconfig.json)
  message(FATAL_ERROR "a program built with the docs' pkg-config line does not run (${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND sh -c "${CC} ${CLIENT_FLAGS} $(pkg-config --cflags chunkscope-probe) '${SOURCE}/tests/data/probe_pkgconfig.c' -o '${prog}_norpath' $(pkg-config --libs chunkscope-probe)"
                RESULT_VARIABLE rc)
execute_process(COMMAND env LD_LIBRARY_PATH=${libdir} ${prog}_norpath RESULT_VARIABLE with_path ERROR_VARIABLE path_err)
if(NOT rc EQUAL 0 OR NOT with_path EQUAL 0)
  message(FATAL_ERROR "built without the rpath, the program does not start with LD_LIBRARY_PATH (${rc}, ${with_path}): "
                      "${path_err}")
endif()
message("probe client: the pkg-config build line gives a program that starts (rpath), and with LD_LIBRARY_PATH")
