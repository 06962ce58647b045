# The programs every consumer project builds against nvmekit::nvmekit, and runs as its tests
# (ctest in the consumer's build directory):
#   consumer            the spec and format headers and the version macros: formats a Read command
#   readme_example      README.md's example (examples/readme_example.cpp): a subsystem with a RAM
#                       namespace, a controller, the in-process host's bring-up and one read
# and, when nvmekit has them, rpc_consumer (nvmekit::rpc), vfio_user_consumer (nvmekit::vfio_user:
# a vfio-user server over mapped memory and eventfd interrupts accepts a client on its socket),
# uring_consumer (nvmekit::uring) and systemc_consumer (nvmekit::systemc).
# Included by find_package/CMakeLists.txt and add_subdirectory/CMakeLists.txt once nvmekit::nvmekit
# exists; the .deb check (deb.sh) builds find_package/ against the installed package.
# NVMEKIT_CONSUMER_PROGRAMS=usage leaves out readme_example and vfio_user_consumer, the two
# programs that instantiate a whole controller: their usage requirements are those of consumer
# (nvmekit::nvmekit) and of rpc_consumer (nlohmann_json, like nvmekit::vfio_user), so a form of the
# package that another consumer project already builds in full is checked by the others.
set(NVMEKIT_CONSUMER_PROGRAMS all CACHE STRING "The consumer programs to build: all, or usage")
if(NOT NVMEKIT_CONSUMER_PROGRAMS MATCHES "^(all|usage)$")
    message(FATAL_ERROR "NVMEKIT_CONSUMER_PROGRAMS is all or usage, not ${NVMEKIT_CONSUMER_PROGRAMS}")
endif()
set(nvmekit_consumer_sources consumer "${CMAKE_CURRENT_LIST_DIR}/consumer.cpp")
if(NVMEKIT_CONSUMER_PROGRAMS STREQUAL "all")
    list(APPEND nvmekit_consumer_sources
        readme_example "${CMAKE_CURRENT_LIST_DIR}/../../examples/readme_example.cpp")
endif()

enable_testing()
while(nvmekit_consumer_sources)
    list(POP_FRONT nvmekit_consumer_sources program source)
    add_executable(${program} "${source}")
    target_link_libraries(${program} PRIVATE nvmekit::nvmekit)
    add_test(NAME ${program} COMMAND ${program})
endwhile()
# The components' consumers, when nvmekit has them (NVMEKIT_EXPECT_<COMPONENT> says it must).
foreach(component IN ITEMS rpc vfio_user uring systemc)
    string(TOUPPER "${component}" upper)
    if(NOT TARGET nvmekit::${component})
        if(NVMEKIT_EXPECT_${upper})
            message(FATAL_ERROR "nvmekit was built with nvmekit::${component}, but this consumer does not find it")
        endif()
    elseif(NOT (component STREQUAL "vfio_user" AND NVMEKIT_CONSUMER_PROGRAMS STREQUAL "usage"))
        add_executable(${component}_consumer "${CMAKE_CURRENT_LIST_DIR}/${component}_consumer.cpp")
        target_link_libraries(${component}_consumer PRIVATE nvmekit::${component})
        add_test(NAME ${component}_consumer COMMAND ${component}_consumer)
    endif()
endforeach()
set_tests_properties(consumer PROPERTIES PASS_REGULAR_EXPRESSION "nvmekit 0\\.1\\.0: READ cid=5 nsid=1")
