//! phyz: differentiable rigid-body physics with pluggable autodiff backends.
//!
//! This crate re-exports the engine ([`phyz_core`]), adds built-in [`scenes`], and, with the
//! `dual` feature (on by default), forward-mode derivatives ([`dual`], from `phyz-dual`).
//! The README follows; its example is compiled and run as a doc test.
#![doc = include_str!("../README.md")]

pub use phyz_core::*;

pub mod scenes;
pub mod view;

#[cfg(feature = "dual")]
pub use phyz_dual as dual;
