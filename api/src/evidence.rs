//! The evidence agent's contract: what the operator renders for `pgtoolbox-evidence-agent`,
//! what it reads, and the evidence it serves.
