# CPack: two Debian packages. nvmekit-dev holds the headers, the CMake package files and the
# pkg-config file (architecture-independent); nvmekit-serve holds the nvmekit-serve program
# (built when the examples are), with its shared-library dependencies computed by dpkg-shlibdeps.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "nvmekit")
set(CPACK_PACKAGE_VENDOR "the nvmekit authors")
set(CPACK_PACKAGE_CONTACT "the nvmekit authors <nvmekit@example.invalid>")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME "nvmekit-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_ARCHITECTURE "all")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION "libdevel")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libfmt-dev (>= 9), libspdlog-dev (>= 1:1.10), libboost-dev (>= 1.74)")
# The JSON-RPC headers (nvmekit::rpc) and the vfio-user transport (nvmekit::vfio_user) need
# nlohmann_json, the io_uring backend (nvmekit::uring) liburing, the SystemC device
# (nvmekit::systemc) SystemC; the rest of the library needs none.
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS
    "nlohmann-json3-dev (>= 3.10), liburing-dev (>= 2.0), libsystemc-dev (>= 2.3.3)")
set(CPACK_COMPONENT_DEV_DESCRIPTION "${PROJECT_DESCRIPTION}")

set(CPACK_DEBIAN_SERVE_PACKAGE_NAME "nvmekit-serve")
set(CPACK_DEBIAN_SERVE_PACKAGE_SECTION "misc")
set(CPACK_DEBIAN_SERVE_PACKAGE_SHLIBDEPS ON)
set(CPACK_COMPONENT_SERVE_DESCRIPTION "An emulated NVMe PCI function served over vfio-user (nvmekit)")

if(NVMEKIT_BUILD_EXAMPLES)
    set(CPACK_COMPONENTS_ALL dev serve)
else()
    set(CPACK_COMPONENTS_ALL dev)
endif()
include(CPack)
