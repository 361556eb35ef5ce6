//! Errors of the MJCF loader: every one names the file, the line and column, and the element.

use std::fmt;
use std::path::PathBuf;

use crate::model::ModelError;

/// Where in the input an error is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
    /// The element's tag, e.g. `joint`; empty for errors before any element (unreadable file,
    /// malformed XML).
    pub element: String,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)?;
        if !self.element.is_empty() {
            write!(f, ": <{}>", self.element)?;
        }
        Ok(())
    }
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MjcfErrorKind {
    #[error("cannot read the file: {0}")]
    Io(String),
    #[error("malformed XML: {0}")]
    Xml(String),
    #[error("{0}")]
    Invalid(String),
    #[error("not supported by phyz: {0}")]
    Unsupported(Unsupported),
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// What phyz does not implement: a description, and the attribute when it is one attribute's
/// value (set on the element or inherited from its default class) and not the whole element.
/// It reads as its description (`&str`).
#[derive(Clone, Debug, PartialEq)]
pub struct Unsupported {
    pub what: String,
    pub attribute: Option<String>,
}

impl std::ops::Deref for Unsupported {
    type Target = str;
    fn deref(&self) -> &str {
        &self.what
    }
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

/// A model file that cannot be loaded, and where.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{location}: {kind}")]
pub struct MjcfError {
    pub location: Location,
    pub kind: MjcfErrorKind,
}
