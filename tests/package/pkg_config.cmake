# Compiles the consumer programs of consumers.cmake with only the flags `pkg-config --cflags --libs
# nvmekit` gives, runs each, and checks what consumer prints.
#   cmake -DPKG_CONFIG=pkg-config -DCXX=g++ -DOUTPUT_DIR=dir [-DPREFIX=install prefix]
#         [-DPROGRAMS=all|usage] -P pkg_config.cmake
# Without PREFIX, pkg-config searches its default path (the .deb check, after dpkg -i). PROGRAMS=usage
# leaves out readme_example and vfio_user_consumer, as NVMEKIT_CONSUMER_PROGRAMS does (consumers.cmake).
if(NOT DEFINED PROGRAMS)
    set(PROGRAMS all)
endif()
if(NOT PROGRAMS MATCHES "^(all|usage)$")
    message(FATAL_ERROR "PROGRAMS is all or usage, not ${PROGRAMS}")
endif()
if(NOT PKG_CONFIG)
    message(FATAL_ERROR "pkg-config was not found when the tests were configured (Debian: apt-get install pkgconf)")
endif()
if(DEFINED PREFIX)
    set(ENV{PKG_CONFIG_PATH} "${PREFIX}/share/pkgconfig")
endif()
execute_process(COMMAND "${PKG_CONFIG}" --cflags --libs nvmekit
    OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE result)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "pkg-config could not find nvmekit (PKG_CONFIG_PATH=$ENV{PKG_CONFIG_PATH})")
endif()
message(STATUS "pkg-config --cflags --libs nvmekit: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
file(MAKE_DIRECTORY "${OUTPUT_DIR}")

set(sources_dir "${CMAKE_CURRENT_LIST_DIR}")
set(programs "consumer=${sources_dir}/consumer.cpp")
if(PROGRAMS STREQUAL "all")
    list(APPEND programs "readme_example=${sources_dir}/../../examples/readme_example.cpp")
endif()
foreach(program_source IN LISTS programs)
    string(REPLACE "=" ";" program_source "${program_source}")
    list(GET program_source 0 program)
    list(GET program_source 1 source)
    execute_process(COMMAND "${CXX}" -std=c++20 "${source}" -o "${OUTPUT_DIR}/${program}" ${flags}
        RESULT_VARIABLE result)
    if(NOT result EQUAL 0)
        message(FATAL_ERROR "compiling ${program} with the pkg-config flags failed: ${flags}")
    endif()
    execute_process(COMMAND "${OUTPUT_DIR}/${program}" RESULT_VARIABLE result OUTPUT_VARIABLE output)
    message(STATUS "${program}: ${output}")
    if(NOT result EQUAL 0)
        message(FATAL_ERROR "the pkg-config build of ${program} failed (${result})")
    endif()
    if(program STREQUAL "consumer" AND NOT output MATCHES "nvmekit 0\\.1\\.0: READ cid=5 nsid=1")
        message(FATAL_ERROR "consumer printed something else than a formatted Read command")
    endif()
endforeach()

# The optional components have pkg-config files of their own, installed when nvmekit was built
# with their dependency: nvmekit-rpc and nvmekit-vfio_user (nlohmann_json), nvmekit-systemc (SystemC).
foreach(component IN ITEMS rpc vfio_user systemc)
    execute_process(COMMAND "${PKG_CONFIG}" --exists nvmekit-${component} RESULT_VARIABLE result)
    if(NOT result EQUAL 0)
        continue()
    endif()
    execute_process(COMMAND "${PKG_CONFIG}" --cflags --libs nvmekit-${component}
        OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE
        RESULT_VARIABLE result)
    if(NOT result EQUAL 0)
        message(FATAL_ERROR "pkg-config --cflags --libs nvmekit-${component} failed")
    endif()
    message(STATUS "pkg-config --cflags --libs nvmekit-${component}: ${flags}")
    if(component STREQUAL "vfio_user" AND PROGRAMS STREQUAL "usage")
        continue() # its flags are checked; its program is the .deb check's
    endif()
    separate_arguments(flags UNIX_COMMAND "${flags}")
    execute_process(COMMAND "${CXX}" -std=c++20 "${sources_dir}/${component}_consumer.cpp"
        -o "${OUTPUT_DIR}/${component}_consumer" ${flags} RESULT_VARIABLE result)
    if(NOT result EQUAL 0)
        message(FATAL_ERROR "compiling ${component}_consumer with the pkg-config flags failed: ${flags}")
    endif()
    execute_process(COMMAND "${OUTPUT_DIR}/${component}_consumer" RESULT_VARIABLE result OUTPUT_VARIABLE output)
    message(STATUS "${component}_consumer: ${output}")
    if(NOT result EQUAL 0)
        message(FATAL_ERROR "the pkg-config build of ${component}_consumer failed (${result})")
    endif()
endforeach()
