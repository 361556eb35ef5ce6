//! phyz: differentiable rigid-body physics with pluggable autodiff backends.
//!
//! This crate re-exports the engine ([`phyz_core`]) and, with the `dual` feature (on by default),
//! forward-mode derivatives ([`dual`], from `phyz-dual`).

pub use phyz_core::*;

#[cfg(feature = "dual")]
pub use phyz_dual as dual;
