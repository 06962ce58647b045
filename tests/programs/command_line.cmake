# Checks a program's command-line conventions (examples/command_line.hpp):
#   cmake -DPROGRAM=path -DNAME=name -P command_line.cmake
# --help: usage on stdout, nothing on stderr, exit 0; --version: "NAME MAJOR.MINOR.PATCH", exit 0;
# an unknown option: named on stderr, nothing on stdout, exit 2.
execute_process(COMMAND "${PROGRAM}" --help RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0 OR NOT out MATCHES "^usage: ${NAME}" OR NOT err STREQUAL "")
    message(FATAL_ERROR "${NAME} --help: exit ${status}, stdout '${out}', stderr '${err}'")
endif()
execute_process(COMMAND "${PROGRAM}" --version RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0 OR NOT out STREQUAL "${NAME} ${VERSION}\n")
    message(FATAL_ERROR "${NAME} --version: exit ${status}, stdout '${out}', expected '${NAME} ${VERSION}'")
endif()
execute_process(COMMAND "${PROGRAM}" --no-such-option RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 2 OR NOT err MATCHES "unknown option --no-such-option" OR NOT out STREQUAL "")
    message(FATAL_ERROR "${NAME} --no-such-option: exit ${status}, stdout '${out}', stderr '${err}'")
endif()
