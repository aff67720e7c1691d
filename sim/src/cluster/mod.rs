//! Simulated cluster components (temporary module list until the skeleton lands).

pub mod pki;
