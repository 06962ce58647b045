#include <nvmekit/storage/subsystem.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/null_backend.hpp>

namespace {

using subsystem_type = nvmekit::subsystem<nvmekit::null_backend>;

struct recorder {
    std::vector<std::uint32_t> changed;
    nvmekit::namespace_listener listener()
    {
        return {this, [](void* self, std::uint32_t nsid) {
                    static_cast<recorder*>(self)->changed.push_back(nsid);
                }};
    }
};

TEST(subsystem, namespaces_take_the_lowest_free_nsid_unless_named)
{
    subsystem_type s;
    EXPECT_EQ(s.add_namespace(nvmekit::null_backend{1 << 20}).nsid(), 1U);
    EXPECT_EQ(s.add_namespace(nvmekit::null_backend{1 << 20}, {}, 5).nsid(), 5U);
    EXPECT_EQ(s.add_namespace(nvmekit::null_backend{1 << 20}).nsid(), 2U);
    EXPECT_EQ(s.namespace_count(), 3U);
    EXPECT_THROW(s.add_namespace(nvmekit::null_backend{1 << 20}, {}, 5), std::invalid_argument);
    EXPECT_THROW(s.add_namespace(nvmekit::null_backend{1 << 20}, {}, 257), std::invalid_argument);
    EXPECT_THROW(s.add_namespace(nvmekit::null_backend{100}), std::invalid_argument); // below one block
    EXPECT_THROW(s.add_namespace(nvmekit::null_backend{1 << 20}, {.lba_format = 4}), std::invalid_argument);
    EXPECT_THROW(subsystem_type({}, {.max_namespaces = 0}), std::invalid_argument);
    EXPECT_THROW(subsystem_type({}, {.max_namespaces = 1025}), std::invalid_argument);
}

TEST(subsystem, identifiers_are_unique_per_namespace_and_per_subsystem)
{
    subsystem_type a{{.nqn = "nqn.2026-11.io.example:a"}};
    subsystem_type b{{.nqn = "nqn.2026-11.io.example:b"}};
    const auto& a1 = a.add_namespace(nvmekit::null_backend{1 << 20}).identifiers();
    const auto& a2 = a.add_namespace(nvmekit::null_backend{1 << 20}).identifiers();
    const auto& b1 = b.add_namespace(nvmekit::null_backend{1 << 20}).identifiers();
    EXPECT_NE(a1.nguid, a2.nguid);
    EXPECT_NE(a1.eui64, a2.eui64);
    EXPECT_NE(a1.uuid, a2.uuid);
    EXPECT_NE(a1.nguid, b1.nguid);
    EXPECT_NE(a1.eui64, b1.eui64);
    EXPECT_EQ(a1.uuid[6] & 0xf0, 0x80); // RFC 9562 version 8
    EXPECT_EQ(a1.uuid[8] & 0xc0, 0x80); // variant 10b
}

TEST(subsystem, identifiers_given_are_kept)
{
    subsystem_type s{{.nqn = "nqn.2026-11.io.nvmekit:given"}};
    const nvmekit::namespace_identifiers given{.nguid = {1, 2}, .eui64 = {3}, .uuid = {4, 5, 6}};
    const auto& ns = s.add_namespace(nvmekit::null_backend{1 << 20}, {}, 3, given);
    EXPECT_EQ(ns.identifiers().nguid, given.nguid);
    EXPECT_EQ(ns.identifiers().eui64, given.eui64);
    EXPECT_EQ(ns.identifiers().uuid, given.uuid);
    EXPECT_NE(s.add_namespace(nvmekit::null_backend{1 << 20}).identifiers().nguid, given.nguid);
}

TEST(subsystem, controllers_get_ids_and_see_namespaces_attached_automatically)
{
    subsystem_type s;
    s.add_namespace(nvmekit::null_backend{1 << 20});
    recorder first;
    const auto id = s.register_controller(first.listener());
    EXPECT_EQ(id, 1U);
    EXPECT_NE(s.attached_namespace(1, id), nullptr);
    EXPECT_TRUE(first.changed.empty()); // attached at start: no notice
    s.add_namespace(nvmekit::null_backend{1 << 20});
    EXPECT_EQ(first.changed, std::vector<std::uint32_t>{2});
    EXPECT_THROW(s.register_controller({}, id), std::invalid_argument);
    EXPECT_EQ(s.register_controller({}, 9), 9U);
}

TEST(subsystem, attach_and_detach_notify_the_controller)
{
    subsystem_type s{{}, {.attach_automatically = false}};
    recorder listener;
    const auto id = s.register_controller(listener.listener());
    s.add_namespace(nvmekit::null_backend{1 << 20});
    EXPECT_EQ(s.attached_namespace(1, id), nullptr);
    EXPECT_TRUE(s.attach(1, id));
    EXPECT_FALSE(s.attach(1, id));
    EXPECT_FALSE(s.attach(2, id)); // no such namespace
    EXPECT_FALSE(s.attach(1, 77)); // no such controller
    EXPECT_TRUE(s.detach(1, id));
    EXPECT_FALSE(s.detach(1, id));
    EXPECT_EQ(listener.changed, (std::vector<std::uint32_t>{1, 1}));
}

TEST(subsystem, removing_a_namespace_detaches_it_first)
{
    subsystem_type s;
    recorder listener;
    const auto id = s.register_controller(listener.listener());
    s.add_namespace(nvmekit::null_backend{1 << 20});
    EXPECT_EQ(listener.changed, std::vector<std::uint32_t>{1}); // attached when added
    s.remove_namespace(1);
    EXPECT_EQ(s.find(1), nullptr);
    EXPECT_EQ(listener.changed, (std::vector<std::uint32_t>{1, 1})); // and detached when removed
    EXPECT_THROW(s.remove_namespace(1), std::invalid_argument);
    s.unregister_controller(id);
    EXPECT_FALSE(s.has_controller(id));
}

} // namespace

TEST(subsystem, capacity_pool_grows_with_added_namespaces_when_not_configured)
{
    subsystem_type s;
    s.add_namespace(nvmekit::null_backend{1 << 20});
    s.add_namespace(nvmekit::null_backend{1 << 21});
    EXPECT_EQ(s.total_capacity(), 3U << 20);
    EXPECT_EQ(s.allocated_capacity(), 3U << 20);
    EXPECT_EQ(s.unallocated_capacity(), 0U);
    s.remove_namespace(1);
    EXPECT_EQ(s.total_capacity(), 3U << 20);
    EXPECT_EQ(s.unallocated_capacity(), 1U << 20);
}

TEST(subsystem, configured_pool_bounds_added_namespaces)
{
    subsystem_type s{{}, {.nvm_capacity_bytes = 3U << 20}};
    EXPECT_EQ(s.total_capacity(), 3U << 20);
    EXPECT_EQ(s.unallocated_capacity(), 3U << 20);
    s.add_namespace(nvmekit::null_backend{2U << 20});
    EXPECT_EQ(s.unallocated_capacity(), 1U << 20);
    EXPECT_THROW(s.add_namespace(nvmekit::null_backend{2U << 20}), std::invalid_argument);
}

TEST(subsystem, created_namespaces_use_the_factory_and_are_not_attached)
{
    subsystem_type s{{}, {.max_namespaces = 2, .nvm_capacity_bytes = 1U << 20}};
    recorder r;
    const auto controller = s.register_controller(r.listener());
    // Without a factory a null_backend subsystem cannot make backends.
    EXPECT_EQ(s.create_namespace({.blocks = 8}).error, nvmekit::namespace_creation_error::no_backend);
    std::vector<std::uint64_t> made;
    s.set_backend_factory([&](std::uint64_t bytes) {
        made.push_back(bytes);
        return std::optional<nvmekit::null_backend>{std::in_place, bytes};
    });
    const auto first = s.create_namespace({.blocks = 1024, .options = {.lba_format = 0}});
    ASSERT_EQ(first.error, nvmekit::namespace_creation_error::none);
    EXPECT_EQ(first.nsid, 1U);
    EXPECT_EQ(made, std::vector<std::uint64_t>{512U * 1024U});
    EXPECT_EQ(s.unallocated_capacity(), (1U << 20) - 512U * 1024U);
    EXPECT_FALSE(s.find(1)->attached_to(controller));
    EXPECT_TRUE(r.changed.empty());
    // 4096 + 64 bytes a block: 128 blocks do not fit in the 512 KiB left.
    EXPECT_EQ(s.create_namespace({.blocks = 128, .options = {.lba_format = 3}}).error,
              nvmekit::namespace_creation_error::insufficient_capacity);
    EXPECT_EQ(s.create_namespace({.blocks = 8}).nsid, 2U);
    EXPECT_EQ(s.create_namespace({.blocks = 8}).error,
              nvmekit::namespace_creation_error::identifier_unavailable);
}

TEST(subsystem, a_recreated_nsid_gets_new_identifiers)
{
    subsystem_type s{{}, {.nvm_capacity_bytes = 1U << 20}};
    s.set_backend_factory([](std::uint64_t bytes) {
        return std::optional<nvmekit::null_backend>{std::in_place, bytes};
    });
    ASSERT_EQ(s.create_namespace({.blocks = 8}).nsid, 1U);
    const auto before = s.find(1)->identifiers();
    s.remove_namespace(1);
    EXPECT_EQ(s.unallocated_capacity(), 1U << 20);
    ASSERT_EQ(s.create_namespace({.blocks = 8}).nsid, 1U);
    const auto after = s.find(1)->identifiers();
    EXPECT_NE(before.nguid, after.nguid);
    EXPECT_NE(before.eui64, after.eui64);
    EXPECT_NE(before.uuid, after.uuid);
}
