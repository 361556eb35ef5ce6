//! The step's stages as CubeCL kernels over all worlds at once: forward kinematics, the mass
//! matrix, its factor and solves, RNEA's bias forces, the smooth forces and acceleration, and
//! the Euler and RK4 integrators so far (issue 30 builds the rest of the step on them:
//! collision, constraint rows, the Newton solve, and the kernels' adjoints).
//!
//! The engine stays one. Each kernel transcribes one CPU stage of `phyz_core::dynamics`, in the
//! same frames and the same order of operations, and the tests hold it to that stage. What the
//! device adds is the layout ([`layout`]): a model packed once into two buffers, every world's
//! numbers in one buffer of named arrays, and one unit per world walking the tree. Walking the
//! tree serially per world is what MuJoCo Warp does per branch; with thousands of worlds the
//! device is full without splitting a world further, and a stage is one launch whatever the
//! model's size.
//!
//! CubeCL cannot lend a mutable tensor where a shared one is expected, so the helpers that load
//! from a buffer take it `&mut`, and the kernels take the model's floats `&mut` to pass them on;
//! no kernel writes them.

mod forces;
mod integrate;
mod kinematics;
pub mod layout;
mod mass;
mod real;
mod rnea;
mod world;

use burn::backend::ops::{FloatTensorOps, IntTensorOps};
use burn::backend::{DispatchDevice, read_sync};
use burn::tensor::{DType, Device, Slice, TensorData};
use burn_cubecl::cubecl::ir::FloatKind;
use burn_cubecl::cubecl::prelude::*;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeDevice};
use phyz_core::model::Integrator;
use phyz_core::{Model, State};

use crate::GpuError;
use crate::device::float_dtype;
use layout::{Array, Packed};

/// A model on a device: its tree and constants, packed once ([`layout`]).
#[derive(Clone, Debug)]
pub struct Stages {
    packed: Packed,
    ints: CubeTensor,
    floats: CubeTensor,
    device: CubeDevice,
    dtype: DType,
}

/// The numbers of a batch of worlds on the device: every [`Array`] of each, laid out for one
/// model's [`Stages`]. Each launch checks its size and float type against the stages' (what
/// keeps the unchecked kernels inside the buffer); worlds of another model of the same size
/// pass that check and come out meaningless. A clone shares the device buffer.
#[derive(Clone, Debug)]
pub struct Worlds {
    data: CubeTensor,
    count: usize,
    items: usize,
    dtype: DType,
}

/// What went wrong in a world ([`Stages::failures`]): the first thing only. The other worlds
/// step on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Its state or controls were not finite when uploaded.
    NonFiniteInput,
    /// A pivot of its mass matrix's factor was not positive: a degree of freedom that moves no
    /// mass (the CPU step's `StepError::SingularMass`).
    SingularMass,
    /// A step left its position or velocity not finite (`StepError::NonFiniteResult`).
    NonFiniteResult,
}

impl Worlds {
    /// How many worlds.
    pub fn count(&self) -> usize {
        self.count
    }
}

/// A launch of one stage kernel over every world in the float type `$float`: the model's
/// integers, then `$pre`, the worlds' data and their count, then `$post`.
macro_rules! launch_stage {
    ($stages:expr, $worlds:expr, $($kernel:ident)::+, $float:ty, [$($pre:expr),*], [$($post:expr),*]) => {{
        let client = $stages.device.client();
        let cube_dim = CubeDim::new(&client, $worlds.count);
        let cube_count = burn_cubecl::cubecl::calculate_cube_count_elemwise(&client, $worlds.count, cube_dim);
        // Safety: each unit writes only its own world's items of `data`, all inside the
        // buffer the layout sized for `count` worlds, and reads the model's buffers at the
        // offsets their own header gives.
        unsafe {
            $($kernel)::+::launch_unchecked::<$float>(
                &client,
                cube_count,
                cube_dim,
                $stages.ints.clone().into_tensor_arg(),
                $($pre,)*
                $worlds.data.clone().into_tensor_arg(),
                $worlds.count as u32,
                $($post,)*
            )
        }
    }};
}

/// [`launch_stage!`] in the stages' float type: with the model's floats (`floats`) or not,
/// and with runtime float scalars after the count.
macro_rules! dispatch_stage {
    ($stages:expr, $worlds:expr, $($kernel:ident)::+, floats $(, $scalar:expr)*) => {{
        let floats = $stages.floats.clone();
        match $stages.dtype {
            DType::F64 => launch_stage!($stages, $worlds, $($kernel)::+, f64, [floats.into_tensor_arg()], [$(scalar($scalar, FloatKind::F64)),*]),
            _ => launch_stage!($stages, $worlds, $($kernel)::+, f32, [floats.into_tensor_arg()], [$(scalar($scalar, FloatKind::F32)),*]),
        }
    }};
    ($stages:expr, $worlds:expr, $($kernel:ident)::+ $(, $scalar:expr)*) => {
        match $stages.dtype {
            DType::F64 => launch_stage!($stages, $worlds, $($kernel)::+, f64, [], [$(scalar($scalar, FloatKind::F64)),*]),
            _ => launch_stage!($stages, $worlds, $($kernel)::+, f32, [], [$(scalar($scalar, FloatKind::F32)),*]),
        }
    };
}

/// `value` as a kernel's runtime scalar of the float kind `kind`.
fn scalar(value: f64, kind: FloatKind) -> InputScalar {
    InputScalar::new(value, ElemType::Float(kind))
}

impl Stages {
    /// `model` on `device` (a CubeCL device: wgpu, or CUDA where a build has it), in `f64`
    /// where the device computes it, else `f32` ([`float_dtype`]).
    pub fn new(model: &Model<f64>, device: &Device) -> Result<Stages, GpuError> {
        let inner = device.clone().inner();
        let DispatchDevice::Cube(cube) = inner.as_dispatch() else {
            return Err(GpuError::Device(format!("{device:?} is not a CubeCL device")));
        };
        let dtype = float_dtype(device).0;
        let packed = Packed::new(model)?;
        let ints = CubeBackend::int_from_data(TensorData::new(packed.ints.clone(), [packed.ints.len()]), cube);
        let floats = TensorData::new(packed.floats.clone(), [packed.floats.len()]).convert_dtype(dtype);
        let floats = CubeBackend::float_from_data(floats, cube);
        Ok(Stages { packed, ints, floats, device: cube.clone(), dtype })
    }

    /// The float type the kernels compute in.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Worlds at `states` (their `qpos` and `qvel`), every other array zero.
    pub fn worlds(&self, states: &[State<f64>]) -> Result<Worlds, GpuError> {
        let qpos: Vec<&[f64]> = states.iter().map(|s| s.qpos.as_slice()).collect();
        let qvel: Vec<&[f64]> = states.iter().map(|s| s.qvel.as_slice()).collect();
        self.upload(states.len(), &[(Array::Qpos, &qpos), (Array::Qvel, &qvel)])
    }

    /// `count` worlds with the arrays `given` (each array's numbers, world by world), every
    /// other array zero. A world given a number that is not finite is failed
    /// ([`Failure::NonFiniteInput`]); the others are not touched by it.
    pub fn upload(&self, count: usize, given: &[(Array, &[&[f64]])]) -> Result<Worlds, GpuError> {
        let items = self.packed.items;
        if u32::try_from(items.saturating_mul(count)).is_err() {
            return Err(GpuError::Model(format!("{count} worlds of {items} numbers exceed 32-bit indices")));
        }
        let mut host = vec![0.0; items * count];
        let (status, _) = self.packed.array(Array::Status);
        for &(array, worlds) in given {
            let (start, len) = self.packed.array(array);
            for (w, values) in worlds.iter().enumerate().take(count) {
                if values.len() != len {
                    return Err(GpuError::Model(format!(
                        "{array:?} of world {w} has {} numbers, not {len}",
                        values.len()
                    )));
                }
                for (i, &x) in values.iter().enumerate() {
                    host[(start + i) * count + w] = x;
                }
                if values.iter().any(|x| !x.is_finite()) && host[status * count + w] == 0.0 {
                    host[status * count + w] = f64::from(layout::status::NON_FINITE_INPUT);
                }
            }
        }
        let data = TensorData::new(host, [items * count]).convert_dtype(self.dtype);
        Ok(Worlds { data: CubeBackend::float_from_data(data, &self.device), count, items, dtype: self.dtype })
    }

    /// Each world's `array`, read back (one transfer of that array alone).
    pub fn read(&self, worlds: &Worlds, array: Array) -> Result<Vec<Vec<f64>>, GpuError> {
        self.check(worlds)?;
        let (start, len) = self.packed.array(array);
        let n = worlds.count;
        let range = Slice { start: (start * n) as isize, end: Some(((start + len) * n) as isize), step: 1 };
        let view = CubeBackend::float_slice(worlds.data.clone(), &[range]);
        let data = read_sync(CubeBackend::float_into_data(view))
            .map_err(|e| GpuError::Device(format!("reading the worlds back: {e:?}")))?;
        let host = data.convert::<f64>().try_into_vec::<f64>().map_err(|e| GpuError::Device(format!("{e:?}")))?;
        Ok((0..n).map(|w| (0..len).map(|i| host[i * n + w]).collect()).collect())
    }

    /// The worlds that failed, each with the first thing that went wrong (one transfer).
    pub fn failures(&self, worlds: &Worlds) -> Result<Vec<(usize, Failure)>, GpuError> {
        let codes = self.read(worlds, Array::Status)?;
        let failure = |code: f64| match code as u32 {
            layout::status::NON_FINITE_INPUT => Some(Failure::NonFiniteInput),
            layout::status::SINGULAR_MASS => Some(Failure::SingularMass),
            layout::status::NON_FINITE_RESULT => Some(Failure::NonFiniteResult),
            _ => None,
        };
        Ok(codes.iter().enumerate().filter_map(|(w, c)| failure(c[0]).map(|f| (w, f))).collect())
    }

    /// Waits for every launch so far to finish.
    pub fn sync(&self) -> Result<(), GpuError> {
        read_sync(self.device.client().sync()).map_err(|e| GpuError::Device(format!("{e:?}")))
    }

    /// Whether `worlds` have the size and float type of these stages' layout: the kernels index
    /// them by it, unchecked.
    fn check(&self, worlds: &Worlds) -> Result<(), GpuError> {
        if worlds.items != self.packed.items || worlds.dtype != self.dtype {
            return Err(GpuError::Model("worlds laid out for another model or float type".into()));
        }
        Ok(())
    }

    /// Forward kinematics and the links' inertias in their trees' rooted frames, from `qpos`.
    pub fn kinematics(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.check(worlds)?;
        dispatch_stage!(self, worlds, kinematics::kinematics, floats);
        Ok(())
    }

    /// The composite inertias and the mass matrix, after [`Stages::kinematics`].
    pub fn mass_matrix(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.check(worlds)?;
        dispatch_stage!(self, worlds, mass::mass_matrix, floats);
        Ok(())
    }

    /// The factor of the mass matrix (with Euler's implicit damping), after
    /// [`Stages::mass_matrix`]; a world whose factor has a pivot that is not positive is failed
    /// ([`Failure::SingularMass`]).
    pub fn factor(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.check(worlds)?;
        if self.packed.nv() > 0 {
            dispatch_stage!(self, worlds, mass::factor, floats);
        }
        Ok(())
    }

    /// [`Stages::factor`]'s solve of each world's [`Array::Vector`], in place.
    pub fn solve(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.check(worlds)?;
        if self.packed.nv() > 0 {
            dispatch_stage!(self, worlds, mass::solve);
        }
        Ok(())
    }

    /// The bias forces from `qvel`, after [`Stages::kinematics`].
    pub fn bias_forces(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.check(worlds)?;
        dispatch_stage!(self, worlds, rnea::bias_forces, floats);
        Ok(())
    }

    /// The smooth forces (actuator and passive, less the bias forces) under [`Array::Ctrl`],
    /// and the unconstrained acceleration, after [`Stages::factor`] and
    /// [`Stages::bias_forces`]. A model with forces this stage does not compute is refused,
    /// naming them.
    pub fn smooth_acceleration(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.check(worlds)?;
        if let Some(what) = &self.packed.unsupported_forces {
            return Err(GpuError::Model(format!("the forces stage does not compute {what}")));
        }
        if self.packed.nv() > 0 {
            dispatch_stage!(self, worlds, forces::smooth_acceleration, floats);
        }
        Ok(())
    }

    /// The smooth stages at the worlds' `qpos`, `qvel` and controls: kinematics, the mass matrix
    /// and its factor, the bias forces, the smooth forces and the unconstrained acceleration.
    pub fn smooth(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.kinematics(worlds)?;
        self.mass_matrix(worlds)?;
        self.factor(worlds)?;
        self.bias_forces(worlds)?;
        self.smooth_acceleration(worlds)
    }

    /// One step of every world under the model's integrator (Euler or RK4), its controls held.
    /// The device has no constraint stage yet: a model whose constraints are enabled is refused,
    /// and so are the implicit integrators. A world that fails is marked ([`Stages::failures`])
    /// and the others step on; nothing is read back.
    pub fn step(&self, worlds: &Worlds) -> Result<(), GpuError> {
        if let Some(what) = &self.packed.unsupported_step {
            return Err(GpuError::Model(format!("the device step does not run {what}")));
        }
        if let Some(what) = &self.packed.unsupported_forces {
            return Err(GpuError::Model(format!("the forces stage does not compute {what}")));
        }
        self.smooth(worlds)?;
        if self.packed.nv() == 0 {
            return Ok(());
        }
        if self.packed.integrator == Integrator::Euler {
            dispatch_stage!(self, worlds, integrate::euler, floats);
            return Ok(());
        }
        // RK4: the slopes of the start and of three points, weighted 1/6, 1/3, 1/3, 1/6.
        dispatch_stage!(self, worlds, integrate::rk4_begin, 1.0 / 6.0);
        for (c, w) in [(0.5, 1.0 / 3.0), (0.5, 1.0 / 3.0), (1.0, 1.0 / 6.0)] {
            dispatch_stage!(self, worlds, integrate::rk4_point, floats, c);
            self.smooth(worlds)?;
            dispatch_stage!(self, worlds, integrate::rk4_rates, floats, w);
        }
        dispatch_stage!(self, worlds, integrate::rk4_finish, floats);
        Ok(())
    }
}
