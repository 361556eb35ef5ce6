//! Spatial algebra over any [`Scalar`](crate::Scalar): rotations as quaternions, rigid poses,
//! spatial motion and force vectors (Featherstone's 6D algebra, angular part first) and spatial
//! inertia. nalgebra's fixed-size matrices are the storage; nothing here needs `RealField`,
//! so batch-lane scalars (which have no ordering) work too.

mod inertia;
mod pose;
mod quat;
mod sparse;
mod spatial;
mod subspace;
mod wrap;

pub use inertia::{SpatialInertia, principal_axes};
pub use pose::Pose;
pub use quat::{Quat, dexp_inv};
pub use sparse::SparseRows;
pub use spatial::{Force, Motion};
pub use subspace::Subspace;
pub use wrap::{Wrap, WrapShape, wrap};

use nalgebra::{DMatrix, DVector, Matrix3, Vector3};

use crate::Scalar;

/// The matrix of `v × ·`.
#[inline]
pub fn skew<S: Scalar>(v: &Vector3<S>) -> Matrix3<S> {
    let z = S::zero();
    Matrix3::new(z, -v.z, v.y, v.z, z, -v.x, -v.y, v.x, z)
}

/// `a·b` for 3×3 matrices, written out entry by entry: nalgebra's generic product runs its
/// BLAS-like kernel, which at this size costs several times the arithmetic (and far more for
/// dual numbers, whose every product and zero test is a vector operation).
#[inline]
pub fn mat3_mul<S: Scalar>(a: &Matrix3<S>, b: &Matrix3<S>) -> Matrix3<S> {
    Matrix3::from_fn(|i, j| a[(i, 0)] * b[(0, j)] + a[(i, 1)] * b[(1, j)] + a[(i, 2)] * b[(2, j)])
}

/// `a·v`, written out (see [`mat3_mul`]).
#[inline]
pub fn mat3_apply<S: Scalar>(a: &Matrix3<S>, v: &Vector3<S>) -> Vector3<S> {
    Vector3::new(
        a[(0, 0)] * v.x + a[(0, 1)] * v.y + a[(0, 2)] * v.z,
        a[(1, 0)] * v.x + a[(1, 1)] * v.y + a[(1, 2)] * v.z,
        a[(2, 0)] * v.x + a[(2, 1)] * v.y + a[(2, 2)] * v.z,
    )
}

/// `aᵀ·v`, written out without forming the transpose (see [`mat3_mul`]).
#[inline]
pub fn mat3_apply_transpose<S: Scalar>(a: &Matrix3<S>, v: &Vector3<S>) -> Vector3<S> {
    Vector3::new(
        a[(0, 0)] * v.x + a[(1, 0)] * v.y + a[(2, 0)] * v.z,
        a[(0, 1)] * v.x + a[(1, 1)] * v.y + a[(2, 1)] * v.z,
        a[(0, 2)] * v.x + a[(1, 2)] * v.y + a[(2, 2)] * v.z,
    )
}

/// Euclidean length, written with `Arithmetic::sqrt` (nalgebra's `norm` needs `RealField`).
#[inline]
pub fn norm<S: Scalar>(v: &Vector3<S>) -> S {
    v.dot(v).sqrt()
}

/// `v` scaled to unit length; `(1, 0, 0)` for a vector shorter than 1e-15, as MuJoCo's
/// `mju_normalize3`.
pub fn normalize_or_x<S: Scalar>(v: Vector3<S>) -> Vector3<S> {
    let n = norm(&v);
    let short = n.less(S::from_f64(1e-15));
    let unit = v / S::select(short, S::one(), n);
    Vector3::new(
        S::select(short, S::one(), unit.x),
        S::select(short, S::zero(), unit.y),
        S::select(short, S::zero(), unit.z),
    )
}

/// Converts every entry of a vector to another scalar (see [`crate::scalar::convert`]).
pub fn convert_vector<S: Scalar, T: Scalar>(v: &Vector3<S>) -> Vector3<T> {
    v.map(crate::scalar::convert)
}

/// Makes `v` a zero vector of length `n`, reusing its storage: a workspace's vectors change
/// length with the number of constraints and keep the capacity of the longest they have been.
pub(crate) fn zero_vector<S: Scalar>(v: &mut DVector<S>, n: usize) {
    if v.len() == n {
        // Through the slice: a plain `f64` store loop (nalgebra's `fill` walks its iterator).
        v.as_mut_slice().fill(S::zero());
        return;
    }
    let mut data: Vec<S> = std::mem::replace(v, DVector::zeros(0)).data.into();
    data.clear();
    data.resize(n, S::zero());
    *v = DVector::from_vec(data);
}

/// Makes `m` an `r × c` zero matrix, reusing its storage as [`zero_vector`] does.
pub(crate) fn zero_matrix<S: Scalar>(m: &mut DMatrix<S>, r: usize, c: usize) {
    if m.shape() == (r, c) {
        m.as_mut_slice().fill(S::zero());
        return;
    }
    let mut data: Vec<S> = std::mem::replace(m, DMatrix::zeros(0, 0)).data.into();
    data.clear();
    data.resize(r * c, S::zero());
    *m = DMatrix::from_vec(r, c, data);
}

/// `dst ← src`, reusing `dst`'s storage.
pub(crate) fn copy_vector<S: Scalar>(dst: &mut DVector<S>, src: &DVector<S>) {
    if dst.len() != src.len() {
        zero_vector(dst, src.len());
    }
    dst.copy_from(src);
}
