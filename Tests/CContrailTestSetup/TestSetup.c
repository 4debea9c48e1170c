// How many tests Swift Testing runs at once in this package's test binary.
//
// Unbounded (Swift Testing's default), all of the suite's tests start together: on a 2-core machine
// the cooperative pool then holds hundreds of runnable test tasks, and a server's or client's own
// tasks (a page's answer, a session's first message) can wait behind them for longer than the
// protocol's 10 s timeouts. A bounded width keeps the pool's queue short while the tests that wait
// (child processes, NATS, timeouts) still overlap. An explicit SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH
// in the environment wins.
#include "CContrailTestSetup.h"
#include <stdlib.h>

__attribute__((constructor)) static void ccontrail_bound_test_parallelism(void) {
    setenv("SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH", CCONTRAIL_TEST_WIDTH, 0);
}
