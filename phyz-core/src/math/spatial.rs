//! Spatial motion and force vectors (Featherstone), angular part first.
//!
//! A motion vector `[ω; v]` is an angular velocity and the linear velocity of the point at the
//! frame's origin; a force vector `[n; f]` is a moment about the origin and a force.

use std::ops::{Add, AddAssign, Mul, Neg, Sub};

use nalgebra::{Vector3, Vector6};

use crate::Scalar;

/// A spatial motion vector: velocity, acceleration, or a joint's motion axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Motion<S> {
    pub ang: Vector3<S>,
    pub lin: Vector3<S>,
}

/// A spatial force vector: a wrench, momentum, or a joint's force axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Force<S> {
    pub ang: Vector3<S>,
    pub lin: Vector3<S>,
}

macro_rules! spatial_vector {
    ($name:ident) => {
        impl<S: Scalar> $name<S> {
            #[inline]
            pub fn new(ang: Vector3<S>, lin: Vector3<S>) -> Self {
                $name { ang, lin }
            }

            #[inline]
            pub fn zero() -> Self {
                $name::new(Vector3::zeros(), Vector3::zeros())
            }

            /// `[ang; lin]` as one 6-vector, for products with 6×6 matrices.
            #[inline]
            pub fn to_vector(&self) -> Vector6<S> {
                Vector6::new(self.ang.x, self.ang.y, self.ang.z, self.lin.x, self.lin.y, self.lin.z)
            }

            #[inline]
            pub fn from_vector(v: &Vector6<S>) -> Self {
                $name::new(Vector3::new(v[0], v[1], v[2]), Vector3::new(v[3], v[4], v[5]))
            }
        }

        impl<S: Scalar> Add for $name<S> {
            type Output = Self;
            #[inline]
            fn add(self, rhs: Self) -> Self {
                $name::new(self.ang + rhs.ang, self.lin + rhs.lin)
            }
        }

        impl<S: Scalar> AddAssign for $name<S> {
            #[inline]
            fn add_assign(&mut self, rhs: Self) {
                self.ang += rhs.ang;
                self.lin += rhs.lin;
            }
        }

        impl<S: Scalar> Sub for $name<S> {
            type Output = Self;
            #[inline]
            fn sub(self, rhs: Self) -> Self {
                $name::new(self.ang - rhs.ang, self.lin - rhs.lin)
            }
        }

        impl<S: Scalar> Neg for $name<S> {
            type Output = Self;
            #[inline]
            fn neg(self) -> Self {
                $name::new(-self.ang, -self.lin)
            }
        }

        impl<S: Scalar> Mul<S> for $name<S> {
            type Output = Self;
            #[inline]
            fn mul(self, k: S) -> Self {
                $name::new(self.ang * k, self.lin * k)
            }
        }
    };
}

spatial_vector!(Motion);
spatial_vector!(Force);

impl<S: Scalar> Motion<S> {
    /// `self ×m m`: the rate of change of `m` seen from a frame moving with velocity `self`.
    #[inline]
    pub fn cross_motion(&self, m: &Motion<S>) -> Motion<S> {
        Motion::new(self.ang.cross(&m.ang), self.ang.cross(&m.lin) + self.lin.cross(&m.ang))
    }

    /// `self ×f f`: the rate of change of the force (or momentum) `f` in a frame moving with
    /// velocity `self`.
    #[inline]
    pub fn cross_force(&self, f: &Force<S>) -> Force<S> {
        Force::new(self.ang.cross(&f.ang) + self.lin.cross(&f.lin), self.ang.cross(&f.lin))
    }

    /// The power `self · f`.
    #[inline]
    pub fn dot(&self, f: &Force<S>) -> S {
        self.ang.dot(&f.ang) + self.lin.dot(&f.lin)
    }
}
