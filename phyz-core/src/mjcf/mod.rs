//! Loading MuJoCo models (MJCF) into a [`Model<f64>`](crate::Model).
//!
//! The loader reads the MJCF subset that real models use (see `docs/mjcf.md`), applies MuJoCo's
//! compiler rules (default classes, angle units, orientation specifiers, `fromto`, inertia from
//! geoms, `settotalmass`, the `limited="auto"` rule), and builds the model through
//! [`ModelBuilder`](crate::ModelBuilder), so a loaded model passes the same checks as a built
//! one. Anything that changes the physics and phyz does not implement is an error naming file,
//! line and element; rendering-only elements are skipped.

mod actuator_record;
mod align;
mod attributes;
mod compile;
mod constants;
mod defaults;
mod element;
mod error;
mod frame;
mod length_range;
mod mass;
mod muscle;
mod replicate;
mod source;

use std::path::Path;

pub use attributes::{Neutral, Treatment, all as accepted_attributes};
pub use error::{Location, MjcfError, MjcfErrorKind, Unsupported};

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

/// What loading a model finds when the unsupported parts are set aside instead of stopping
/// the load: every unsupported element or attribute, in the order met, and the model made of
/// the rest (or the first error of another kind).
#[derive(Debug)]
pub struct Survey {
    pub unsupported: Vec<MjcfError>,
    pub model: Result<Model<f64>, MjcfError>,
}

/// Most unsupported parts a survey sets aside before it gives up.
const MAX_SET_ASIDE: usize = 1000;

/// Loads `path` as [`load`] does, but where [`load`] stops at the first unsupported element
/// or attribute, this records it, takes it out of the model's text and loads again, until the
/// rest loads (`phyz info`'s full listing of what phyz does not support).
pub fn survey(path: impl AsRef<Path>) -> Survey {
    let mut unsupported = Vec::new();
    let mut sources = match source::Sources::read(path.as_ref(), None) {
        Ok(sources) => sources,
        Err(e) => return Survey { unsupported, model: Err(e) },
    };
    loop {
        let model = sources.parse().and_then(|parsed| compile::compile(&parsed));
        match model {
            Err(e) if unsupported.len() < MAX_SET_ASIDE => {
                let MjcfErrorKind::Unsupported(what) = &e.kind else { return Survey { unsupported, model: Err(e) } };
                if !sources.without(&e.location, what.attribute.as_deref()) {
                    return Survey { unsupported, model: Err(e) };
                }
                unsupported.push(e);
            }
            model => return Survey { unsupported, model },
        }
    }
}
