//! The console's contract: what the operator renders for `pgtoolbox-console` and what it reads.
