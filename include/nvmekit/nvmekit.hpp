#pragma once
/// nvmekit in one include: the controller with every component and both command sets, the
/// subsystem and namespaces, the block backends, and the testing providers and in-process host
/// driver that make a controller runnable without an embedder's own DMA and interrupts. Without
/// {fmt} formatters (`<nvmekit/format.hpp>`), spdlog, or the transports (`<nvmekit/transport/...>`),
/// which a translation unit includes when it needs them.
///
///     #include <nvmekit/nvmekit.hpp>
///     nvmekit::subsystem<nvmekit::any_backend> subsystem{{.nqn = "nqn.2026-11.io.example:disk"}};
///     subsystem.add_namespace(nvmekit::ram_backend{std::uint64_t{1} << 30});

#include <nvmekit/backends/any_backend.hpp>
#include <nvmekit/backends/file_backend.hpp>
#include <nvmekit/backends/null_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/storage/subsystem.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/recording_msix.hpp>
