//! `explain KIND/NAME`: why an object is Ready or not, in one read. Ready and the aspect that
//! decides it (the kind's order, as the conditions engine derives it), each condition with
//! what its reason means and what to do (the reason registry's texts), the facts of the
//! children behind them, and the recent Events.
//!
//! [`gather`] does the reading; everything else is pure: [`report`] decides what to say and
//! [`render`] says it as text (`-o json` serialises the same [`Report`]).

mod children;
mod gather;
mod render;
mod report;
mod target;

pub use gather::{GatherError, observe};
pub use render::render_text;
pub use report::report;
pub use target::{Target, TargetError};
