//! A world's place in the device arrays, and the spatial quantities the stage kernels carry:
//! motions and forces (angular part first, as `math::Motion` and `math::Force`) and spatial
//! inertias.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::layout::{Array, header, status};
use super::real::{M3, V3};

/// The world a unit works on, among `count`.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct World {
    pub index: usize,
    pub count: usize,
}

#[cube]
impl World {
    /// Where item `item` of the array starting at `start` lies for this world.
    pub fn at(&self, start: usize, item: usize) -> usize {
        (start + item) * self.count + self.index
    }
}

/// Whether nothing has gone wrong in the world (its status is `layout::status::FINE`).
#[cube]
pub fn fine<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, world: &World) -> bool {
    data[world.at(start(ints, comptime![Array::Status as usize]), 0)] == F::cast_from(status::FINE)
}

/// Sets the world's status to `code` (`layout::status`) unless an earlier failure is there.
#[cube]
pub fn fail<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, world: &World, #[comptime] code: u32) {
    let at = world.at(start(ints, comptime![Array::Status as usize]), 0);
    if data[at] == F::cast_from(status::FINE) {
        data[at] = F::cast_from(code);
    }
}

/// Sets the world's status to `layout::status::NON_FINITE_RESULT` if a number of the array
/// starting at `array`, `len` long, is not finite.
#[cube]
pub fn check_finite<F: Float + CubePrimitive<WithScalar<bool> = bool>>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    world: &World,
    array: usize,
    len: usize,
) {
    let mut finite = true;
    for i in 0..len {
        let x = data[world.at(array, i)];
        if F::is_nan(x) || F::is_inf(x) {
            finite = false;
        }
    }
    if !finite {
        fail::<F>(ints, data, world, comptime![status::NON_FINITE_RESULT]);
    }
}

/// Where array number `array` starts among a world's items (`layout::Array`).
#[cube]
pub fn start(ints: &Tensor<u32>, #[comptime] array: usize) -> usize {
    ints[header::ARRAYS + array] as usize
}

/// A spatial motion or force: angular part, then linear.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Spatial<F: Float> {
    pub ang: V3<F>,
    pub lin: V3<F>,
}

#[cube]
impl<F: Float> Spatial<F> {
    pub fn zero() -> Spatial<F> {
        Spatial::<F> { ang: V3::zero(), lin: V3::zero() }
    }

    /// Six numbers from `at` on, `stride` apart.
    pub fn load(from: &mut Tensor<F>, at: usize, stride: usize) -> Spatial<F> {
        Spatial::<F> { ang: V3::load(from, at, stride), lin: V3::load(from, at + 3 * stride, stride) }
    }

    pub fn store(&self, to: &mut Tensor<F>, at: usize, stride: usize) {
        self.ang.store(to, at, stride);
        self.lin.store(to, at + 3 * stride, stride);
    }

    pub fn add(&self, o: &Spatial<F>) -> Spatial<F> {
        Spatial::<F> { ang: self.ang.add(&o.ang), lin: self.lin.add(&o.lin) }
    }

    pub fn scale(&self, s: F) -> Spatial<F> {
        Spatial::<F> { ang: self.ang.scale(s), lin: self.lin.scale(s) }
    }

    /// The power of motion `self` against force `f`.
    pub fn dot(&self, f: &Spatial<F>) -> F {
        self.ang.dot(&f.ang) + self.lin.dot(&f.lin)
    }

    /// `self ×m m` (`Motion::cross_motion`).
    pub fn cross_motion(&self, m: &Spatial<F>) -> Spatial<F> {
        Spatial::<F> { ang: self.ang.cross(&m.ang), lin: self.ang.cross(&m.lin).add(&self.lin.cross(&m.ang)) }
    }

    /// `self ×f f` (`Motion::cross_force`).
    pub fn cross_force(&self, f: &Spatial<F>) -> Spatial<F> {
        Spatial::<F> { ang: self.ang.cross(&f.ang).add(&self.lin.cross(&f.lin)), lin: self.ang.cross(&f.lin) }
    }
}

/// A spatial inertia as `math::SpatialInertia`: mass, first moment, and the rotational inertia
/// about the frame's origin (symmetric: `xx yy zz xy xz yz`), ten numbers in that order.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Inertia<F: Float> {
    pub mass: F,
    pub h: V3<F>,
    pub xx: F,
    pub yy: F,
    pub zz: F,
    pub xy: F,
    pub xz: F,
    pub yz: F,
}

#[cube]
impl<F: Float> Inertia<F> {
    pub fn zero() -> Inertia<F> {
        let z = F::new(0.0);
        Inertia::<F> { mass: z, h: V3::zero(), xx: z, yy: z, zz: z, xy: z, xz: z, yz: z }
    }

    pub fn load(from: &mut Tensor<F>, at: usize, stride: usize) -> Inertia<F> {
        Inertia::<F> {
            mass: from[at],
            h: V3::load(from, at + stride, stride),
            xx: from[at + 4 * stride],
            yy: from[at + 5 * stride],
            zz: from[at + 6 * stride],
            xy: from[at + 7 * stride],
            xz: from[at + 8 * stride],
            yz: from[at + 9 * stride],
        }
    }

    pub fn store(&self, to: &mut Tensor<F>, at: usize, stride: usize) {
        to[at] = self.mass;
        self.h.store(to, at + stride, stride);
        to[at + 4 * stride] = self.xx;
        to[at + 5 * stride] = self.yy;
        to[at + 6 * stride] = self.zz;
        to[at + 7 * stride] = self.xy;
        to[at + 8 * stride] = self.xz;
        to[at + 9 * stride] = self.yz;
    }

    pub fn add(&self, o: &Inertia<F>) -> Inertia<F> {
        Inertia::<F> {
            mass: self.mass + o.mass,
            h: self.h.add(&o.h),
            xx: self.xx + o.xx,
            yy: self.yy + o.yy,
            zz: self.zz + o.zz,
            xy: self.xy + o.xy,
            xz: self.xz + o.xz,
            yz: self.yz + o.yz,
        }
    }

    /// The rotational inertia as a matrix.
    pub fn matrix(&self) -> M3<F> {
        M3::<F> {
            r0: V3::new(self.xx, self.xy, self.xz),
            r1: V3::new(self.xy, self.yy, self.yz),
            r2: V3::new(self.xz, self.yz, self.zz),
        }
    }

    /// The momentum `I v` (`SpatialInertia::mul_motion`).
    pub fn mul_motion(&self, v: &Spatial<F>) -> Spatial<F> {
        Spatial::<F> {
            ang: self.matrix().apply(&v.ang).add(&self.h.cross(&v.lin)),
            lin: v.lin.scale(self.mass).sub(&self.h.cross(&v.ang)),
        }
    }

    /// The same body's inertia in the parent frame of the pose `(r, p)`
    /// (`SpatialInertia::to_parent`).
    pub fn to_parent(&self, r: &M3<F>, p: &V3<F>) -> Inertia<F> {
        let m = self.mass;
        let h = r.apply(&self.h);
        let ri = r.mul(&self.matrix());
        let two = F::new(2.0);
        let diagonal = h.dot(p) * two + p.dot(p) * m;
        Inertia::<F> {
            mass: m,
            h: h.add(&p.scale(m)),
            xx: ri.r0.dot(&r.r0) - h.x * p.x - p.x * h.x - p.x * p.x * m + diagonal,
            yy: ri.r1.dot(&r.r1) - h.y * p.y - p.y * h.y - p.y * p.y * m + diagonal,
            zz: ri.r2.dot(&r.r2) - h.z * p.z - p.z * h.z - p.z * p.z * m + diagonal,
            xy: ri.r0.dot(&r.r1) - h.x * p.y - p.x * h.y - p.x * p.y * m,
            xz: ri.r0.dot(&r.r2) - h.x * p.z - p.x * h.z - p.x * p.z * m,
            yz: ri.r1.dot(&r.r2) - h.y * p.z - p.y * h.z - p.y * p.z * m,
        }
    }
}

/// Where the acceleration the integrators read starts: the constraint solve's
/// ([`Array::Qacc`]) where the step solves constraints, else the smooth one.
#[cube]
pub fn rates_acceleration(ints: &Tensor<u32>) -> usize {
    let mut at = start(ints, comptime![Array::SmoothAcceleration as usize]);
    if ints[header::CONSTRAINED] == 1 {
        at = start(ints, comptime![Array::Qacc as usize]);
    }
    at
}

/// Where inverse dynamics (and its adjoint) reads its acceleration: the integrators' (the
/// smooth one, or the constrained one), or where `mass_only` the vector whose product with the
/// mass matrix it forms (the split's `u = x − v'`, a velocity change, first in [`Array::Split`]:
/// with no velocity and no gravity, inverse dynamics is `M u`).
#[cube]
pub fn dynamics_acceleration(ints: &Tensor<u32>, #[comptime] mass_only: bool) -> usize {
    let mut at = rates_acceleration(ints);
    if comptime![mass_only] {
        at = start(ints, comptime![Array::Split as usize]);
    }
    at
}

/// The acceleration RNEA starts the roots from: gravity, reversed (the model's floats begin
/// with gravity).
#[cube]
pub fn world_acceleration<F: Float>(floats: &mut Tensor<F>) -> Spatial<F> {
    Spatial::<F> { ang: V3::zero(), lin: V3::<F>::load(floats, 0, 1).scale(F::new(-1.0)) }
}
