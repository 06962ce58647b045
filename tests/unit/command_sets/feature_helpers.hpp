#pragma once
// Set/Get Features, Identify Controller and a Controller Level Reset through the rig's host (over
// PCIe or the loopback transport), for the admin command set's tests.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/testing/host_base.hpp>

namespace nvmekit_test {

template <typename Rig>
nvmekit::testing::completion get_feature(Rig& r, nvmekit::spec::feature_id feature,
                                         nvmekit::spec::feature_select sel, std::uint32_t cdw11 = 0)
{
    auto sqe = Rig::host_type::get_features_command(feature, sel);
    sqe.cdw11 = cdw11;
    return r.host.admin(sqe);
}

template <typename Rig>
nvmekit::testing::completion set_feature(Rig& r, nvmekit::spec::feature_id feature, std::uint32_t cdw11,
                                         bool save = false)
{
    return r.host.admin(Rig::host_type::set_features_command(feature, cdw11, save));
}

/// The Identify Controller data structure (CNS 01h).
template <typename Rig>
nvmekit::spec::identify_controller identify_controller(Rig& r)
{
    std::vector<std::byte> out;
    EXPECT_TRUE(
        r.host
            .admin_read(Rig::host_type::identify_command(nvmekit::spec::cns::identify_controller, 0, 0),
                        sizeof(nvmekit::spec::identify_controller), out)
            .ok());
    nvmekit::spec::identify_controller data{};
    std::memcpy(&data, out.data(), sizeof(data));
    return data;
}

/// A Controller Level Reset the way Linux does it: CC.EN = 0, wait for RDY = 0, CC.EN = 1, wait
/// for RDY = 1. Only the admin queue exists afterwards.
template <typename Rig>
void controller_reset(Rig& r)
{
    r.host.disable();
    r.host.enable();
}

} // namespace nvmekit_test
