#include <nvmekit/transport/vfio_user/protocol/limits.hpp>

#include <gtest/gtest.h>

namespace vu = nvmekit::transport::vfio_user;

TEST(vfio_user_protocol, limits_default_to_values_qemu_accepts)
{
    const vu::protocol_limits limits{};
    EXPECT_EQ(limits.max_data_xfer_size, 1U << 20);
    EXPECT_EQ(limits.max_msg_fds, 16U);     // QEMU refuses more than 16
    EXPECT_EQ(limits.max_dma_maps, 65535U); // QEMU refuses more than 65535
    EXPECT_EQ(limits.dma_page_size, 4096U);
    EXPECT_EQ(limits.max_version_data, 4096U);
}

TEST(vfio_user_protocol, max_message_size_is_the_larger_of_a_region_write_and_a_version)
{
    static_assert(vu::protocol_limits{}.max_message_size() == 16 + 16 + (1U << 20));
    vu::protocol_limits limits{};
    EXPECT_EQ(limits.max_message_size(), 16U + 16U + (1U << 20)); // REGION_WRITE of max_data_xfer_size
    limits.max_data_xfer_size = 0;
    EXPECT_EQ(limits.max_message_size(), 16U + 4U + 4096U); // VERSION with max_version_data of JSON
    limits.max_version_data = 0;
    EXPECT_EQ(limits.max_message_size(), 16U + 16U);
    limits.max_data_xfer_size = 0xFFFFFFFF;
    limits.max_version_data = 0xFFFFFFFF;
    EXPECT_EQ(limits.max_message_size(), 16U + 16U + 0xFFFFFFFFULL); // no 32-bit wrap
}
