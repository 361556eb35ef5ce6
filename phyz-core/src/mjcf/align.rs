//! MuJoCo's free-body alignment (`<freejoint align>`, `<compiler alignfree>`): a body whose one
//! joint is free and that has no children takes its inertial frame as its own frame, so that
//! its free joint moves the centre of mass along principal axes (decoupling translation from
//! rotation in the mass matrix). Its geoms and sites are re-expressed in the new frame.
//!
//! The new frame must be the one MuJoCo picks, since the free joint's coordinates (and a
//! keyframe's) are read in it: MuJoCo's principal axes come from its Jacobi iteration on the
//! inertia (summed as MuJoCo sums it) and a sort by decreasing moment, which fix the axes'
//! order and signs where the eigenvectors alone do not.

use nalgebra::{Matrix3, Vector3};

use super::mass::Part;
use crate::math::Quat;
use crate::model::BodySpec;

/// When the Jacobi iteration stops: the largest off-diagonal entry below this fraction of the
/// inertia's largest entry.
const CONVERGED: f64 = 1e-15;

/// Two moments closer than this fraction of the inertia's largest entry are equal, and keep
/// their order.
const DISTINCT: f64 = 1e-12;

/// MuJoCo's `mjEPS`: the smallest mass a geom must have to weigh in a body's inertial frame,
/// and how near one a norm must be to be left alone.
const TINY: f64 = 1e-14;

/// The inertial frame MuJoCo gives a body made of `parts` (its geoms): the one geom's own frame
/// when only one weighs, else the principal frame of the parts' inertia about their centre of
/// mass, summed in MuJoCo's order of operations (the frame is only as exact as the Jacobi
/// iteration's stopping rule, so the sum that feeds it must be MuJoCo's to the last bit).
pub(super) fn inertial_frame(parts: &[Part]) -> Quat<f64> {
    let weighing: Vec<&Part> = parts.iter().filter(|p| p.mass > TINY).collect();
    match weighing.as_slice() {
        [] => Quat::identity(),
        [one] => one.quat,
        several => {
            let mass: f64 = several.iter().map(|p| p.mass).sum();
            let com = several.iter().fold(Vector3::zeros(), |c, p| c + p.pos * p.mass) / mass;
            let mut total = [0.0; 6];
            for p in several {
                let (rotated, shifted) = (rotated_inertia(&p.inertia, &p.quat), offset_inertia(p.mass, &(p.pos - com)));
                for j in 0..6 {
                    total[j] = total[j] + rotated[j] + shifted[j];
                }
            }
            full_inertia_frame(total)
        }
    }
}

/// The principal frame MuJoCo picks for an inertia given as six numbers (xx, yy, zz, xy, xz,
/// yz), as for an `<inertial fullinertia>`.
pub(super) fn full_inertia_frame([xx, yy, zz, xy, xz, yz]: [f64; 6]) -> Quat<f64> {
    principal_frame(&Matrix3::new(xx, xy, xz, xy, yy, yz, xz, yz, zz))
}

/// `q` normalized as MuJoCo normalizes (`mjuu_normvec`): divided by its norm, unless that is
/// within `mjEPS` of one.
fn normalized(q: Quat<f64>) -> Quat<f64> {
    let n = (q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z).sqrt();
    if (n - 1.0).abs() > TINY { Quat::new(q.w / n, q.x / n, q.y / n, q.z / n) } else { q }
}

/// MuJoCo's rotation matrix of a unit quaternion (`mjuu_quat2mat`).
fn rotation(q: &Quat<f64>) -> Matrix3<f64> {
    if (q.w, q.x, q.y, q.z) == (1.0, 0.0, 0.0, 0.0) {
        return Matrix3::identity();
    }
    let (q00, q01, q02, q03) = (q.w * q.w, q.w * q.x, q.w * q.y, q.w * q.z);
    let (q11, q12, q13, q22, q23, q33) = (q.x * q.x, q.x * q.y, q.x * q.z, q.y * q.y, q.y * q.z, q.z * q.z);
    Matrix3::new(
        q00 + q11 - q22 - q33,
        2.0 * (q12 - q03),
        2.0 * (q13 + q02),
        2.0 * (q12 + q03),
        q00 - q11 + q22 - q33,
        2.0 * (q23 - q01),
        2.0 * (q13 - q02),
        2.0 * (q23 + q01),
        q00 - q11 - q22 + q33,
    )
}

/// Principal moments `d` turned by `q` (`R diag(d) Rᵀ`), as MuJoCo's six numbers (xx, yy, zz,
/// xy, xz, yz) in its order of operations (`mjuu_globalinertia`).
fn rotated_inertia(d: &Vector3<f64>, q: &Quat<f64>) -> [f64; 6] {
    let m = rotation(q);
    let t = |r: usize, c: usize| m[(c, r)] * d[r];
    let entry = |a: usize, b: usize| m[(a, 0)] * t(0, b) + m[(a, 1)] * t(1, b) + m[(a, 2)] * t(2, b);
    [entry(0, 0), entry(1, 1), entry(2, 2), entry(0, 1), entry(0, 2), entry(1, 2)]
}

/// A point mass at `v` about the origin, as MuJoCo's six numbers (`mjuu_offcenter`).
fn offset_inertia(mass: f64, v: &Vector3<f64>) -> [f64; 6] {
    [
        mass * (v.y * v.y + v.z * v.z),
        mass * (v.x * v.x + v.z * v.z),
        mass * (v.x * v.x + v.y * v.y),
        -mass * v.x * v.y,
        -mass * v.x * v.z,
        -mass * v.y * v.z,
    ]
}

/// The rotation from the principal frame MuJoCo 4 picks for a symmetric `inertia` to the axes
/// it is given in (its `mju_eig3`): Jacobi rotations, each zeroing the largest off-diagonal
/// entry, until that is below `1e-15` of the largest entry; then the axes sorted by decreasing
/// moment, each swap a quarter turn. (Checked against MuJoCo 4.0.1's own on random inertias:
/// the frames agree to 1e-14.)
fn principal_frame(inertia: &Matrix3<f64>) -> Quat<f64> {
    let scale = inertia.amax();
    let mut quat = Quat::identity();
    if scale == 0.0 {
        return quat;
    }
    let mut moments = Vector3::zeros();
    for _ in 0..500 {
        let axes = rotation(&quat);
        let d = axes.transpose() * inertia * axes;
        moments = d.diagonal();
        let (row, col, axis) = if d[(0, 1)].abs() > d[(0, 2)].abs() && d[(0, 1)].abs() > d[(1, 2)].abs() {
            (0, 1, 2)
        } else if d[(0, 2)].abs() > d[(1, 2)].abs() {
            (0, 2, 1)
        } else {
            (1, 2, 0)
        };
        if d[(row, col)].abs() < CONVERGED * scale {
            break;
        }
        // The 2×2 symmetric Schur rotation that zeroes the entry (tangent `t`, cosine `c`),
        // as a quaternion about `axis`; the half angle's sine from `t c`, exact for tiny turns.
        let tau = (d[(col, col)] - d[(row, row)]) / (2.0 * d[(row, col)]);
        let root = (1.0 + tau * tau).sqrt();
        let t = if tau >= 0.0 { 1.0 / (tau + root) } else { -1.0 / (-tau + root) };
        let c = 1.0 / (1.0 + t * t).sqrt();
        let half_sine = t.abs() * c / (2.0 * (1.0 + c)).sqrt();
        let mut s = if tau >= 0.0 { -half_sine } else { half_sine };
        if axis == 1 {
            s = -s;
        }
        let mut v = [0.0; 3];
        v[axis] = s;
        let turn = normalized(Quat::new((1.0 - s * s).sqrt(), v[0], v[1], v[2]));
        quat = normalized(normalized(quat * turn));
    }
    // Bubble sort of the moments (pairs 0-1, 1-2, 0-1); equal ones stay.
    // MuJoCo's literal for cos(π/4), one digit short of `FRAC_1_SQRT_2`: the frame must be its.
    #[allow(clippy::approx_constant)]
    let quarter = 0.707106781186548;
    for j in 0..3 {
        let lead = j % 2;
        if moments[lead] + DISTINCT * scale < moments[lead + 1] {
            moments.swap_rows(lead, lead + 1);
            let mut v = [0.0; 3];
            v[(lead + 2) % 3] = quarter;
            quat = normalized(normalized(quat * Quat::new(quarter, v[0], v[1], v[2])));
        }
    }
    quat
}

/// Moves `spec`'s frame onto its inertial frame (centre of mass `spec.com`, axes `frame`),
/// keeping every geom and site where it is in the world.
pub(super) fn align(spec: &mut BodySpec, frame: Quat<f64>) {
    let (com, rot) = (spec.com, frame.to_rotation_matrix());
    spec.pos += spec.quat.rotate(&com);
    spec.quat = (spec.quat * frame).normalize();
    let inverse = frame.conjugate();
    let reexpress = |pos: &mut Vector3<f64>, quat: &mut Quat<f64>| {
        *pos = inverse.rotate(&(*pos - com));
        *quat = (inverse * *quat).normalize();
    };
    for geom in &mut spec.geoms {
        reexpress(&mut geom.pos, &mut geom.quat);
    }
    for site in &mut spec.sites {
        reexpress(&mut site.pos, &mut site.quat);
    }
    spec.com = Vector3::zeros();
    spec.inertia = rot.transpose() * spec.inertia * rot;
}
