//! Batches of burn tensors in and out of the worlds' layout: a unit per world moves its row of
//! `[batch, n]` tensors (row-major) to its items and back, on the device. The tensors hold
//! positions as stored (`nq` numbers, a quaternion's four), the stages' cotangents are in
//! tangent coordinates (`nv`, a quaternion's turn in its own frame), so the cotangents' kernels
//! carry them across: where a quaternion `q` is perturbed as `q ⊗ exp(δ)`, `δq = ½ q ⊗ (0, δ)`,
//! so an end's stored cotangent `q̄'` is the turn's `½ vec(q'* ⊗ q̄')` (the step's `q'` is of
//! unit length), and a start's turn cotangent `δ̄` is the stored `2 q ⊗ (0, δ̄) / |q|²` (the step
//! reads `q` normalized, so nothing flows along `q`).

use burn::tensor::{DType, Shape};
use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;

use super::layout::{Array, header, joint, link_int, status};
use super::newton::step_solves;
use super::real::{Quat, exact};
use super::world::{World, start};
use super::{Failure, Stages, Worlds};

/// Columns of a stepped row after `qpos` and `qvel`: the world's status, then what its step's
/// solves came to (`newton::step_solves`).
pub const STEPPED_EXTRA: usize = 1 + step_solves::LEN;

/// Where a link's joint keeps its coordinates: `moved` numbers that add (a hinge's or a
/// slide's one, a free joint's three translations) from `qpos` and `dof`, and for a ball or a
/// free joint (`rotates`) its quaternion at `turn` and its rotation's dofs from `spin`.
#[derive(CubeType, Clone)]
pub struct Coordinates {
    pub qpos: usize,
    pub dof: usize,
    pub moved: usize,
    pub rotates: bool,
    pub turn: usize,
    pub spin: usize,
}

/// The coordinates of link `i`'s joint.
#[cube]
fn coordinates_of(ints: &Tensor<u32>, i: usize) -> Coordinates {
    let li = ints[header::LINK_INTS] as usize + i * link_int::LEN;
    let code = ints[li + link_int::JOINT];
    let (d, a) = (ints[li + link_int::DOF_ADR] as usize, ints[li + link_int::QPOS_ADR] as usize);
    let mut out = Coordinates { qpos: a, dof: d, moved: 0, rotates: false, turn: a, spin: d };
    if code == joint::HINGE || code == joint::SLIDE {
        out.moved = 1;
    } else if code == joint::FREE {
        out.moved = 3;
        out.turn = a + 3;
        out.spin = d + 3;
    }
    out.rotates = code == joint::BALL || code == joint::FREE;
    out
}

/// `n` numbers of a row-major `from` (row `world.index`) into the world's items from `to`;
/// `false` where one is not finite.
#[cube]
fn load_row<F: Float + CubePrimitive<WithScalar<bool> = bool>>(
    data: &mut Tensor<F>,
    world: &World,
    from: &mut Tensor<F>,
    n: usize,
    to: usize,
) -> bool {
    let mut finite = true;
    for i in 0..n {
        let x = from[world.index * n + i];
        if F::is_nan(x) || F::is_inf(x) {
            finite = false;
        }
        data[world.at(to, i)] = x;
    }
    finite
}

/// A unit per world: its row of `qpos`, `qvel` and `ctrl` into its items, its status fine, or
/// `NON_FINITE_INPUT` where a number is not finite.
#[cube(launch_unchecked)]
pub(crate) fn load_states<F: Float + CubePrimitive<WithScalar<bool> = bool>>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    worlds: u32,
    qpos: &mut Tensor<F>,
    qvel: &mut Tensor<F>,
    ctrl: &mut Tensor<F>,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let (nq, nv, nu) = (ints[header::COORDS] as usize, ints[header::DOFS] as usize, ints[header::CONTROLS] as usize);
    let positions = load_row::<F>(data, &world, qpos, nq, start(ints, comptime![Array::Qpos as usize]));
    let velocities = load_row::<F>(data, &world, qvel, nv, start(ints, comptime![Array::Qvel as usize]));
    let controls = load_row::<F>(data, &world, ctrl, nu, start(ints, comptime![Array::Ctrl as usize]));
    let finite = positions && velocities && controls;
    let mut code = F::cast_from(status::FINE);
    if !finite {
        code = F::cast_from(status::NON_FINITE_INPUT);
    }
    data[world.at(start(ints, comptime![Array::Status as usize]), 0)] = code;
}

/// A unit per world: its `qpos`, `qvel`, status and its step's solves as a row of `out`
/// (`[worlds, nq + nv + STEPPED_EXTRA]`).
#[cube(launch_unchecked)]
pub(crate) fn store_states<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, worlds: u32, out: &mut Tensor<F>) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let (nq, nv) = (ints[header::COORDS] as usize, ints[header::DOFS] as usize);
    let row = world.index * (nq + nv + STEPPED_EXTRA);
    let from = start(ints, comptime![Array::Qpos as usize]);
    for i in 0..nq {
        out[row + i] = data[world.at(from, i)];
    }
    let from = start(ints, comptime![Array::Qvel as usize]);
    for i in 0..nv {
        out[row + nq + i] = data[world.at(from, i)];
    }
    out[row + nq + nv] = data[world.at(start(ints, comptime![Array::Status as usize]), 0)];
    let solves = start(ints, comptime![Array::StepSolves as usize]);
    for i in 0..step_solves::LEN {
        out[row + nq + nv + 1 + i] = data[world.at(solves, i)];
    }
}

/// A unit per world: the stored cotangents of a step's end (`bar_qpos` `[worlds, nq]`,
/// `bar_qvel` `[worlds, nv]`) into [`Array::AdjointQpos`] (tangent) and
/// [`Array::AdjointQvel`], each quaternion's at the end `next` (a row of [`store_states`]).
#[cube(launch_unchecked)]
pub(crate) fn load_cotangents<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    worlds: u32,
    bar_qpos: &mut Tensor<F>,
    bar_qvel: &mut Tensor<F>,
    next: &mut Tensor<F>,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let (nq, nv) = (ints[header::COORDS] as usize, ints[header::DOFS] as usize);
    let (bar, end) = (world.index * nq, world.index * (nq + nv + STEPPED_EXTRA));
    let adjoint_q = start(ints, comptime![Array::AdjointQpos as usize]);
    for i in 0..ints[header::LINKS] as usize {
        let c = coordinates_of(ints, i);
        for k in 0..c.moved {
            data[world.at(adjoint_q, c.dof + k)] = bar_qpos[bar + c.qpos + k];
        }
        if c.rotates {
            let q = Quat::<F>::load(next, end + c.turn, 1);
            let pulled = q.conjugate().mul(&Quat::<F>::load(bar_qpos, bar + c.turn, 1));
            data[world.at(adjoint_q, c.spin)] = pulled.x * F::new(0.5);
            data[world.at(adjoint_q, c.spin + 1)] = pulled.y * F::new(0.5);
            data[world.at(adjoint_q, c.spin + 2)] = pulled.z * F::new(0.5);
        }
    }
    let adjoint_v = start(ints, comptime![Array::AdjointQvel as usize]);
    for i in 0..nv {
        data[world.at(adjoint_v, i)] = bar_qvel[world.index * nv + i];
    }
}

/// A unit per world: the cotangents of a step's start (the stages' tangent ones, each
/// quaternion's carried to its stored four at the start `qpos` `[worlds, nq]`) and its controls
/// as a row of `out` (`[worlds, nq + nv + nu]`).
#[cube(launch_unchecked)]
pub(crate) fn store_cotangents<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    worlds: u32,
    qpos: &mut Tensor<F>,
    out: &mut Tensor<F>,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let (nq, nv, nu) = (ints[header::COORDS] as usize, ints[header::DOFS] as usize, ints[header::CONTROLS] as usize);
    let row = world.index * (nq + nv + nu);
    let adjoint_q = start(ints, comptime![Array::AdjointQpos as usize]);
    for i in 0..ints[header::LINKS] as usize {
        let c = coordinates_of(ints, i);
        for k in 0..c.moved {
            out[row + c.qpos + k] = data[world.at(adjoint_q, c.dof + k)];
        }
        if c.rotates {
            let q = Quat::<F>::load(qpos, world.index * nq + c.turn, 1);
            let norm_sq = q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z;
            let turned = Quat::<F> {
                w: F::new(0.0),
                x: data[world.at(adjoint_q, c.spin)],
                y: data[world.at(adjoint_q, c.spin + 1)],
                z: data[world.at(adjoint_q, c.spin + 2)],
            };
            // A quaternion of no length reads as the identity, whatever its numbers: no
            // derivative.
            let mut scale = F::new(0.0);
            if norm_sq > exact::<F>(1e-30) {
                scale = F::new(2.0) / norm_sq;
            }
            q.mul(&turned).scale(scale).store(out, row + c.turn, 1);
        }
    }
    let adjoint_v = start(ints, comptime![Array::AdjointQvel as usize]);
    for i in 0..nv {
        out[row + nq + i] = data[world.at(adjoint_v, i)];
    }
    let adjoint_u = start(ints, comptime![Array::AdjointCtrl as usize]);
    for i in 0..nu {
        out[row + nq + nv + i] = data[world.at(adjoint_u, i)];
    }
}

impl Stages {
    /// Each world's row of `qpos`, `qvel` and `ctrl` (`[worlds, n]` tensors in the stages' float
    /// type) into `worlds`, their statuses reset (a world with a number that is not finite fails
    /// as [`Failure::NonFiniteInput`](super::Failure)).
    pub(crate) fn load_states(&self, worlds: &Worlds, qpos: CubeTensor, qvel: CubeTensor, ctrl: CubeTensor) {
        let [qpos, qvel, ctrl] = [qpos, qvel, ctrl].map(|t| into_contiguous(t).into_tensor_arg());
        launch_typed!(self, worlds, worlds.count, load_states, [], [qpos, qvel, ctrl]);
    }

    /// Each world's `qpos`, `qvel`, status and solve state as a row: `[worlds, nq + nv + STEPPED_EXTRA]`.
    pub(crate) fn store_states(&self, worlds: &Worlds) -> CubeTensor {
        let width = self.packed.nq() + self.packed.nv() + STEPPED_EXTRA;
        let out = self.empty(worlds.count, width);
        launch_typed!(self, worlds, worlds.count, store_states, [], [out.clone().into_tensor_arg()]);
        out
    }

    /// The stored cotangents of a step's end into the worlds' adjoints, the step's end `next`
    /// as [`Stages::store_states`] gave it.
    pub(crate) fn load_cotangents(
        &self,
        worlds: &Worlds,
        bar_qpos: CubeTensor,
        bar_qvel: CubeTensor,
        next: CubeTensor,
    ) {
        let [bar_qpos, bar_qvel, next] = [bar_qpos, bar_qvel, next].map(|t| into_contiguous(t).into_tensor_arg());
        launch_typed!(self, worlds, worlds.count, load_cotangents, [], [bar_qpos, bar_qvel, next]);
    }

    /// The cotangents of the step's start `qpos` (stored) and `qvel`, and of its controls, as
    /// rows: `[worlds, nq + nv + nu]`.
    pub(crate) fn store_cotangents(&self, worlds: &Worlds, qpos: CubeTensor) -> CubeTensor {
        let width = self.packed.nq() + self.packed.nv() + self.packed.nu();
        let out = self.empty(worlds.count, width);
        let qpos = into_contiguous(qpos).into_tensor_arg();
        launch_typed!(self, worlds, worlds.count, store_cotangents, [], [qpos, out.clone().into_tensor_arg()]);
        out
    }

    /// The widths of a lane's `qpos`, `qvel` and `ctrl`.
    pub(crate) fn lane_widths(&self) -> [usize; 3] {
        [self.packed.nq(), self.packed.nv(), self.packed.nu()]
    }

    /// Why a lane has no step (or, `tracked`, no derivative), from its row's extra columns as
    /// [`Stages::store_states`] gave them ([`STEPPED_EXTRA`]).
    pub(crate) fn lane_refusal(&self, extra: &[f64], tracked: bool) -> Option<String> {
        if let Some(failure) = Failure::from_code(extra[0]) {
            return Some(format!("{failure:?}"));
        }
        let stopped = self.packed.constrained() && extra[1 + step_solves::STOPPED] != 0.0;
        (tracked && stopped).then(|| {
            "a constraint solve stopped short of convergence; a step whose gradient is tracked needs \
             converged solves, the points its derivative is taken at"
                .into()
        })
    }

    /// A `[rows, cols]` tensor of the stages' float type, its numbers not set.
    fn empty(&self, rows: usize, cols: usize) -> CubeTensor {
        empty_device_contiguous_dtype(self.device.client(), self.device.clone(), Shape::new([rows, cols]), self.dtype)
    }
}
