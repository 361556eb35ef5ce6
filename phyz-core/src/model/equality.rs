//! Equality constraints (MJCF `<equality>`): MuJoCo's couplings of joint values and tendon
//! lengths, and its ties between bodies (`connect`: a shared point, `weld`: a fixed relative
//! pose), held softly by the constraint solve with their own reference and impedance.

use nalgebra::Vector3;

use crate::Scalar;
use crate::math::Quat;

/// What an equality constraint ties together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coupled {
    /// Hinge or slide joints (indices into the model's joints): the first's value, less its
    /// reference, follows a quartic in the second's; alone, it is held at `polycoef[0]`.
    Joints { first: usize, second: Option<usize> },
    /// Tendon lengths (indices into the model's tendons), the same way from their lengths at
    /// the reference pose.
    Tendons { first: usize, second: Option<usize> },
    /// Two bodies (indices; 0 is the world) held at a common point: each body's anchor
    /// ([`Equality::anchors`]) at the same place (MuJoCo's `connect`, a ball joint).
    Connect { bodies: [usize; 2] },
    /// Two bodies held at a fixed relative pose: each body's frame (anchor and orientation)
    /// coincides with the other's (MuJoCo's `weld`).
    Weld { bodies: [usize; 2] },
}

/// An equality constraint `x₁ − x₁⁰ = Σ_k c_k (x₂ − x₂⁰)^k` (MuJoCo's joint and tendon
/// equalities; `x` joint values or tendon lengths, `x⁰` their values at the reference pose).
#[derive(Clone, Debug, PartialEq)]
pub struct Equality<S> {
    pub name: String,
    pub coupled: Coupled,
    /// The quartic's coefficients `c_0 … c_4` (joints and tendons).
    pub polycoef: [S; 5],
    /// The frame each body of a connect or weld holds, in that body's frame: the anchors meet,
    /// and a weld's orientations agree.
    pub anchors: [Vector3<S>; 2],
    pub orientations: [Quat<S>; 2],
    /// A weld's weight of the orientation error against the position error (MuJoCo's
    /// `torquescale`, a length).
    pub torquescale: S,
    pub solref: [S; 2],
    pub solimp: [S; 5],
    /// Whether the constraint is enforced (MJCF `active`; MuJoCo's `eq_active0`): an inactive
    /// one is part of the model but adds no rows.
    pub active: bool,
}

impl<S: Scalar> Equality<S> {
    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Equality<T> {
        Equality {
            name: self.name.clone(),
            coupled: self.coupled,
            polycoef: self.polycoef.map(&mut *f),
            anchors: self.anchors.each_ref().map(|a| a.map(&mut *f)),
            orientations: self.orientations.map(|q| q.map(&mut *f)),
            torquescale: f(self.torquescale),
            solref: self.solref.map(&mut *f),
            solimp: self.solimp.map(&mut *f),
            active: self.active,
        }
    }

    /// The violation `x₁ − x₁⁰ − p(x₂ − x₂⁰)` and its derivative `p'` with respect to the
    /// second value, from the values' offsets from their references.
    pub fn violation(&self, first: S, second: Option<S>) -> (S, S) {
        let c = &self.polycoef;
        match second {
            Some(x) => {
                let value = c[0] + x * (c[1] + x * (c[2] + x * (c[3] + x * c[4])));
                let two = S::from_f64(2.0);
                let slope = c[1] + x * (two * c[2] + x * (S::from_f64(3.0) * c[3] + x * S::from_f64(4.0) * c[4]));
                (first - value, slope)
            }
            None => (first - c[0], S::zero()),
        }
    }
}

/// An equality constraint as the builder takes it, naming what it couples.
#[derive(Clone, Debug, PartialEq)]
pub struct EqualitySpec {
    pub name: String,
    pub coupled: CoupledNames,
    pub polycoef: [f64; 5],
    pub torquescale: f64,
    pub solref: [f64; 2],
    pub solimp: [f64; 5],
    /// Enforced from the start (MJCF `active`, true by default).
    pub active: bool,
}

/// What an [`EqualitySpec`] couples, by name (a missing second body is the world).
#[derive(Clone, Debug, PartialEq)]
pub enum CoupledNames {
    Joints {
        first: String,
        second: Option<String>,
    },
    Tendons {
        first: String,
        second: Option<String>,
    },
    /// `anchor` in the first body's frame; the second body holds the point where the anchor
    /// lies at the reference pose.
    Connect {
        first: String,
        second: Option<String>,
        anchor: [f64; 3],
    },
    /// `anchor` in the second body's frame; the first body holds the frame `relpose`
    /// (position, quaternion) or, without it, the anchor's frame at the reference pose.
    Weld {
        first: String,
        second: Option<String>,
        anchor: [f64; 3],
        relpose: Option<[f64; 7]>,
    },
    /// Two sites' frames (a connect holds their origins together, a weld their poses).
    Sites {
        first: String,
        second: String,
        weld: bool,
    },
}
