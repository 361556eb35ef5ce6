//! Spatial algebra over any [`Scalar`](crate::Scalar): rotations as quaternions, rigid poses,
//! spatial motion and force vectors (Featherstone's 6D algebra, angular part first) and spatial
//! inertia. nalgebra's fixed-size matrices are the storage; nothing here needs `RealField`,
//! so batch-lane scalars (which have no ordering) work too.

mod inertia;
mod pose;
mod quat;
mod spatial;

pub use inertia::{SpatialInertia, principal_axes};
pub use pose::Pose;
pub use quat::{Quat, dexp_inv};
pub use spatial::{Force, Motion};

use nalgebra::{Matrix3, Vector3};

use crate::Scalar;

/// The matrix of `v × ·`.
#[inline]
pub fn skew<S: Scalar>(v: &Vector3<S>) -> Matrix3<S> {
    let z = S::zero();
    Matrix3::new(z, -v.z, v.y, v.z, z, -v.x, -v.y, v.x, z)
}

/// Euclidean length, written with `Scalar::sqrt` (nalgebra's `norm` needs `RealField`).
#[inline]
pub fn norm<S: Scalar>(v: &Vector3<S>) -> S {
    v.dot(v).sqrt()
}

/// Converts every entry of a vector to another scalar (see [`crate::scalar::convert`]).
pub fn convert_vector<S: Scalar, T: Scalar>(v: &Vector3<S>) -> Vector3<T> {
    v.map(crate::scalar::convert)
}

/// Makes `v` a zero vector of length `n`, reusing its storage when it already has that length
/// (a workspace's vectors keep their length from one step to the next).
pub(crate) fn zero_vector<S: Scalar>(v: &mut nalgebra::DVector<S>, n: usize) {
    if v.len() == n {
        v.fill(S::zero());
    } else {
        *v = nalgebra::DVector::zeros(n);
    }
}

/// `dst ← src`, reusing `dst`'s storage when the shapes agree.
pub(crate) fn copy_matrix<S: Scalar, R: nalgebra::Dim, C: nalgebra::Dim>(
    dst: &mut nalgebra::OMatrix<S, R, C>,
    src: &nalgebra::OMatrix<S, R, C>,
) where
    nalgebra::DefaultAllocator: nalgebra::allocator::Allocator<R, C>,
{
    if dst.shape() == src.shape() {
        dst.copy_from(src);
    } else {
        *dst = src.clone();
    }
}
