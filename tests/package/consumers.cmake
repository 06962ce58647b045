# The programs every consumer project builds against nvmekit::nvmekit, and runs as its tests
# (ctest in the consumer's build directory):
#   consumer            the spec and format headers and the version macros: formats a Read command
#   readme_example      README.md's example (examples/readme_example.cpp): a subsystem with a RAM
#                       namespace, a controller, the in-process host's bring-up and one read
#   transport_consumer  the transport headers: a vfio-user server over mapped memory and eventfd
#                       interrupts accepts a client on its socket
# and, when nvmekit has them, rpc_consumer (nvmekit::rpc) and uring_consumer (nvmekit::uring).
# Included by find_package/CMakeLists.txt and add_subdirectory/CMakeLists.txt once nvmekit::nvmekit
# exists; the .deb check (deb.sh) builds find_package/ against the installed package.
set(nvmekit_consumer_sources
    consumer "${CMAKE_CURRENT_LIST_DIR}/consumer.cpp"
    readme_example "${CMAKE_CURRENT_LIST_DIR}/../../examples/readme_example.cpp"
    transport_consumer "${CMAKE_CURRENT_LIST_DIR}/transport_consumer.cpp")

enable_testing()
while(nvmekit_consumer_sources)
    list(POP_FRONT nvmekit_consumer_sources program source)
    add_executable(${program} "${source}")
    target_link_libraries(${program} PRIVATE nvmekit::nvmekit)
    add_test(NAME ${program} COMMAND ${program})
endwhile()
if(TARGET nvmekit::rpc)
    add_executable(rpc_consumer "${CMAKE_CURRENT_LIST_DIR}/rpc_consumer.cpp")
    target_link_libraries(rpc_consumer PRIVATE nvmekit::rpc)
    add_test(NAME rpc_consumer COMMAND rpc_consumer)
elseif(NVMEKIT_EXPECT_RPC)
    message(FATAL_ERROR "nvmekit was built with nvmekit::rpc, but this consumer does not find it")
endif()
if(TARGET nvmekit::uring)
    add_executable(uring_consumer "${CMAKE_CURRENT_LIST_DIR}/uring_consumer.cpp")
    target_link_libraries(uring_consumer PRIVATE nvmekit::uring)
    add_test(NAME uring_consumer COMMAND uring_consumer)
elseif(NVMEKIT_EXPECT_URING)
    message(FATAL_ERROR "nvmekit was built with nvmekit::uring, but this consumer does not find it")
endif()
set_tests_properties(consumer PROPERTIES PASS_REGULAR_EXPRESSION "nvmekit 0\\.1\\.0: READ cid=5 nsid=1")
