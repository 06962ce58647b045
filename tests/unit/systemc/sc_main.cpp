// libsystemc refers to sc_main; in the test programs built with the SystemC rigs, gtest's main()
// runs the tests, so it is never called.
#include <systemc>

int sc_main(int /*argc*/, char* /*argv*/[]) { return 0; }
