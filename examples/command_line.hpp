#pragma once
// The command-line conventions of nvmekit's programs: --help prints the usage on stdout and
// exits 0, --version prints the program's name and nvmekit's version and exits 0, and a bad
// option or value is reported on stderr, with the usage, and exit status 2.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nvmekit/config.hpp>

namespace nvmekit_programs {

struct program {
    const char* name;
    const char* usage; ///< what follows "usage: ", ending in a newline
};

/// A bad option or value: the problem and the usage on stderr, exit status 2.
[[noreturn]] inline void bad_usage(const program& p, std::string_view problem)
{
    std::fprintf(stderr, "%s: %.*s\nusage: %s", p.name, static_cast<int>(problem.size()), problem.data(),
                 p.usage);
    std::exit(2);
}

/// --help (or -h) and --version: answered here, and the program exits 0. False for any other
/// argument.
inline bool standard_option(const program& p, std::string_view arg)
{
    if (arg == "--help" || arg == "-h") {
        std::printf("usage: %s", p.usage);
        std::exit(0);
    }
    if (arg == "--version") {
        std::printf("%s %d.%d.%d\n", p.name, NVMEKIT_VERSION_MAJOR, NVMEKIT_VERSION_MINOR,
                    NVMEKIT_VERSION_PATCH);
        std::exit(0);
    }
    return false;
}

/// The arguments of a program that takes no options besides --help and --version.
inline void no_options(const program& p, int argc, char** argv)
{
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        standard_option(p, arg);
        bad_usage(p, "unknown option " + std::string{arg});
    }
}

} // namespace nvmekit_programs
