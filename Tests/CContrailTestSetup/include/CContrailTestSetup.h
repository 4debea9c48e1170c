#ifndef CCONTRAIL_TEST_SETUP_H
#define CCONTRAIL_TEST_SETUP_H

/// The most tests the package's test binary runs at once (see TestSetup.c), unless the environment
/// says otherwise.
#define CCONTRAIL_TEST_WIDTH "24"

#endif
