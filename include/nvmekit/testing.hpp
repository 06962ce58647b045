#pragma once
/// nvmekit's test helpers in one include, apart from `<nvmekit/nvmekit.hpp>`: the providers a
/// unit test binds a controller to (flat and recording DMA, asynchronous DMA, recording MSI-X, a
/// recording tracer, a manual clock, a test backend with late and failing requests), the concept
/// archetypes, the command builders, and the in-process and loopback host drivers. The NVMe/TCP
/// host (`<nvmekit/testing/tcp_host.hpp>`) and the vfio-user client
/// (`<nvmekit/testing/vfio_user_client.hpp>`, nvmekit::vfio_user) bring sockets and are included on
/// their own.

#include <nvmekit/testing/archetypes.hpp>
#include <nvmekit/testing/async_dma.hpp>
#include <nvmekit/testing/command_builders.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/host_base.hpp>
#include <nvmekit/testing/loopback.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/recording_dma.hpp>
#include <nvmekit/testing/recording_msix.hpp>
#include <nvmekit/testing/recording_tracer.hpp>
#include <nvmekit/testing/test_backend.hpp>
