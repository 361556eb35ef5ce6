//! Errors raised while stepping.

/// Why a step (or a dynamics query) could not produce a state. The input state is left as it was.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StepError {
    #[error("{what} has {got} entries, the model needs {expected}")]
    Dimension { what: &'static str, expected: usize, got: usize },
    #[error("{what}[{index}] is not finite")]
    NonFiniteState { what: &'static str, index: usize },
    #[error("mocap_quat[{index}] has zero length: it names no orientation")]
    ZeroMocapQuat { index: usize },
    #[error("ctrl[{index}] is not finite")]
    NonFiniteControl { index: usize },
    #[error("the mass matrix is singular at body `{body}`: a joint moves no mass")]
    SingularMass { body: String },
    #[error("not supported yet: {what}")]
    Unsupported { what: String },
    /// The constraint solve failed, or (in dual numbers) its derivative does not exist.
    #[error(transparent)]
    Contact(#[from] crate::contact::ContactError),
    #[error(transparent)]
    ContactOverflow(#[from] crate::collision::Overflow),
    #[error("the step produced a non-finite {what}[{index}]")]
    NonFiniteResult { what: &'static str, index: usize },
}
