//! The numbers a stage kernel computes with: constants at the float type's own precision, sine
//! and cosine that hold in `f64` on every device, 3-vectors, 3×3 matrices and rigid poses.
//!
//! Vulkan's shader library has no `f64` sine or cosine (GLSL.std.450 defines them for 16- and
//! 32-bit floats only), and lavapipe returns garbage for them in `f64`. Arithmetic, `sqrt` and
//! `floor` are exact there, so [`sin_cos`] is written from those alone: a reduction by π/2 and
//! the minimax polynomials of the C library's kernels. In `f64` it is within an ulp or two for
//! |x| < 10⁶ away from the multiples of π/2 (the library keeps the reduction's tail there, this
//! does not); in `f32` the reduction's constants round to `f32` and it is within about
//! `|x| · 4e-8`.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::ir::{ConstantValue, ElemType};
use burn_cubecl::cubecl::prelude::*;

/// `value` as a constant of `F`, rounded once to `F`'s precision (`F::new` takes an `f32`,
/// which would cut an `f64` constant short).
#[cube]
pub fn exact<F: Float>(#[comptime] value: f64) -> F {
    intrinsic!(|scope| {
        let elem: ElemType = F::elem_type(scope);
        elem.constant(ConstantValue::Float(value)).into()
    })
}

/// A sine and a cosine of one angle.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct SinCos<F: Float> {
    pub sin: F,
    pub cos: F,
}

/// `sin(x)` and `cos(x)`: `x = k·π/2 + r` with `|r| ≤ π/4` (π/2 in two parts, in `f64` the
/// first exact in 33 bits, so `k·π/2` loses nothing for |k| < 2²⁰), then the polynomials on `r`,
/// swapped and signed by the quadrant `k mod 4`.
#[cube]
pub fn sin_cos<F: Float>(x: F) -> SinCos<F> {
    let k = F::floor(x * exact::<F>(core::f64::consts::FRAC_2_PI) + exact::<F>(0.5));
    let r = (x - k * exact::<F>(1.570_796_326_734_125_6)) - k * exact::<F>(6.077_100_506_506_192e-11);
    let z = r * r;
    let w = z * z;
    // The C library's kernels on [-π/4, π/4] (their tail term is zero here).
    let ps = exact::<F>(8.333_333_333_322_49e-3)
        + z * (exact::<F>(-1.984_126_982_985_795e-4) + z * exact::<F>(2.755_731_370_707_006_8e-6))
        + z * w * (exact::<F>(-2.505_076_025_340_686_3e-8) + z * exact::<F>(1.589_690_995_211_55e-10));
    let s = r + z * r * (exact::<F>(-1.666_666_666_666_663_2e-1) + z * ps);
    let pc = z
        * (exact::<F>(4.166_666_666_666_66e-2)
            + z * (exact::<F>(-1.388_888_888_887_411e-3) + z * exact::<F>(2.480_158_728_947_673e-5)))
        + w * w
            * (exact::<F>(-2.755_731_435_139_066_3e-7)
                + z * (exact::<F>(2.087_572_321_298_175e-9) + z * exact::<F>(-1.135_964_755_778_819_5e-11)));
    let half = exact::<F>(0.5) * z;
    let one_less = exact::<F>(1.0) - half;
    let c = one_less + (((exact::<F>(1.0) - one_less) - half) + z * pc);
    // The quadrant, 0..4, from k (a whole number) without an integer overflow.
    let quadrant = u32::cast_from(k - exact::<F>(4.0) * F::floor(k * exact::<F>(0.25)));
    let mut out = SinCos::<F> { sin: s, cos: c };
    if quadrant == 1 {
        out.sin = c;
        out.cos = -s;
    } else if quadrant == 2 {
        out.sin = -s;
        out.cos = -c;
    } else if quadrant == 3 {
        out.sin = -c;
        out.cos = s;
    }
    out
}

/// A 3-vector.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct V3<F: Float> {
    pub x: F,
    pub y: F,
    pub z: F,
}

#[cube]
impl<F: Float> V3<F> {
    pub fn new(x: F, y: F, z: F) -> V3<F> {
        V3::<F> { x, y, z }
    }

    pub fn zero() -> V3<F> {
        V3::<F> { x: F::new(0.0), y: F::new(0.0), z: F::new(0.0) }
    }

    /// Components at `at`, `at + stride`, `at + 2·stride` of `from`.
    pub fn load(from: &mut Tensor<F>, at: usize, stride: usize) -> V3<F> {
        V3::<F> { x: from[at], y: from[at + stride], z: from[at + 2 * stride] }
    }

    /// Writes the components as [`V3::load`] reads them.
    pub fn store(&self, to: &mut Tensor<F>, at: usize, stride: usize) {
        to[at] = self.x;
        to[at + stride] = self.y;
        to[at + 2 * stride] = self.z;
    }

    pub fn add(&self, o: &V3<F>) -> V3<F> {
        V3::<F> { x: self.x + o.x, y: self.y + o.y, z: self.z + o.z }
    }

    pub fn sub(&self, o: &V3<F>) -> V3<F> {
        V3::<F> { x: self.x - o.x, y: self.y - o.y, z: self.z - o.z }
    }

    pub fn scale(&self, s: F) -> V3<F> {
        V3::<F> { x: self.x * s, y: self.y * s, z: self.z * s }
    }

    pub fn dot(&self, o: &V3<F>) -> F {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    pub fn norm(&self) -> F {
        F::sqrt(self.dot(self))
    }

    pub fn cross(&self, o: &V3<F>) -> V3<F> {
        V3::<F> { x: self.y * o.z - self.z * o.y, y: self.z * o.x - self.x * o.z, z: self.x * o.y - self.y * o.x }
    }
}

/// A 3×3 matrix, by rows.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct M3<F: Float> {
    pub r0: V3<F>,
    pub r1: V3<F>,
    pub r2: V3<F>,
}

#[cube]
impl<F: Float> M3<F> {
    pub fn identity() -> M3<F> {
        let (one, zero) = (F::new(1.0), F::new(0.0));
        M3::<F> { r0: V3::new(one, zero, zero), r1: V3::new(zero, one, zero), r2: V3::new(zero, zero, one) }
    }

    /// Nine entries by rows, from `at` on, `stride` apart.
    pub fn load(from: &mut Tensor<F>, at: usize, stride: usize) -> M3<F> {
        M3::<F> {
            r0: V3::load(from, at, stride),
            r1: V3::load(from, at + 3 * stride, stride),
            r2: V3::load(from, at + 6 * stride, stride),
        }
    }

    /// Writes the entries as [`M3::load`] reads them.
    pub fn store(&self, to: &mut Tensor<F>, at: usize, stride: usize) {
        self.r0.store(to, at, stride);
        self.r1.store(to, at + 3 * stride, stride);
        self.r2.store(to, at + 6 * stride, stride);
    }

    /// The rotation of a unit quaternion `(w, x, y, z)`, as `Quat::to_rotation_matrix`.
    pub fn from_quat(w: F, x: F, y: F, z: F) -> M3<F> {
        let (one, two) = (F::new(1.0), F::new(2.0));
        M3::<F> {
            r0: V3::new(one - two * (y * y + z * z), two * (x * y - w * z), two * (x * z + w * y)),
            r1: V3::new(two * (x * y + w * z), one - two * (x * x + z * z), two * (y * z - w * x)),
            r2: V3::new(two * (x * z - w * y), two * (y * z + w * x), one - two * (x * x + y * y)),
        }
    }

    /// The third column: where a rotation takes the z axis.
    pub fn z_axis(&self) -> V3<F> {
        V3::new(self.r0.z, self.r1.z, self.r2.z)
    }

    /// `self · v`.
    pub fn apply(&self, v: &V3<F>) -> V3<F> {
        V3::new(self.r0.dot(v), self.r1.dot(v), self.r2.dot(v))
    }

    /// `self · b`.
    pub fn mul(&self, b: &M3<F>) -> M3<F> {
        M3::<F> { r0: b.apply_transpose(&self.r0), r1: b.apply_transpose(&self.r1), r2: b.apply_transpose(&self.r2) }
    }

    /// `selfᵀ · v`.
    pub fn apply_transpose(&self, v: &V3<F>) -> V3<F> {
        V3::new(
            self.r0.x * v.x + self.r1.x * v.y + self.r2.x * v.z,
            self.r0.y * v.x + self.r1.y * v.y + self.r2.y * v.z,
            self.r0.z * v.x + self.r1.z * v.y + self.r2.z * v.z,
        )
    }

    /// `[v]×`: the matrix of `x ↦ v × x`.
    pub fn skew(v: &V3<F>) -> M3<F> {
        let z = F::new(0.0);
        M3::<F> { r0: V3::new(z, -v.z, v.y), r1: V3::new(v.z, z, -v.x), r2: V3::new(-v.y, v.x, z) }
    }

    /// `a bᵀ`.
    pub fn outer(a: &V3<F>, b: &V3<F>) -> M3<F> {
        M3::<F> { r0: b.scale(a.x), r1: b.scale(a.y), r2: b.scale(a.z) }
    }

    pub fn transpose(&self) -> M3<F> {
        M3::<F> {
            r0: V3::new(self.r0.x, self.r1.x, self.r2.x),
            r1: V3::new(self.r0.y, self.r1.y, self.r2.y),
            r2: V3::new(self.r0.z, self.r1.z, self.r2.z),
        }
    }

    pub fn add(&self, b: &M3<F>) -> M3<F> {
        M3::<F> { r0: self.r0.add(&b.r0), r1: self.r1.add(&b.r1), r2: self.r2.add(&b.r2) }
    }

    pub fn sub(&self, b: &M3<F>) -> M3<F> {
        M3::<F> { r0: self.r0.sub(&b.r0), r1: self.r1.sub(&b.r1), r2: self.r2.sub(&b.r2) }
    }

    pub fn scale(&self, s: F) -> M3<F> {
        M3::<F> { r0: self.r0.scale(s), r1: self.r1.scale(s), r2: self.r2.scale(s) }
    }
}

/// A rigid pose: `rot` maps the child's coordinates to the parent's, `pos` is the child's
/// origin in the parent's.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Pose<F: Float> {
    pub rot: M3<F>,
    pub pos: V3<F>,
}

#[cube]
impl<F: Float> Pose<F> {
    /// `self ∘ child`.
    pub fn compose(&self, child: &Pose<F>) -> Pose<F> {
        Pose::<F> { rot: self.rot.mul(&child.rot), pos: self.rot.apply(&child.pos).add(&self.pos) }
    }
}

/// A quaternion `w + xi + yj + zk` (`math::Quat`).
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Quat<F: Float> {
    pub w: F,
    pub x: F,
    pub y: F,
    pub z: F,
}

#[cube]
impl<F: Float> Quat<F> {
    /// The four numbers at `at`, `stride` apart, normalized (`kinematics::qpos_quat`).
    pub fn load_normalized(from: &mut Tensor<F>, at: usize, stride: usize) -> Quat<F> {
        Quat::<F>::load(from, at, stride).normalize()
    }

    /// The four numbers at `at`, `stride` apart, as they are.
    pub fn load(from: &mut Tensor<F>, at: usize, stride: usize) -> Quat<F> {
        Quat::<F> { w: from[at], x: from[at + stride], y: from[at + 2 * stride], z: from[at + 3 * stride] }
    }

    /// `q*`: the vector part negated.
    pub fn conjugate(&self) -> Quat<F> {
        Quat::<F> { w: self.w, x: -self.x, y: -self.y, z: -self.z }
    }

    /// Every number times `s`.
    pub fn scale(&self, s: F) -> Quat<F> {
        Quat::<F> { w: self.w * s, x: self.x * s, y: self.y * s, z: self.z * s }
    }

    /// Scaled to unit length as `Quat::normalize` does: the identity for one of no length.
    pub fn normalize(&self) -> Quat<F> {
        let norm = F::sqrt(self.w * self.w + self.x * self.x + self.y * self.y + self.z * self.z);
        let mut out = Quat::<F> { w: F::new(1.0), x: F::new(0.0), y: F::new(0.0), z: F::new(0.0) };
        // As the CPU's test is written: a NaN norm stays NaN, for the step's checks to see.
        let tiny = norm < exact::<F>(1e-15);
        if !tiny {
            let inv = F::new(1.0) / norm;
            out = Quat::<F> { w: self.w * inv, x: self.x * inv, y: self.y * inv, z: self.z * inv };
        }
        out
    }

    pub fn store(&self, to: &mut Tensor<F>, at: usize, stride: usize) {
        to[at] = self.w;
        to[at + stride] = self.x;
        to[at + 2 * stride] = self.y;
        to[at + 3 * stride] = self.z;
    }

    /// `self · b`.
    pub fn mul(&self, b: &Quat<F>) -> Quat<F> {
        let a = self;
        Quat::<F> {
            w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
            x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
            y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
            z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
        }
    }

    /// The rotation by `|v|` about `v`, smooth through zero (`Quat::from_rotation_vector`).
    pub fn from_rotation_vector(v: &V3<F>) -> Quat<F> {
        let theta_sq = v.dot(v);
        let small = theta_sq < exact::<F>(1e-12);
        let mut theta = F::new(1.0);
        if !small {
            theta = F::sqrt(theta_sq);
        }
        let sc = sin_cos::<F>(theta * F::new(0.5));
        let mut sinc_half = sc.sin / theta;
        let mut cos_half = sc.cos;
        if small {
            sinc_half = F::new(0.5) - theta_sq / F::new(48.0);
            cos_half = F::new(1.0) - theta_sq / F::new(8.0);
        }
        Quat::<F> { w: cos_half, x: v.x * sinc_half, y: v.y * sinc_half, z: v.z * sinc_half }
    }

    /// Its rotation matrix.
    pub fn to_matrix(&self) -> M3<F> {
        M3::<F>::from_quat(self.w, self.x, self.y, self.z)
    }
}
