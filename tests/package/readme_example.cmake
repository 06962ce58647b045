# Fails when examples/readme_example.cpp (after its leading // comment lines) is not, byte for
# byte, the first C++ code block of README.md's "Using nvmekit from another project" section (or
# of the section SECTION names), so the example the tests build and run is the one README shows.
#   cmake -DREADME=README.md -DEXAMPLE=examples/readme_example.cpp [-DSECTION=title] -P readme_example.cmake
if(NOT DEFINED SECTION)
    set(SECTION "Using nvmekit from another project")
endif()
file(READ "${README}" readme)
set(section_heading "## ${SECTION}\n")
string(FIND "${readme}" "${section_heading}" section_start)
if(section_start EQUAL -1)
    message(FATAL_ERROR "${README} has no \"${SECTION}\" section")
endif()
string(SUBSTRING "${readme}" ${section_start} -1 section)
string(FIND "${section}" "\n```cpp\n" block_start)
if(block_start EQUAL -1)
    message(FATAL_ERROR "the \"${SECTION}\" section of ${README} has no C++ code block")
endif()
math(EXPR block_start "${block_start} + 8")
string(SUBSTRING "${section}" ${block_start} -1 section)
string(FIND "${section}" "\n```\n" block_end)
if(block_end EQUAL -1)
    message(FATAL_ERROR "the C++ code block of ${README} is not closed")
endif()
math(EXPR block_end "${block_end} + 1")
string(SUBSTRING "${section}" 0 ${block_end} block)

file(READ "${EXAMPLE}" example)
string(REGEX REPLACE "^(//[^\n]*\n)+" "" example "${example}")

if(NOT block STREQUAL example)
    file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/readme_block.cpp" "${block}")
    message(FATAL_ERROR "README.md's example and ${EXAMPLE} differ; README's block is in "
        "${CMAKE_CURRENT_BINARY_DIR}/readme_block.cpp (compare with diff)")
endif()
message(STATUS "README.md's example is ${EXAMPLE}")
