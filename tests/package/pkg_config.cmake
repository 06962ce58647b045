# Compiles and runs the consumer with only the flags the installed nvmekit.pc gives.
set(ENV{PKG_CONFIG_PATH} "${PREFIX}/share/pkgconfig")
execute_process(COMMAND "${PKG_CONFIG}" --cflags --libs nvmekit
    OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE result)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "pkg-config could not find nvmekit in ${PREFIX}")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND "${CXX}" -std=c++20 "${SOURCE}" -o "${OUTPUT}" ${flags}
    RESULT_VARIABLE result)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "compiling with pkg-config flags failed: ${flags}")
endif()
execute_process(COMMAND "${OUTPUT}" RESULT_VARIABLE result)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "the pkg-config consumer failed")
endif()
