//! Explicit contact pairs (MJCF `<contact><pair>`): two geoms that are tested for contact
//! whatever their `contype` and `conaffinity`, with the contact's own dimension, friction,
//! solref, solimp and margin in place of those mixed from the geoms (MuJoCo's `mjModel.pair_*`).

use super::{DEFAULT_SOLIMP, DEFAULT_SOLREF};
use crate::Scalar;

/// An explicit contact pair.
#[derive(Clone, Debug, PartialEq)]
pub struct ContactPair<S> {
    pub name: String,
    /// Global geom indices (bodies' geoms in order), the lower first.
    pub geoms: [usize; 2],
    /// MuJoCo's `condim`: 1, 3, 4 or 6.
    pub condim: u8,
    /// Sliding (twice), torsional and rolling (twice) friction; phyz takes the friction
    /// isotropic, so each pair of sliding and rolling numbers is one value twice.
    pub friction: [S; 5],
    pub solref: [S; 2],
    /// The reference of an elliptic cone's friction rows; `[0, 0]` takes `solref`'s.
    pub solreffriction: [S; 2],
    pub solimp: [S; 5],
    /// The distance within which the pair's contacts act (MuJoCo's pair `margin`; its `gap`
    /// changes nothing the step solves, as for geoms).
    pub margin: S,
    pub gap: S,
}

impl<S: Scalar> ContactPair<S> {
    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> ContactPair<T> {
        ContactPair {
            name: self.name.clone(),
            geoms: self.geoms,
            condim: self.condim,
            friction: self.friction.map(&mut *f),
            solref: self.solref.map(&mut *f),
            solreffriction: self.solreffriction.map(&mut *f),
            solimp: self.solimp.map(&mut *f),
            margin: f(self.margin),
            gap: f(self.gap),
        }
    }
}

/// A contact pair as the builder takes it, naming its geoms.
#[derive(Clone, Debug, PartialEq)]
pub struct ContactPairSpec {
    pub name: String,
    pub geoms: [String; 2],
    pub condim: u8,
    pub friction: [f64; 5],
    pub solref: [f64; 2],
    pub solreffriction: [f64; 2],
    pub solimp: [f64; 5],
    pub margin: f64,
    pub gap: f64,
}

impl ContactPairSpec {
    /// A pair of the named geoms with MuJoCo's defaults.
    pub fn new(geom1: impl Into<String>, geom2: impl Into<String>) -> Self {
        ContactPairSpec {
            name: String::new(),
            geoms: [geom1.into(), geom2.into()],
            condim: 3,
            friction: [1.0, 1.0, 0.005, 0.0001, 0.0001],
            solref: DEFAULT_SOLREF,
            solreffriction: [0.0, 0.0],
            solimp: DEFAULT_SOLIMP,
            margin: 0.0,
            gap: 0.0,
        }
    }
}
