# Fails when a file of the real-time layer (rt/, kernels/) includes anything above it (an
# include of src/, or a relative include that climbs out of its folder), or states its
# real-time contract in words other than the fixed phrase.
#   cmake -DROOT=<source dir> -P tests/check_layers.cmake
file(GLOB_RECURSE files ${ROOT}/rt/* ${ROOT}/kernels/*)
set(bad "")
foreach(f ${files})
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<](src/|\\.\\./)")
  foreach(l ${lines})
    file(RELATIVE_PATH rel ${ROOT} ${f})
    list(APPEND bad "${rel}: ${l}")
  endforeach()
endforeach()
# the real-time contract is stated with one fixed phrase: [no-alloc|allocates, no-block|blocks]
foreach(f ${files})
  file(STRINGS ${f} lines REGEX "RT safe|Not RT|No allocation, does not block|[Nn]o allocation, no block")
  foreach(l ${lines})
    file(RELATIVE_PATH rel ${ROOT} ${f})
    list(APPEND bad "${rel}: '${l}' (say [no-alloc|allocates, no-block|blocks] instead)")
  endforeach()
endforeach()
if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "rt/ and kernels/ must not include code above them:\n  ${text}")
endif()
list(LENGTH files n)
message(STATUS "layers: ${n} files in rt/ and kernels/, none includes src/, every contract in the fixed phrase")
