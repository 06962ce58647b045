#include <nvmekit/subsystem.hpp>

#include <cstdint>
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
        return {this, [](void* self, std::uint32_t nsid) { static_cast<recorder*>(self)->changed.push_back(nsid); }};
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
