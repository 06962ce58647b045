#pragma once
/// thread_group: starts `count` threads running `body(index)` and joins them all when it goes out
/// of scope, also when the test body fails (an assertion returns early) or throws. A test-only
/// header.
///
///     nvmekit_test::thread_group threads{4, [&](std::size_t index) { run_worker(index); }};
///     threads.join(); // or let the destructor join

#include <cstddef>
#include <thread>
#include <vector>

namespace nvmekit_test {

class thread_group {
public:
    template <typename Body>
    thread_group(std::size_t count, Body body)
    {
        for (std::size_t index = 0; index < count; ++index) {
            threads_.emplace_back(body, index);
        }
    }
    thread_group(const thread_group&) = delete;
    thread_group& operator=(const thread_group&) = delete;
    ~thread_group() { join(); }

    /// Waits for every thread still running.
    void join()
    {
        for (auto& thread : threads_) {
            if (thread.joinable()) {
                thread.join();
            }
        }
    }

private:
    std::vector<std::thread> threads_;
};

} // namespace nvmekit_test
