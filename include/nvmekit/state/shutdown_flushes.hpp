#pragma once
/// The flushes of a normal shutdown (CC.SHN = 01b): every volatile write cache of the attached
/// namespaces is flushed before CSTS.SHST reads complete (Base 2.0 3.6.2).
///
/// Each namespace has one flush request for the controller's life. Shutdowns are counted in
/// generations: a reset abandons the shutdown in progress (abandon()), and a flush submitted for
/// an earlier generation does not count for the current one. A shutdown that finds its
/// namespace's flush still in the backend does not reuse it: the flush is submitted again when
/// that one returns, since writes completed since may not be covered by it.
///
///     shutdown_flushes<my_namespace, routed_completion> flushes;
///     flushes.start(owner, &on_flush_complete, [&](auto&& flush_one) {
///         for (auto& ns : namespaces) if (ns.has_volatile_cache()) flush_one(ns);
///     });
///     ...                     // the backend completes; on_flush_complete calls finished()
///     flushes.pending() == 0  // the shutdown may complete
///
/// Single-threaded: the admin context only (completions that ran elsewhere are routed to it
/// through each flush's `routed` node).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

template <typename Namespace, typename Routed>
class shutdown_flushes {
public:
    /// One namespace's flush; its address is stable while the backend holds it.
    struct flush {
        void* owner = nullptr; ///< what start() was given, for the completion callback
        Namespace* ns = nullptr;
        block_request request{};
        bool in_backend = false;
        Routed routed{};             ///< its completion, when it ran outside the owner's context
        std::uint64_t submitted = 0; ///< generation of the flush in the backend
        std::uint64_t wanted = 0;    ///< latest generation that needs this flush
    };

    /// The shutdown in progress, if any, is abandoned: flushes still in a backend no longer count.
    void abandon() noexcept
    {
        ++generation_;
        pending_ = 0;
    }

    /// Starts a shutdown: `visit` is called with a callable that takes a namespace to flush, once
    /// for each. The flush requests complete through `complete` (request.context is the flush),
    /// which must call finished() in the owner's context.
    template <typename Visit>
    void start(void* owner, void (*complete)(block_request&, block_status), Visit&& visit)
    {
        abandon();
        visit([&](Namespace& ns) {
            flush& one = flush_for(ns, owner);
            one.wanted = generation_;
            ++pending_;
            if (!one.in_backend) {
                submit(one, complete);
            }
        });
    }

    /// `done` came back from its backend.
    void finished(flush& done)
    {
        done.in_backend = false;
        --in_backend_;
        if (done.submitted == generation_) {
            --pending_;
        } else if (done.wanted == generation_) {
            submit(done, done.request.complete); // the current shutdown still needs its own flush
        }
    }

    /// Flushes the current shutdown still waits for.
    [[nodiscard]] std::size_t pending() const noexcept { return pending_; }
    /// Flush requests in a backend, of any generation (the owner outlives them).
    [[nodiscard]] std::size_t in_backend() const noexcept { return in_backend_; }

private:
    [[nodiscard]] flush& flush_for(Namespace& ns, void* owner)
    {
        for (auto& one : flushes_) {
            if (one->ns == &ns) {
                return *one;
            }
        }
        auto& one = *flushes_.emplace_back(std::make_unique<flush>());
        one.owner = owner;
        one.ns = &ns;
        return one;
    }

    void submit(flush& one, void (*complete)(block_request&, block_status))
    {
        one.request = block_request{.operation = block_operation::flush};
        one.request.context = &one;
        one.request.complete = complete;
        one.submitted = generation_;
        one.in_backend = true;
        ++in_backend_;
        one.ns->backend().submit(one.request);
    }

    std::vector<std::unique_ptr<flush>> flushes_;
    std::uint64_t generation_ = 0;
    std::size_t pending_ = 0; ///< of the current generation
    std::size_t in_backend_ = 0;
};

} // namespace detail
NVMEKIT_END_NAMESPACE
