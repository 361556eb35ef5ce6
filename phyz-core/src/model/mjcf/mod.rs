//! Loading MuJoCo models (MJCF) into a [`Model<f64>`](crate::Model).
//!
//! The loader reads the MJCF subset that real models use (see `docs/mjcf.md`), applies MuJoCo's
//! compiler rules (default classes, angle units, orientation specifiers, `fromto`, inertia from
//! geoms, `settotalmass`, the `limited="auto"` rule), and builds the model through
//! [`ModelBuilder`](crate::ModelBuilder), so a loaded model passes the same checks as a built
//! one. Anything that changes the physics and phyz does not implement is an error naming file,
//! line and element; rendering-only elements are skipped.

mod compile;
mod defaults;
mod element;
mod error;
mod frame;
mod mass;
mod source;

use std::path::Path;

pub use error::{Location, MjcfError, MjcfErrorKind};

use crate::model::Model;

/// Loads the model in the MJCF file at `path` (and the files it includes).
pub fn load(path: impl AsRef<Path>) -> Result<Model<f64>, MjcfError> {
    let sources = source::Sources::read(path.as_ref(), None)?;
    compile::compile(&sources.parse()?)
}

/// Loads a model from MJCF text; `path` names it in errors and anchors relative includes.
pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Model<f64>, MjcfError> {
    let sources = source::Sources::read(path.as_ref(), Some(text.to_string()))?;
    compile::compile(&sources.parse()?)
}
