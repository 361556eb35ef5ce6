//! Equality constraints (MJCF `<equality>`): MuJoCo's couplings of joint values and tendon
//! lengths, held softly by the constraint solve with their own reference and impedance.

use crate::Scalar;

/// What an equality constraint ties together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coupled {
    /// Hinge or slide joints (indices into the model's joints): the first's value, less its
    /// reference, follows a quartic in the second's; alone, it is held at `polycoef[0]`.
    Joints { first: usize, second: Option<usize> },
    /// Tendon lengths (indices into the model's tendons), the same way from their lengths at
    /// the reference pose.
    Tendons { first: usize, second: Option<usize> },
}

/// An equality constraint `x₁ − x₁⁰ = Σ_k c_k (x₂ − x₂⁰)^k` (MuJoCo's joint and tendon
/// equalities; `x` joint values or tendon lengths, `x⁰` their values at the reference pose).
#[derive(Clone, Debug, PartialEq)]
pub struct Equality<S> {
    pub name: String,
    pub coupled: Coupled,
    /// The quartic's coefficients `c_0 … c_4`.
    pub polycoef: [S; 5],
    pub solref: [S; 2],
    pub solimp: [S; 5],
}

impl<S: Scalar> Equality<S> {
    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Equality<T> {
        Equality {
            name: self.name.clone(),
            coupled: self.coupled,
            polycoef: self.polycoef.map(&mut *f),
            solref: self.solref.map(&mut *f),
            solimp: self.solimp.map(&mut *f),
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
    pub solref: [f64; 2],
    pub solimp: [f64; 5],
}

/// The joints or tendons an [`EqualitySpec`] couples, by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoupledNames {
    Joints { first: String, second: Option<String> },
    Tendons { first: String, second: Option<String> },
}
