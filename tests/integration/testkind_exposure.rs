//! The test kind's `ExposureReady` and `ResourceNotOwned` against the simulated cluster.
