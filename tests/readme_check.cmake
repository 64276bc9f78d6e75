# The README shows examples/autodiff.c verbatim (so the code a newcomer reads
# is the code ctest builds and runs). Usage:
#   cmake -DREADME=README.md -DEXAMPLE=examples/autodiff.c -P readme_check.cmake
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)
string(FIND "${readme}" "${example}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "README.md does not contain ${EXAMPLE} verbatim: update one of them")
endif()
message(STATUS "README.md shows ${EXAMPLE}")
