#include <nvmekit/runtime/poll_group.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <poll.h>
#include <pthread.h>
#include <sched.h>

#include <gtest/gtest.h>

#include <nvmekit/runtime/mailbox.hpp>

#include "asserts_enabled.hpp"

// No test depends on how fast anything is. Durations are failure bounds only: a group that misses
// a notify sleeps for `never` (a minute), and the tests wait at most `patience` (20 s) for what a
// notify should cause within microseconds, so a lost wakeup fails the test instead of passing late.

namespace {

using namespace std::chrono_literals;
using nvmekit::mailbox;
using nvmekit::poll_group_counters;
using nvmekit::poll_group_options;
using nvmekit::poll_group_runner;
using nvmekit::wake_reason;
using nvmekit::wakeup;
using steady = std::chrono::steady_clock;

constexpr std::chrono::nanoseconds never = 60s;
constexpr std::chrono::nanoseconds patience = 20s;

// Waits until `condition()` holds or `patience` runs out; returns whether it held.
template <typename Condition>
bool eventually(Condition condition)
{
    const auto deadline = steady::now() + patience;
    while (!condition()) {
        if (steady::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(100us);
    }
    return true;
}

// Like eventually, but spins (yielding) instead of sleeping between checks, so that what the caller
// does next lands at an unpredictable point of the other thread's loop.
template <typename Condition>
bool eventually_spinning(Condition condition)
{
    const auto deadline = steady::now() + patience;
    while (!condition()) {
        if (steady::now() > deadline) {
            return false;
        }
        std::this_thread::yield();
    }
    return true;
}

// Set when a thread that called watch() ends. A thread's thread_local objects are destroyed before
// join() returns, so once stop() has returned the flag says for certain whether the group's thread
// is gone: no waiting "to see that nothing happens". Calls from the thread that made the watch
// (work run by poll_once) are ignored; that thread outlives the watch.
class thread_exit_watch {
public:
    // Called on the watched thread.
    void watch()
    {
        if (std::this_thread::get_id() == owner_) {
            return;
        }
        thread_local marker mark;
        mark.exited = &exited_;
    }
    [[nodiscard]] bool exited() const { return exited_.load(std::memory_order_acquire); }

private:
    struct marker {
        std::atomic<bool>* exited = nullptr;
        marker() = default;
        marker(const marker&) = delete;
        marker& operator=(const marker&) = delete;
        ~marker()
        {
            if (exited != nullptr) {
                exited->store(true, std::memory_order_release);
            }
        }
    };
    const std::thread::id owner_ = std::this_thread::get_id();
    std::atomic<bool> exited_{false};
};

// Whether the eventfd is readable now (a notify is pending), without consuming it.
bool readable(int fd)
{
    pollfd descriptor{fd, POLLIN, 0};
    return ::poll(&descriptor, 1, 0) == 1 && (descriptor.revents & POLLIN) != 0;
}

// A group whose work is its inbox, as a controller's poll group receives messages: each message
// processed is one command of `bytes_per_command` bytes.
struct inbox_group {
    static constexpr std::uint64_t bytes_per_command = 4096;

    explicit inbox_group(poll_group_options options) : runner{[this] { return work(); }, std::move(options)}
    {}

    // Producer side: queue a message and wake the group.
    void send(int value)
    {
        while (!inbox.try_push(value)) {
            std::this_thread::yield();
        }
        runner.notify();
    }

    std::size_t work()
    {
        thread_exit.watch();
        const std::size_t done = inbox.drain(
            [this](int&& value) {
                last_value.store(value, std::memory_order_release);
                handled.fetch_add(1, std::memory_order_release);
            },
            32);
        runner.statistics().add_commands(done);
        runner.statistics().add_bytes(done * bytes_per_command);
        return done;
    }

    mailbox<int> inbox{64};
    thread_exit_watch thread_exit; // set once a group thread that ran work() has ended
    std::atomic<int> last_value{-1};
    std::atomic<std::uint64_t> handled{0};
    poll_group_runner<> runner;
};

poll_group_options sleepy(std::uint32_t idle_polls_before_sleep)
{
    poll_group_options options;
    options.idle_polls_before_sleep = idle_polls_before_sleep;
    options.max_sleep = never;
    return options;
}

} // namespace

TEST(wakeup, notify_without_a_sleeper_writes_nothing)
{
    // The cheap path: nobody is armed, so notify() must not make a system call; the eventfd stays
    // unreadable, and a later sleep is not woken by this stale notify.
    wakeup signal;
    signal.notify();
    signal.notify();
    EXPECT_FALSE(readable(signal.fd()));
    EXPECT_EQ(signal.sleep_unless([] { return false; }, 1ms), wake_reason::timed_out);
}

TEST(wakeup, work_made_visible_before_sleeping_is_found_by_the_recheck)
{
    // A producer that pushes and notifies before the sleeper arms: the notify is a no-op (nobody
    // sleeps), so only the re-check can save the message. It must, and the sleeper must not block.
    wakeup signal;
    mailbox<int> inbox{4};
    ASSERT_TRUE(inbox.try_push(1));
    signal.notify();
    const auto start = steady::now();
    EXPECT_EQ(signal.sleep_unless([&] { return !inbox.empty_approx(); }, never), wake_reason::work_found);
    EXPECT_LT(steady::now() - start, patience);
    EXPECT_FALSE(readable(signal.fd()));
}

TEST(wakeup, notify_between_arming_and_blocking_is_not_lost)
{
    // The race the protocol exists for: the notify lands after the sleeper armed but before it
    // blocks (here, inside the re-check). The sleeper must return at once as notified; a lost
    // notify would block for a minute and return timed_out.
    wakeup signal;
    const auto start = steady::now();
    const wake_reason reason = signal.sleep_unless(
        [&] {
            signal.notify();
            return false;
        },
        never);
    EXPECT_EQ(reason, wake_reason::notified);
    EXPECT_LT(steady::now() - start, patience);
    EXPECT_FALSE(readable(signal.fd())) << "the sleeper must consume the notify";
}

TEST(wakeup, sleeper_wakes_on_notify_from_another_thread)
{
    // The re-check tells the other thread that the sleeper is armed, then finds no work; the other
    // thread notifies. Whether the notify arrives before or during ppoll, the sleeper must return
    // notified long before its one-minute timeout.
    wakeup signal;
    std::atomic<bool> armed{false};
    std::thread notifier{[&] {
        while (!armed.load(std::memory_order_acquire)) {
            std::this_thread::yield();
        }
        // most likely inside ppoll by now; correctness does not depend on it
        std::this_thread::sleep_for(10ms);
        signal.notify();
    }};
    const auto start = steady::now();
    const wake_reason reason = signal.sleep_unless(
        [&] {
            armed.store(true, std::memory_order_release);
            return false;
        },
        never);
    const auto elapsed = steady::now() - start;
    notifier.join();
    EXPECT_EQ(reason, wake_reason::notified);
    EXPECT_LT(elapsed, patience);
}

TEST(wakeup, timeout_elapses_without_notify)
{
    wakeup signal;
    int rechecks = 0;
    const auto start = steady::now();
    EXPECT_EQ(signal.sleep_unless(
                  [&] {
                      ++rechecks;
                      return false;
                  },
                  50ms),
              wake_reason::timed_out);
    EXPECT_GE(steady::now() - start, 50ms) << "ppoll never returns before its timeout";
    EXPECT_EQ(rechecks, 1);
    EXPECT_FALSE(signal.wait(1ms));
}

TEST(wakeup, zero_timeout_rechecks_without_blocking)
{
    wakeup signal;
    EXPECT_EQ(signal.sleep_unless([] { return false; }, 0ns), wake_reason::timed_out);
    EXPECT_EQ(signal.sleep_unless([] { return true; }, 0ns), wake_reason::work_found);
}

TEST(wakeup, epoll_style_arm_and_disarm)
{
    // An embedder's own loop: arm, re-check, wait on fd() with its other descriptors, disarm.
    wakeup signal;
    signal.arm();
    EXPECT_FALSE(readable(signal.fd()));
    signal.notify();
    EXPECT_TRUE(readable(signal.fd())) << "an armed notify must make fd() readable for epoll";
    signal.notify(); // a second notifier finds the flag taken: no second write needed
    EXPECT_TRUE(signal.disarm()) << "disarm reports the notify";
    EXPECT_FALSE(readable(signal.fd())) << "disarm consumes the eventfd count";

    // Armed without a notify: nothing pending, nothing to report.
    signal.arm();
    EXPECT_FALSE(signal.disarm());
    signal.notify();
    EXPECT_FALSE(readable(signal.fd())) << "disarmed: notify is the cheap no-op again";
}

TEST(wakeup, exception_from_the_recheck_disarms)
{
    wakeup signal;
    EXPECT_THROW(signal.sleep_unless([]() -> bool { throw std::runtime_error{"poll failed"}; }, never),
                 std::runtime_error);
    signal.notify();
    EXPECT_FALSE(readable(signal.fd())) << "the flag must have been cleared on the way out";
}

TEST(poll_group_runner, external_mode_polls_on_the_caller_thread_without_a_thread)
{
    // poll_once runs the work right here, records the poll, and never starts a thread or sleeps.
    std::vector<std::size_t> script{3, 0, 1, 0, 0};
    std::size_t step = 0;
    std::thread::id caller;
    poll_group_runner runner{[&] {
        caller = std::this_thread::get_id();
        return script.at(step++);
    }};
    EXPECT_FALSE(runner.running());
    EXPECT_EQ(runner.poll_once(), 3U);
    EXPECT_EQ(caller, std::this_thread::get_id());
    EXPECT_EQ(runner.poll_once(), 0U);
    EXPECT_EQ(runner.poll_once(), 1U);
    EXPECT_EQ(runner.poll_once(), 0U);
    EXPECT_EQ(runner.poll_once(), 0U);
    EXPECT_FALSE(runner.running());
    const poll_group_counters counters = runner.statistics().snapshot();
    EXPECT_EQ(counters, (poll_group_counters{.polls = 5, .busy_polls = 2, .idle_polls = 3}));
}

TEST(poll_group_runner, external_mode_embedder_sleeps_on_the_wakeup_fd)
{
    // The embedder's loop in poll_once mode: arm, re-check with poll_once, wait on fd(), disarm;
    // a producer's send must make fd() readable and the next poll handle the message.
    inbox_group group{poll_group_options{}};
    nvmekit::wakeup& signal = group.runner.wakeup_handle();
    signal.arm();
    EXPECT_EQ(group.runner.poll_once(), 0U);
    std::thread producer{[&] { group.send(7); }};
    pollfd descriptor{signal.fd(), POLLIN, 0};
    const int ready =
        ::poll(&descriptor, 1,
               static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(patience).count()));
    producer.join();
    EXPECT_EQ(ready, 1);
    EXPECT_TRUE(signal.disarm());
    EXPECT_EQ(group.runner.poll_once(), 1U);
    EXPECT_EQ(group.last_value.load(), 7);
}

TEST(poll_group_runner, thread_mode_runs_the_work_until_stopped)
{
    std::atomic<std::uint64_t> calls{0};
    std::atomic<bool> on_other_thread{true};
    thread_exit_watch thread_exit;
    const auto controller = std::this_thread::get_id();
    poll_group_runner runner{[&] {
        if (std::this_thread::get_id() == controller) {
            on_other_thread.store(false);
        }
        thread_exit.watch();
        calls.fetch_add(1, std::memory_order_relaxed);
        return std::size_t{1};
    }};
    runner.start();
    EXPECT_TRUE(runner.running());
    EXPECT_TRUE(eventually([&] { return calls.load() >= 1000; }));
    runner.stop();
    EXPECT_FALSE(runner.running());
    EXPECT_TRUE(on_other_thread.load());

    // Joined: the thread that ran the work has ended, so the work no longer runs, and the counters
    // are exact.
    EXPECT_TRUE(thread_exit.exited()) << "stop() returned before the group's thread ended";
    const std::uint64_t after_stop = calls.load();
    const poll_group_counters counters = runner.statistics().snapshot();
    EXPECT_EQ(counters.polls, after_stop);
    EXPECT_EQ(counters.busy_polls, after_stop);
    EXPECT_EQ(counters.idle_polls, 0U);
    EXPECT_EQ(counters.sleeps, 0U) << "a group that always has work never sleeps";
}

TEST(poll_group_runner, stop_joins_promptly_while_sleeping)
{
    // The group sleeps with a one-minute max_sleep; stop() must wake it through the wakeup rather
    // than wait for the timeout.
    std::atomic<std::uint64_t> polls{0};
    poll_group_runner runner{[&] {
                                 polls.fetch_add(1, std::memory_order_release);
                                 return std::size_t{0};
                             },
                             sleepy(10)};
    runner.start();
    // 10 idle polls, then the armed re-check poll: once the 11th poll has run, the group is asleep
    // or about to block (acquire: the arming happened before this test thread goes on to stop()).
    ASSERT_TRUE(eventually([&] { return polls.load(std::memory_order_acquire) >= 11; }));
    const auto start = steady::now();
    runner.stop();
    EXPECT_LT(steady::now() - start, patience) << "stop() waited for max_sleep";
    EXPECT_FALSE(runner.running());
    const poll_group_counters counters = runner.statistics().snapshot();
    EXPECT_EQ(counters.polls, 11U) << "10 idle polls and the re-check, then one sleep ended by stop()";
    EXPECT_EQ(counters.sleeps, 1U);
    EXPECT_EQ(counters.wakeups, 1U);
}

TEST(poll_group_runner, busy_mode_never_sleeps)
{
    poll_group_options options;
    options.busy_poll = true;
    options.idle_polls_before_sleep = 1;
    options.max_sleep = never;
    poll_group_runner runner{[] { return std::size_t{0}; }, options};
    runner.start();
    ASSERT_TRUE(eventually([&] { return runner.statistics().snapshot().idle_polls >= 100'000; }));
    runner.stop();
    const poll_group_counters counters = runner.statistics().snapshot();
    EXPECT_EQ(counters.sleeps, 0U);
    EXPECT_EQ(counters.wakeups, 0U);
    EXPECT_EQ(counters.busy_polls, 0U);
    EXPECT_EQ(counters.polls, counters.idle_polls);
}

TEST(poll_group_runner, idle_group_sleeps_after_the_configured_idle_polls_and_wakes_on_notify)
{
    // The work source is a mailbox. With a one-minute max_sleep, only a producer's notify can make
    // the sleeping group handle a message within the test's patience.
    inbox_group group{sleepy(100)};
    group.runner.start();
    // 100 idle polls, then the armed re-check: asleep (or about to be) once the 101st poll is counted.
    ASSERT_TRUE(eventually([&] { return group.runner.statistics().snapshot().polls >= 101; }));

    const auto start = steady::now();
    group.send(42);
    ASSERT_TRUE(eventually([&] { return group.handled.load() == 1; })) << "the notify did not wake the group";
    EXPECT_LT(steady::now() - start, patience);
    EXPECT_EQ(group.last_value.load(), 42);
    group.runner.stop();

    const poll_group_counters counters = group.runner.statistics().snapshot();
    EXPECT_EQ(counters.commands, 1U);
    EXPECT_EQ(counters.bytes, inbox_group::bytes_per_command);
    EXPECT_EQ(counters.busy_polls, 1U);
    // Woken once by send(), once more by stop() if it got back to sleep (after another 100 idle polls).
    EXPECT_GE(counters.sleeps, 1U);
    EXPECT_LE(counters.sleeps, 2U);
    EXPECT_EQ(counters.wakeups, counters.sleeps)
        << "max_sleep is a minute: every sleep was ended by a notify";
    EXPECT_GE(counters.idle_polls, 101U * counters.sleeps) << "slept before 100 idle polls and the re-check";
    EXPECT_EQ(counters.polls, counters.busy_polls + counters.idle_polls);
}

TEST(poll_group_runner, sleeping_group_polls_again_after_max_sleep_without_notify)
{
    // Timers and backend completions that never notify must still progress: with max_sleep = 1 ms
    // and nobody notifying, the group must keep waking up by itself.
    std::atomic<std::uint64_t> polls{0};
    poll_group_options options;
    options.idle_polls_before_sleep = 1;
    options.max_sleep = 1ms;
    poll_group_runner runner{[&] {
                                 polls.fetch_add(1, std::memory_order_relaxed);
                                 return std::size_t{0};
                             },
                             options};
    runner.start();
    ASSERT_TRUE(eventually([&] { return runner.statistics().snapshot().sleeps >= 20; }));
    runner.stop();
    const poll_group_counters counters = runner.statistics().snapshot();
    EXPECT_GE(counters.sleeps, 20U);
    EXPECT_LE(counters.wakeups, 1U) << "only stop() notified";
    // Each sleep is preceded by one idle poll and the re-check.
    EXPECT_GE(counters.idle_polls, 2 * counters.sleeps);
    EXPECT_EQ(counters.polls, counters.idle_polls);
    EXPECT_EQ(counters.polls, polls.load());
}

TEST(poll_group_runner, ping_pong_never_loses_a_wakeup)
{
    // 20,000 round trips in which the group goes back to sleep after every message (it sleeps after
    // its first idle poll), and the sender sends the next message as soon as it sees the previous
    // one handled, so notifies land anywhere in arming, re-checking and blocking. A lost notify
    // leaves the group asleep for a minute and fails the round.
    inbox_group group{sleepy(0)};
    group.runner.start();
    constexpr int rounds = 20'000;
    int failed_round = -1;
    for (int round = 0; round < rounds; ++round) {
        group.send(round);
        if (!eventually_spinning(
                [&] { return group.handled.load(std::memory_order_acquire) == std::uint64_t(round) + 1; })) {
            failed_round = round;
            break;
        }
    }
    group.runner.stop();
    EXPECT_EQ(failed_round, -1);
    const poll_group_counters counters = group.runner.statistics().snapshot();
    EXPECT_EQ(counters.commands, std::uint64_t{rounds});
    EXPECT_EQ(counters.polls, counters.busy_polls + counters.idle_polls);
    EXPECT_EQ(counters.wakeups, counters.sleeps)
        << "max_sleep is a minute: every sleep was ended by a notify";
}

TEST(poll_group_runner, many_producers_feed_a_sleepy_group)
{
    // 4 producers send 20,000 messages each to a group that sleeps whenever it runs dry. Every
    // message must be handled, none twice, without waiting for max_sleep.
    inbox_group group{sleepy(16)};
    group.runner.start();
    constexpr int producers = 4;
    constexpr int per_producer = 20'000;
    std::vector<std::thread> threads;
    for (int producer = 0; producer < producers; ++producer) {
        threads.emplace_back([&group] {
            for (int sequence = 0; sequence < per_producer; ++sequence) {
                group.send(sequence);
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    EXPECT_TRUE(eventually([&] { return group.handled.load() == std::uint64_t{producers} * per_producer; }))
        << "handled " << group.handled.load();
    group.runner.stop();
    const poll_group_counters counters = group.runner.statistics().snapshot();
    EXPECT_EQ(counters.commands, std::uint64_t{producers} * per_producer);
    EXPECT_EQ(counters.bytes, std::uint64_t{producers} * per_producer * inbox_group::bytes_per_command);
    EXPECT_EQ(counters.polls, counters.busy_polls + counters.idle_polls);
    EXPECT_TRUE(group.inbox.empty_approx());
}

TEST(poll_group_runner, can_be_restarted_after_stop)
{
    inbox_group group{sleepy(0)};
    group.runner.start();
    group.send(1);
    ASSERT_TRUE(eventually([&] { return group.handled.load() == 1; }));
    group.runner.stop();
    group.runner.stop(); // a second stop is a no-op
    EXPECT_FALSE(group.runner.running());
    EXPECT_TRUE(group.thread_exit.exited()) << "stop() returned before the group's thread ended";

    // Sent while stopped: no thread is left to handle it, so it waits in the inbox until the group
    // runs again.
    group.send(2);
    EXPECT_EQ(group.handled.load(), 1U);
    EXPECT_FALSE(group.inbox.empty_approx());
    EXPECT_EQ(group.runner.statistics().snapshot().commands, 1U);
    group.runner.start();
    EXPECT_TRUE(eventually([&] { return group.handled.load() == 2; }));
    EXPECT_EQ(group.last_value.load(), 2);
}

TEST(poll_group_runner, destructor_stops_the_thread)
{
    std::atomic<std::uint64_t> calls{0};
    thread_exit_watch thread_exit;
    {
        poll_group_runner runner{[&] {
                                     thread_exit.watch();
                                     calls.fetch_add(1, std::memory_order_relaxed);
                                     return std::size_t{0};
                                 },
                                 sleepy(1)};
        runner.start();
        ASSERT_TRUE(eventually([&] { return calls.load() >= 2; }));
        EXPECT_FALSE(thread_exit.exited());
        // Leaving the scope sleeping: the destructor must wake and join the thread (an unjoined
        // std::thread would terminate the program).
    }
    EXPECT_TRUE(thread_exit.exited()) << "the destructor returned before the group's thread ended";
}

TEST(poll_group_runner, names_its_thread)
{
    // Linux keeps 15 characters of a thread name; a longer name is cut, not refused.
    std::atomic<bool> named{false};
    std::string seen;
    poll_group_options options;
    options.name = "nvmekit-io-group-7-long";
    poll_group_runner runner{[&] {
                                 if (!named.load(std::memory_order_relaxed)) {
                                     char name[16] = {};
                                     ::pthread_getname_np(::pthread_self(), name, sizeof name);
                                     seen = name;
                                     named.store(true, std::memory_order_release);
                                 }
                                 return std::size_t{0};
                             },
                             options};
    EXPECT_EQ(runner.options().name, "nvmekit-io-grou");
    runner.start();
    ASSERT_TRUE(eventually([&] { return named.load(std::memory_order_acquire); }));
    runner.stop();
    EXPECT_EQ(seen, "nvmekit-io-grou");
}

TEST(poll_group_runner, pins_its_thread_to_the_cpu_asked_for)
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    ASSERT_EQ(::sched_getaffinity(0, sizeof allowed, &allowed), 0);
    std::optional<unsigned> target;
    for (unsigned cpu = CPU_SETSIZE; cpu-- > 0;) {
        if (CPU_ISSET(cpu, &allowed)) {
            target = cpu; // the highest allowed CPU: not where a default thread would necessarily run
            break;
        }
    }
    ASSERT_TRUE(target.has_value());

    std::atomic<int> wrong_cpu{0};
    std::atomic<int> samples{0};
    std::atomic<int> affinity_count{0};
    poll_group_options options;
    options.cpu = *target;
    options.busy_poll = true;
    poll_group_runner runner{[&] {
                                 if (samples.load(std::memory_order_relaxed) < 1000) {
                                     if (::sched_getcpu() != static_cast<int>(*target)) {
                                         wrong_cpu.fetch_add(1, std::memory_order_relaxed);
                                     }
                                     if (samples.load(std::memory_order_relaxed) == 0) {
                                         cpu_set_t mine;
                                         CPU_ZERO(&mine);
                                         ::pthread_getaffinity_np(::pthread_self(), sizeof mine, &mine);
                                         affinity_count.store(CPU_COUNT(&mine), std::memory_order_relaxed);
                                     }
                                     samples.fetch_add(1, std::memory_order_release);
                                 }
                                 return std::size_t{0};
                             },
                             options};
    runner.start();
    ASSERT_TRUE(eventually([&] { return samples.load(std::memory_order_acquire) >= 1000; }));
    runner.stop();
    EXPECT_EQ(affinity_count.load(), 1);
    EXPECT_EQ(wrong_cpu.load(), 0) << "polled on a CPU other than " << *target;
}

TEST(poll_group_runner, invalid_options_are_refused)
{
    poll_group_options zero_sleep;
    zero_sleep.max_sleep = 0ns;
    EXPECT_THROW((poll_group_runner{[] { return std::size_t{0}; }, zero_sleep}), std::invalid_argument);

    poll_group_options huge_cpu;
    huge_cpu.cpu = CPU_SETSIZE;
    EXPECT_THROW((poll_group_runner{[] { return std::size_t{0}; }, huge_cpu}), std::invalid_argument);
}

TEST(poll_group_runner, start_fails_cleanly_on_a_cpu_that_cannot_be_used)
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    ASSERT_EQ(::sched_getaffinity(0, sizeof allowed, &allowed), 0);
    std::optional<unsigned> unusable;
    for (unsigned cpu = CPU_SETSIZE; cpu-- > 0;) {
        if (!CPU_ISSET(cpu, &allowed)) {
            unusable = cpu;
            break;
        }
    }
    if (!unusable) {
        GTEST_SKIP() << "every CPU index is usable here";
    }
    std::atomic<int> calls{0};
    poll_group_options options;
    options.cpu = *unusable;
    poll_group_runner runner{[&] {
                                 calls.fetch_add(1);
                                 return std::size_t{0};
                             },
                             options};
    try {
        runner.start();
        ADD_FAILURE() << "start() on CPU " << *unusable << " must throw";
    } catch (const std::system_error& error) {
        EXPECT_EQ(error.code(), std::errc::invalid_argument);
    }
    EXPECT_FALSE(runner.running());
    EXPECT_EQ(calls.load(), 0) << "the work must not run on a thread that could not be set up";
}

TEST(poll_group_runner_death, poll_once_while_the_thread_runs)
{
    if (!nvmekit_test::asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT compiled out";
    }
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            poll_group_runner runner{[] { return std::size_t{0}; }};
            runner.start();
            runner.poll_once();
        },
        "poll_once called while its thread runs");
}
