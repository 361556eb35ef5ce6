//! The step's stages as CubeCL kernels over all worlds at once: forward kinematics, the mass
//! matrix, its factor and solves, RNEA's bias forces, the smooth forces and acceleration,
//! primitive collision into a contact pool, the constraint rows with their targets and
//! regularizers, MuJoCo's Newton solve, and the Euler and RK4 integrators; and the step's
//! backward ([`backward`], [`rk4_backward`], [`rnea_adjoint`], through limits and every
//! contact the collision stage finds: [`constraint_adjoint`], [`contact_adjoint`]), with
//! rollouts kept by checkpoints ([`tape`]) and batches of burn tensors moved in and out
//! ([`batch`]).
//!
//! The engine stays one. Each forward kernel transcribes one CPU stage of `phyz_core::dynamics`,
//! in the same frames and the same order of operations, and the tests hold it to that stage; the
//! backward's kernels are held to the CPU's derivatives. What the
//! device adds is the layout ([`layout`]): a model packed once into two buffers, every world's
//! numbers in one buffer of named arrays, and one unit per world walking the tree. Walking the
//! tree serially per world is what MuJoCo Warp does per branch; with thousands of worlds the
//! device is full without splitting a world further, and a stage is one launch whatever the
//! model's size.
//!
//! CubeCL cannot lend a mutable tensor where a shared one is expected, so the helpers that load
//! from a buffer take it `&mut`, and the kernels take the model's floats `&mut` to pass them on;
//! no kernel writes them.

mod backward;
mod collision;
mod constraint_adjoint;
mod constraints;
mod contact_adjoint;
mod dense;
mod forces;
mod gathered;
mod impedance;
mod integrate;
mod kinematics;
pub mod layout;
mod mass;
mod newton;
pub mod pairs;
mod real;
mod rk4_backward;
mod rnea;
mod rnea_adjoint;
mod rows;
mod speculation;
mod tape;
mod world;

pub(crate) use batch::STEPPED_EXTRA;
pub use gathered::INDIRECT_FROM;
pub(crate) use speculation::Iterations;
pub use tape::{Checkpoint, Tape};

use std::sync::Arc;

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
use collision::{contact_float, contact_int};
use layout::{Array, Packed};
use newton::step_solves;
use speculation::Speculation;

/// A model on a device: its tree and constants, packed once ([`layout`]).
#[derive(Clone, Debug)]
pub struct Stages {
    packed: Packed,
    ints: CubeTensor,
    floats: CubeTensor,
    device: CubeDevice,
    dtype: DType,
    /// The contacts a world's share of the pool holds ([`Stages::set_pool`]).
    pool_per_world: usize,
    /// How many Newton iterations a step's solves launch before its one read.
    speculation: Arc<Speculation>,
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
    pool: Pool,
    rows: Rows,
    gathered: Gathered,
}

/// The worlds whose solve iterates, listed as each iteration ends (two lists taking turns), and
/// the launch sizes over the list ([`gathered`]). Clones of the worlds share them, as they share
/// the worlds' buffer: solve one at a time.
#[derive(Clone, Debug)]
struct Gathered {
    lists: [CubeTensor; 2],
    launches: [CubeTensor; gathered::LAUNCHES],
}

/// Each world's block of constraint rows ([`rows`]): a counter per world, the rows dense over
/// the degrees of freedom, where each row comes from, and each row's target velocity and
/// regularizer ([`impedance`]).
#[derive(Clone, Debug)]
struct Rows {
    counts: CubeTensor,
    jacobian: CubeTensor,
    source: CubeTensor,
    target: CubeTensor,
    regularizer: CubeTensor,
    /// The solve's deviations `J x − target` and `J s` of its search direction.
    jar: CubeTensor,
    direction: CubeTensor,
    per_world: usize,
}

/// One world's constraint rows, read back ([`Stages::read_rows`]).
#[derive(Clone, Debug, PartialEq)]
pub struct WorldRows {
    /// The rows, dense over the degrees of freedom, in the order of the world's block.
    pub jacobian: Vec<Vec<f64>>,
    /// Each row's target velocity and regularizer `R`.
    pub target: Vec<f64>,
    pub regularizer: Vec<f64>,
}

/// The contacts of all worlds, in one pool ([`collision`]): a counter, then each slot's
/// integers and floats.
#[derive(Clone, Debug)]
struct Pool {
    counter: CubeTensor,
    found: CubeTensor,
    geometry: CubeTensor,
    capacity: usize,
}

/// A contact the collision stage found ([`Stages::contacts`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Contact {
    /// Global geom indices, MuJoCo's first then second.
    pub geoms: [usize; 2],
    /// The explicit contact pair it comes from, if any.
    pub explicit: Option<usize>,
    /// Its first constraint row in its world's block ([`Stages::read_rows`]), after
    /// [`Stages::rows`]; `None` before, for a contact whose geoms cannot move apart, and in a
    /// failed world.
    pub row: Option<usize>,
    /// Which point of the pair (the CPU detector's `feature`).
    pub feature: usize,
    /// The point midway between the surfaces; the normal from the first geom to the second; the
    /// tangents; the penetration (negative: apart, within the margin).
    pub point: [f64; 3],
    pub normal: [f64; 3],
    pub tangents: [[f64; 3]; 2],
    pub depth: f64,
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
    /// One of its contacts found the contact pool full ([`Stages::set_pool`]).
    PoolOverflow,
    /// Its contacts' constraint rows did not fit its block of rows ([`Stages::set_pool`]).
    RowOverflow,
    /// Its constraint solve's Hessian was not positive definite (the CPU's `IndefiniteHessian`).
    IndefiniteHessian,
    /// The step's backward found its constraint solve stopped short of convergence: the
    /// solution it kept has no derivative (the CPU's backward refuses it too).
    UnconvergedSolve,
    /// The step's backward found a pressed row of a contact with no derivative there: two
    /// spheres or capsules whose cores meet (their normal then comes from the axes, not the
    /// gap).
    UndifferentiatedContact,
}

impl Failure {
    /// The failure a world's status code (`layout::status`) names; `None` for a fine world.
    pub(crate) fn from_code(code: f64) -> Option<Failure> {
        match code as u32 {
            layout::status::NON_FINITE_INPUT => Some(Failure::NonFiniteInput),
            layout::status::SINGULAR_MASS => Some(Failure::SingularMass),
            layout::status::NON_FINITE_RESULT => Some(Failure::NonFiniteResult),
            layout::status::POOL_OVERFLOW => Some(Failure::PoolOverflow),
            layout::status::ROW_OVERFLOW => Some(Failure::RowOverflow),
            layout::status::INDEFINITE_HESSIAN => Some(Failure::IndefiniteHessian),
            layout::status::UNCONVERGED_SOLVE => Some(Failure::UnconvergedSolve),
            layout::status::UNDIFFERENTIATED_CONTACT => Some(Failure::UndifferentiatedContact),
            _ => None,
        }
    }
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
    ($stages:expr, $worlds:expr, $($kernel:ident)::+, $float:ty, [$($pre:expr),*], [$($post:expr),*]) => {
        launch_stage!($stages, $worlds, $worlds.count, $($kernel)::+, $float, [$($pre),*], [$($post),*])
    };
    ($stages:expr, $worlds:expr, listed $cube_count:expr, $($kernel:ident)::+, $float:ty, [$($pre:expr),*], [$($post:expr),*]) => {{
        // The cubes of `Stages::listed_cubes`.
        let cube_count = $cube_count;
        let cube_dim = CubeDim::new_1d(gathered::CUBE);
        launch_stage!(@ $stages, $worlds, cube_count, cube_dim, $($kernel)::+, $float, [$($pre),*], [$($post),*])
    }};
    ($stages:expr, $worlds:expr, $units:expr, $($kernel:ident)::+, $float:ty, [$($pre:expr),*], [$($post:expr),*]) => {{
        let client = $stages.device.client();
        let cube_dim = CubeDim::new(&client, $units);
        let cube_count = burn_cubecl::cubecl::calculate_cube_count_elemwise(&client, $units, cube_dim);
        launch_stage!(@ $stages, $worlds, cube_count, cube_dim, $($kernel)::+, $float, [$($pre),*], [$($post),*])
    }};
    (@ $stages:expr, $worlds:expr, $cube_count:expr, $cube_dim:expr, $($kernel:ident)::+, $float:ty, [$($pre:expr),*], [$($post:expr),*]) => {{
        let client = $stages.device.client();
        // Safety: each unit writes only its own world's items of `data` (and the pool slots
        // the pool's counter gives it, or the list slots the list's counter gives it), all
        // inside the buffers the layout sized for `count` worlds, and reads the model's
        // buffers at the offsets their own header gives.
        unsafe {
            $($kernel)::+::launch_unchecked::<$float>(
                &client,
                $cube_count,
                $cube_dim,
                $stages.ints.clone().into_tensor_arg(),
                $($pre,)*
                $worlds.data.clone().into_tensor_arg(),
                $worlds.count as u32,
                $($post,)*
            )
        }
    }};
}

/// [`launch_stage!`] over `$units` units in the stages' float type, with tensor arguments
/// (`$pre` before the worlds' data, `$post` after their count).
macro_rules! launch_typed {
    ($stages:expr, $worlds:expr, listed $cube_count:expr, $($kernel:ident)::+, [$($pre:expr),*], [$($post:expr),*]) => {
        match $stages.dtype {
            DType::F64 => launch_stage!($stages, $worlds, listed $cube_count, $($kernel)::+, f64, [$($pre),*], [$($post),*]),
            _ => launch_stage!($stages, $worlds, listed $cube_count, $($kernel)::+, f32, [$($pre),*], [$($post),*]),
        }
    };
    ($stages:expr, $worlds:expr, $units:expr, $($kernel:ident)::+, [$($pre:expr),*], [$($post:expr),*]) => {
        match $stages.dtype {
            DType::F64 => launch_stage!($stages, $worlds, $units, $($kernel)::+, f64, [$($pre),*], [$($post),*]),
            _ => launch_stage!($stages, $worlds, $units, $($kernel)::+, f32, [$($pre),*], [$($post),*]),
        }
    };
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

mod batch;

/// An integer tensor, read back.
fn read_ints(t: &CubeTensor) -> Result<Vec<u32>, GpuError> {
    let data = read_sync(CubeBackend::int_into_data(t.clone())).map_err(device_error)?;
    data.convert::<u32>().try_into_vec::<u32>().map_err(device_error)
}

/// A float tensor, read back in `f64`.
fn read_floats(t: &CubeTensor) -> Result<Vec<f64>, GpuError> {
    let data = read_sync(CubeBackend::float_into_data(t.clone())).map_err(device_error)?;
    data.convert::<f64>().try_into_vec::<f64>().map_err(device_error)
}

/// An array's `len` items of `count` worlds as laid out (item by item), world by world.
fn by_world(host: &[f64], count: usize, len: usize) -> Vec<Vec<f64>> {
    (0..count).map(|w| (0..len).map(|i| host[i * count + w]).collect()).collect()
}

/// The most degrees of freedom of a constrained model the stages take on a software driver
/// (a device that is no card: Mesa's llvmpipe, lavapipe), which ends each kernel invocation's
/// loops after 65,535 iterations in all, silently: a world's Newton solve alone factors its
/// Hessian in `nv³/6` of them. Measured: scenes of 65 dofs held to the CPU's gradients, of 71
/// and more (the same pairs, free bodies added) did not.
const SOFTWARE_MAX_DOFS: usize = 64;

/// How many Newton iterations the host launches between reads of whether a world still
/// iterates (checked), or between submissions of the launches queued to the device (launched,
/// [`speculation`]): left to grow, the queue cost llvmpipe twice the system time and some 20%
/// of the ant's step at 4,096 worlds.
const SOLVE_CHECK: usize = 4;

/// A device call's failure, as a [`GpuError`].
fn device_error(e: impl std::fmt::Debug) -> GpuError {
    GpuError::Device(format!("{e:?}"))
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
        let mut packed = Packed::new(model)?;
        if crate::device::is_software(device) && packed.constrained() && packed.nv() > SOFTWARE_MAX_DOFS {
            return Err(GpuError::Model(format!(
                "{} degrees of freedom with constraints on a software driver: Mesa's llvmpipe and \
                 lavapipe end a kernel's loops silently past 65,535 iterations, which a world's \
                 constraint solve of more than {SOFTWARE_MAX_DOFS} dofs can reach",
                packed.nv()
            )));
        }
        // The solve's tolerance, no finer than the float type resolves, and its least positive
        // number.
        let tolerance = &mut packed.floats[layout::TOLERANCE];
        *tolerance = tolerance.max(crate::device::epsilon(dtype));
        if dtype != DType::F64 {
            packed.floats[layout::MIN_POSITIVE] = f64::from(f32::MIN_POSITIVE);
        }
        let ints = CubeBackend::int_from_data(TensorData::new(packed.ints.clone(), [packed.ints.len()]), cube);
        let floats = TensorData::new(packed.floats.clone(), [packed.floats.len()]).convert_dtype(dtype);
        let floats = CubeBackend::float_from_data(floats, cube);
        let pool_per_world = packed.pairs.iter().map(|p| p.points).sum();
        let speculation = Arc::new(Speculation::new(packed.newton_iterations() + 1));
        Ok(Stages { packed, ints, floats, device: cube.clone(), dtype, pool_per_world, speculation })
    }

    /// Sizes the contact pool of the worlds uploaded from now on at `per_world` contacts a
    /// world, shared by all: a world may make more where others make fewer. By default it is
    /// the most contacts a world can make (every candidate pair's most), which never
    /// overflows; a smaller pool saves memory, and a contact that finds it full fails its
    /// world ([`Failure::PoolOverflow`]). Each world's block of constraint rows holds the rows
    /// of `per_world` contacts of the most rows (or every pair's most, if fewer); a world whose
    /// contacts' rows do not fit is failed ([`Failure::RowOverflow`]).
    pub fn set_pool(&mut self, per_world: usize) {
        self.pool_per_world = per_world;
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
        self.check_sizes(count)?;
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
        let data = CubeBackend::float_from_data(data, &self.device);
        let (pool, rows, gathered) = (self.pool(count), self.row_blocks(count), self.gathered(count));
        Ok(Worlds { data, count, items, dtype: self.dtype, pool, rows, gathered })
    }

    /// Empty blocks of constraint rows for `count` worlds ([`Stages::set_pool`]).
    fn row_blocks(&self, count: usize) -> Rows {
        let per_world = self.rows_per_world();
        let entries = per_world.saturating_mul(self.packed.nv()).saturating_mul(count);
        let ints = |len: usize| self.int_zeros(len);
        let floats = |len: usize| {
            let zeros = TensorData::new(vec![0.0; len.max(1)], [len.max(1)]).convert_dtype(self.dtype);
            CubeBackend::float_from_data(zeros, &self.device)
        };
        Rows {
            counts: ints(count.max(1)),
            jacobian: floats(entries),
            source: ints((per_world * count).max(1)),
            target: floats(per_world * count),
            regularizer: floats(per_world * count),
            jar: floats(per_world * count),
            direction: floats(per_world * count),
            per_world,
        }
    }

    /// An empty list of `count` worlds' solves, and its launch sizes, each in a device buffer of
    /// its own: an indirect dispatch may not read a buffer that the same dispatch binds, and the
    /// allocator would otherwise place small buffers on shared pages.
    fn gathered(&self, count: usize) -> Gathered {
        let client = self.device.client();
        let ints = |len: usize| self.int_zeros(len);
        let launches = client.memory_dedicated_allocation((), |_| std::array::from_fn(|_| ints(3)));
        Gathered { lists: std::array::from_fn(|_| ints(gathered::list::WORLDS + count)), launches }
    }

    /// `len` zeros in an integer buffer on the device.
    fn int_zeros(&self, len: usize) -> CubeTensor {
        CubeBackend::int_from_data(TensorData::new(vec![0u32; len], [len]), &self.device)
    }

    /// How many constraint rows a world's block holds ([`Stages::set_pool`]).
    fn rows_per_world(&self) -> usize {
        let pairs = &self.packed.pairs;
        let most = pairs.iter().map(|p| p.rows).max().unwrap_or(0);
        let every: usize = pairs.iter().map(|p| p.points * p.rows).sum();
        every.min(self.pool_per_world.saturating_mul(most)) + 2 * self.packed.limits()
    }

    /// Refuses `count` worlds whose buffers would not fit the device ([`Stages::fits`]) before
    /// anything is allocated: the worlds' numbers, the rows' Jacobian, the contact pool.
    fn check_sizes(&self, count: usize) -> Result<(), GpuError> {
        let bytes = self.dtype.size();
        self.fits("the worlds' numbers", count, self.packed.items, bytes)?;
        let jacobian = self.rows_per_world().saturating_mul(self.packed.nv());
        self.fits("the constraint rows' Jacobian", count, jacobian, bytes)?;
        self.fits("the contact pool", count, self.pool_per_world.saturating_mul(contact_float::LEN), bytes)
    }

    /// Refuses `count` worlds whose `what` would hold `per_world` numbers each, of `bytes` bytes,
    /// in one buffer past what the kernels' 32-bit indices reach or what the device binds at
    /// once (wgpu's largest storage binding), naming the most worlds that fit: the device would
    /// otherwise fail the allocation or the launch with an error that names neither.
    fn fits(&self, what: &str, count: usize, per_world: usize, bytes: usize) -> Result<(), GpuError> {
        let binding = self.device.client().properties().memory.max_page_size / bytes as u64;
        let most = binding.min(u64::from(u32::MAX));
        let numbers = (per_world as u64).saturating_mul(count as u64);
        if numbers <= most {
            return Ok(());
        }
        Err(GpuError::Model(format!(
            "{count} worlds: {what} would be {numbers} numbers in one buffer, past the {most} this device \
             binds at once and 32-bit indices reach; at most {} worlds a batch",
            most / per_world as u64
        )))
    }

    /// An empty contact pool for `count` worlds (never of no slots: a buffer is not empty).
    fn pool(&self, count: usize) -> Pool {
        let capacity = self.pool_per_world.saturating_mul(count);
        let slots = capacity.max(1);
        let ints = |len: usize| self.int_zeros(len);
        let geometry = TensorData::new(vec![0.0; slots * contact_float::LEN], [slots * contact_float::LEN]);
        Pool {
            counter: ints(1),
            found: ints(slots * contact_int::LEN),
            geometry: CubeBackend::float_from_data(geometry.convert_dtype(self.dtype), &self.device),
            capacity,
        }
    }

    /// Writes `array` of every world (its numbers, world by world; the controls between steps,
    /// say), the worlds' other numbers kept. A number that is not finite is refused, naming its
    /// world; nothing is written then. Worlds that shared their buffer with a clone get their
    /// own.
    pub fn write(&self, worlds: &mut Worlds, array: Array, values: &[&[f64]]) -> Result<(), GpuError> {
        self.check(worlds)?;
        let len = self.packed.array(array).1;
        let n = worlds.count;
        if values.len() != n {
            return Err(GpuError::Model(format!("{array:?} given for {} worlds, not {n}", values.len())));
        }
        let mut host = vec![0.0; len * n];
        for (w, world) in values.iter().enumerate() {
            if world.len() != len {
                return Err(GpuError::Model(format!("{array:?} of world {w} has {} numbers, not {len}", world.len())));
            }
            if let Some(i) = world.iter().position(|x| !x.is_finite()) {
                return Err(GpuError::Model(format!("{array:?} of world {w} is not finite at {i}")));
            }
            world.iter().enumerate().for_each(|(i, &x)| host[i * n + w] = x);
        }
        if host.is_empty() {
            return Ok(());
        }
        let value =
            CubeBackend::float_from_data(TensorData::new(host, [len * n]).convert_dtype(self.dtype), &self.device);
        self.assign(worlds, array, value);
        Ok(())
    }

    /// The items of `array` for `count` worlds, as a range of the worlds' buffer.
    fn range(&self, array: Array, count: usize) -> Slice {
        let (start, len) = self.packed.array(array);
        Slice { start: (start * count) as isize, end: Some(((start + len) * count) as isize), step: 1 }
    }

    /// Writes `value` (`array`'s items of every world, as laid out) over `array` in `worlds`.
    fn assign(&self, worlds: &mut Worlds, array: Array, value: CubeTensor) {
        let range = self.range(array, worlds.count);
        // The worlds' buffer taken out (the value standing in), so that it is written in place
        // where nothing else holds it.
        let data = std::mem::replace(&mut worlds.data, value.clone());
        worlds.data = CubeBackend::float_slice_assign(data, &[range], value);
    }

    /// Each world's `array`, read back (one transfer of that array alone).
    pub fn read(&self, worlds: &Worlds, array: Array) -> Result<Vec<Vec<f64>>, GpuError> {
        self.check(worlds)?;
        let n = worlds.count;
        let view = CubeBackend::float_slice(worlds.data.clone(), &[self.range(array, n)]);
        Ok(by_world(&read_floats(&view)?, n, self.packed.array(array).1))
    }

    /// The worlds that failed, each with the first thing that went wrong (one transfer).
    pub fn failures(&self, worlds: &Worlds) -> Result<Vec<(usize, Failure)>, GpuError> {
        Ok(self.outcomes(worlds)?.0)
    }

    /// [`Stages::failures`], and whether a world's solve was cut (`layout::status::CUT`): one
    /// transfer.
    pub(crate) fn outcomes(&self, worlds: &Worlds) -> Result<(Vec<(usize, Failure)>, bool), GpuError> {
        let codes = self.read(worlds, Array::Status)?;
        let cut = codes.iter().any(|c| c[0] == f64::from(layout::status::CUT));
        let failures = codes.iter().enumerate().filter_map(|(w, c)| Failure::from_code(c[0]).map(|f| (w, f)));
        Ok((failures.collect(), cut))
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

    /// Inverse dynamics `M(q) q̈ + C(q, q̇)` into [`Array::Vector`] at the acceleration the
    /// integrators read (the smooth one, or with constraints [`Array::Qacc`]), and RNEA's link
    /// arrays at it; after the smooth stages.
    pub fn inverse_dynamics(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.check(worlds)?;
        let floats = self.floats.clone().into_tensor_arg();
        launch_typed!(self, worlds, worlds.count, rnea::inverse_dynamics, [floats], [false]);
        Ok(())
    }

    /// Takes `λᵀ ∂τ/∂q` from [`Array::AdjointQpos`] and `λᵀ ∂τ/∂q̇` from
    /// [`Array::AdjointQvel`], `τ` inverse dynamics and `λ` in [`Array::Multiplier`]: after
    /// [`Stages::inverse_dynamics`] ([`rnea_adjoint`]).
    pub fn inverse_dynamics_adjoint(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.check(worlds)?;
        let floats = self.floats.clone().into_tensor_arg();
        launch_typed!(self, worlds, worlds.count, rnea_adjoint::inverse_dynamics_adjoint, [floats], [false]);
        Ok(())
    }

    /// MuJoCo's split taken back, around the acceleration's backward ([`backward::split_begin`],
    /// [`backward::split_end`]): then `(λ₁ − λ)ᵀ ∂(M(q) u)/∂q` by inverse dynamics' adjoint
    /// without velocity or gravity.
    fn split_backward(&self, worlds: &Worlds) -> Result<(), GpuError> {
        dispatch_stage!(self, worlds, backward::split_begin, floats);
        self.acceleration_backward(worlds)?;
        dispatch_stage!(self, worlds, backward::split_end, floats);
        let floats = || self.floats.clone().into_tensor_arg();
        launch_typed!(self, worlds, worlds.count, rnea::inverse_dynamics, [floats()], [true]);
        launch_typed!(self, worlds, worlds.count, rnea_adjoint::inverse_dynamics_adjoint, [floats()], [true]);
        dispatch_stage!(self, worlds, backward::check_cotangents);
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

    /// Every world's contacts into the pool, after [`Stages::kinematics`]: each candidate pair's
    /// within its margin. A model with a pair that may collide and has no closed form here is
    /// refused, naming it.
    pub fn collide(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.check(worlds)?;
        self.collision_refusal()?;
        let pool = &worlds.pool;
        let client = self.device.client();
        // Safety: one unit writes the counter's one number.
        unsafe {
            collision::clear_pool::launch_unchecked(
                &client,
                CubeCount::Static(1, 1, 1),
                CubeDim::new_1d(1),
                pool.counter.clone().into_tensor_arg(),
            )
        }
        let units = worlds.count * self.packed.pairs.len();
        if units == 0 {
            return Ok(());
        }
        let floats = self.floats.clone().into_tensor_arg();
        let counter = pool.counter.clone().into_tensor_arg();
        let found = pool.found.clone().into_tensor_arg();
        let geometry = pool.geometry.clone().into_tensor_arg();
        let capacity = pool.capacity as u32;
        launch_typed!(self, worlds, units, collision::collide, [floats], [counter, found, geometry, capacity]);
        Ok(())
    }

    /// The constraint rows of every world, after [`Stages::collide`] (and the kinematics it
    /// followed): its limits within their margins, then its contacts' rows, in MuJoCo's form for
    /// the model's cone under `mujoco_compat` (a frictionless contact's normal row; the
    /// pyramid's edges `n ± f_k r_k`, each coefficient held at MuJoCo's least; the elliptic
    /// cone's own rows); then each row's target velocity and regularizer from the worlds'
    /// `qvel` ([`impedance`]). A model with constraints this stage does not build is refused,
    /// naming them.
    pub fn rows(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.check(worlds)?;
        self.rows_refusal()?;
        let (pool, rows) = (&worlds.pool, &worlds.rows);
        let client = self.device.client();
        let units = worlds.count.max(1);
        let cube_dim = CubeDim::new(&client, units);
        let cube_count = burn_cubecl::cubecl::calculate_cube_count_elemwise(&client, units, cube_dim);
        // Safety: unit `w` writes world `w`'s counter, inside the buffer of `count` counters.
        unsafe {
            rows::clear_rows::launch_unchecked(
                &client,
                cube_count,
                cube_dim,
                rows.counts.clone().into_tensor_arg(),
                worlds.count as u32,
            )
        }
        let floats = || self.floats.clone().into_tensor_arg();
        let block = || [&rows.counts, &rows.jacobian, &rows.source].map(|t| t.clone().into_tensor_arg());
        let per_world = rows.per_world as u32;
        if self.packed.limits() > 0 {
            let [counts, jacobian, source] = block();
            launch_typed!(
                self,
                worlds,
                worlds.count,
                rows::limit_rows,
                [floats()],
                [counts, jacobian, source, per_world]
            );
        }
        let pool_args = || [&pool.counter, &pool.found, &pool.geometry].map(|t| t.clone().into_tensor_arg());
        let capacity = pool.capacity as u32;
        if pool.capacity > 0 {
            let [counter, found, geometry] = pool_args();
            let [counts, jacobian, source] = block();
            launch_typed!(
                self,
                worlds,
                pool.capacity,
                rows::contact_rows,
                [floats()],
                [counter, found, geometry, capacity, counts, jacobian, source, per_world]
            );
        }
        let [_, found, geometry] = pool_args();
        let [counts, jacobian, source] = block();
        let [target, regularizer] = [&rows.target, &rows.regularizer].map(|t| t.clone().into_tensor_arg());
        launch_typed!(
            self,
            worlds,
            worlds.count,
            impedance::row_terms,
            [floats()],
            [found, geometry, capacity, counts, jacobian, source, per_world, target, regularizer]
        );
        Ok(())
    }

    /// Every world's constraint problem solved, after [`Stages::rows`] and the smooth stages at
    /// the same state ([`Stages::smooth`]): MuJoCo's Newton method from the free velocity
    /// ([`newton`]; a solve on its own starts from there, as a step's first does), and the
    /// acceleration with the constraint forces into [`Array::Qacc`]. The device solves problems
    /// whose rows are all unilateral (limits, frictionless contacts, the pyramidal cone's
    /// edges): a model whose contacts have elliptic cones is refused. A world whose solve stops
    /// short of convergence keeps its last point, as the CPU's step does
    /// ([`Stages::stopped_short`] names it); one whose Hessian is not positive definite fails
    /// ([`Failure::IndefiniteHessian`]).
    pub fn solve_constraints(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.check(worlds)?;
        self.solve_refusal()?;
        dispatch_stage!(self, worlds, newton::begin_step);
        self.newton(worlds, Iterations::Checked, 0)
    }

    /// [`Stages::solve_constraints`] within a step: from the warm start its earlier solves left
    /// where that costs less than the free velocity (RK4's later points), its iterations launched
    /// as `iterations` says for the step's evaluation `point` ([`speculation`]).
    fn newton(&self, worlds: &Worlds, iterations: Iterations, point: usize) -> Result<(), GpuError> {
        self.solve_refusal()?;
        if self.packed.nv() == 0 {
            return Ok(());
        }
        let rows = &worlds.rows;
        let per_world = rows.per_world as u32;
        let arg = |t: &CubeTensor| t.clone().into_tensor_arg();
        let floats = || self.floats.clone().into_tensor_arg();
        let n = worlds.count;
        let [counts, jacobian, target, regularizer, jar, first] =
            [&rows.counts, &rows.jacobian, &rows.target, &rows.regularizer, &rows.jar, &worlds.gathered.lists[0]]
                .map(arg);
        launch_typed!(
            self,
            worlds,
            n,
            newton::newton_start,
            [floats()],
            [counts, jacobian, target, regularizer, jar, per_world, first]
        );
        self.schedule(worlds, 0);
        // Each iteration runs over the worlds still iterating, none once every world has
        // stopped. The budget is one iteration past the last step allowed, whose direction
        // tests convergence. Checked, the host reads how many worlds are left every few
        // iterations (each read waits for the device); launched, it reads nothing, and the
        // solve's end cuts the worlds still iterating.
        let budget = self.packed.newton_iterations() + 1;
        let launched = match iterations {
            Iterations::Checked => budget,
            Iterations::Launched(counts) => counts[point].min(budget),
        };
        for iteration in 1..=launched {
            let next = iteration % 2;
            self.newton_iteration(worlds, 1 - next, next);
            self.schedule(worlds, next);
            if iteration % SOLVE_CHECK == 0 {
                match iterations {
                    Iterations::Checked if self.still_iterating(worlds, next)? == 0 => break,
                    Iterations::Checked => {}
                    Iterations::Launched(_) => self.device.client().flush().map_err(device_error)?,
                }
            }
        }
        let [counts, jacobian, target, regularizer, jar] =
            [&rows.counts, &rows.jacobian, &rows.target, &rows.regularizer, &rows.jar].map(arg);
        launch_typed!(
            self,
            worlds,
            n,
            newton::newton_end,
            [floats()],
            [counts, jacobian, target, regularizer, jar, per_world, point as u32]
        );
        Ok(())
    }

    /// A Newton iteration of the worlds in list `listed` ([`gathered`]): the Hessian where a row
    /// changed zone (a small model's in the direction's launch), the direction and the
    /// convergence test, then the line search and the step; the worlds that go on are listed in
    /// list `next`.
    fn newton_iteration(&self, worlds: &Worlds, listed: usize, next: usize) {
        let (rows, gathered) = (&worlds.rows, &worlds.gathered);
        let per_world = rows.per_world as u32;
        let arg = |t: &CubeTensor| t.clone().into_tensor_arg();
        let floats = || self.floats.clone().into_tensor_arg();
        let nv = self.packed.nv();
        let [by_world, by_column] = &gathered.launches;
        let by_world = || self.listed_cubes(worlds, by_world, 1);
        if nv > dense::UNROLLED_DOFS {
            let [list, counts, jacobian, regularizer, jar] =
                [&gathered.lists[listed], &rows.counts, &rows.jacobian, &rows.regularizer, &rows.jar].map(arg);
            launch_typed!(
                self,
                worlds,
                listed self.listed_cubes(worlds, by_column, nv),
                newton::newton_hessian,
                [],
                [list, counts, jacobian, regularizer, jar, per_world]
            );
        }
        let [list, counts, jacobian, regularizer, jar] =
            [&gathered.lists[listed], &rows.counts, &rows.jacobian, &rows.regularizer, &rows.jar].map(arg);
        launch_typed!(
            self,
            worlds,
            listed by_world(),
            newton::newton_direction,
            [floats()],
            [list, counts, jacobian, regularizer, jar, per_world, nv]
        );
        let [list, counts, jacobian, regularizer, jar, line, next] = [
            &gathered.lists[listed],
            &rows.counts,
            &rows.jacobian,
            &rows.regularizer,
            &rows.jar,
            &rows.direction,
            &gathered.lists[next],
        ]
        .map(arg);
        launch_typed!(
            self,
            worlds,
            listed by_world(),
            newton::newton_line,
            [floats()],
            [list, counts, jacobian, regularizer, jar, line, per_world, next]
        );
    }

    /// The cubes of a launch of `per_world` units per listed world: as many as [`gathered::schedule`]
    /// wrote in `launch` where the batch has [`gathered::INDIRECT_FROM`] worlds or more, else
    /// enough for every world (the units past the list's end return).
    fn listed_cubes(&self, worlds: &Worlds, launch: &CubeTensor, per_world: usize) -> CubeCount {
        if worlds.count >= gathered::INDIRECT_FROM {
            CubeCount::Dynamic(launch.handle.clone().binding())
        } else {
            CubeCount::Static((worlds.count * per_world).div_ceil(gathered::CUBE as usize) as u32, 1, 1)
        }
    }

    /// Makes list `next` the next iteration's and writes the launch sizes over it
    /// ([`gathered::schedule`]).
    fn schedule(&self, worlds: &Worlds, next: usize) {
        let gathered = &worlds.gathered;
        let client = self.device.client();
        let [by_world, by_column] = gathered.launches.clone().map(|t| t.into_tensor_arg());
        let list = gathered.lists[next].clone().into_tensor_arg();
        // Safety: one unit writes the list's two counts and three numbers of each launch
        // buffer, all inside them.
        unsafe {
            gathered::schedule::launch_unchecked(
                &client,
                CubeCount::Static(1, 1, 1),
                CubeDim::new_1d(1),
                list,
                by_world,
                by_column,
                self.packed.nv() as u32,
            )
        }
    }

    /// How many worlds list `next` holds for the next iteration: the worlds whose solve still
    /// iterates (one read of one number).
    fn still_iterating(&self, worlds: &Worlds, next: usize) -> Result<u32, GpuError> {
        let at = gathered::list::LISTED as isize;
        let count = Slice { start: at, end: Some(at + 1), step: 1 };
        let listed = CubeBackend::int_slice(worlds.gathered.lists[next].clone(), &[count]);
        Ok(read_ints(&listed)?[0])
    }

    /// The worlds whose last constraint solve stopped short of convergence (out of iterations,
    /// or no decrease along its direction) and kept its last point, as the CPU's step does
    /// (its `StepInfo::converged` false): one read.
    pub fn stopped_short(&self, worlds: &Worlds) -> Result<Vec<usize>, GpuError> {
        self.worlds_in(worlds, newton::solve_state::STOPPED)
    }

    /// The worlds whose solve is in `state` (`newton::solve_state`).
    fn worlds_in(&self, worlds: &Worlds, state: u32) -> Result<Vec<usize>, GpuError> {
        let states = self.read(worlds, Array::Newton)?;
        let state = f64::from(state);
        Ok((0..worlds.count).filter(|&w| states[w][newton::newton_item::STATE] == state).collect())
    }

    /// Each world's constraint rows, read back (four transfers): dense over the degrees of
    /// freedom, in the order of its block, with their targets and regularizers.
    pub fn read_rows(&self, worlds: &Worlds) -> Result<Vec<WorldRows>, GpuError> {
        self.check(worlds)?;
        let rows = &worlds.rows;
        let (n, nv) = (worlds.count, self.packed.nv());
        let counts = read_ints(&rows.counts)?;
        let (jacobian, target, regularizer) =
            (read_floats(&rows.jacobian)?, read_floats(&rows.target)?, read_floats(&rows.regularizer)?);
        Ok((0..n)
            .map(|w| {
                let count = (counts[w] as usize).min(rows.per_world);
                WorldRows {
                    jacobian: (0..count).map(|r| (0..nv).map(|d| jacobian[(r * nv + d) * n + w]).collect()).collect(),
                    target: (0..count).map(|r| target[r * n + w]).collect(),
                    regularizer: (0..count).map(|r| regularizer[r * n + w]).collect(),
                }
            })
            .collect())
    }

    /// Each world's contacts in the pool, read back (three transfers), in the order of their
    /// slots.
    pub fn contacts(&self, worlds: &Worlds) -> Result<Vec<Vec<Contact>>, GpuError> {
        self.check(worlds)?;
        let pool = &worlds.pool;
        let stored = (read_ints(&pool.counter)?[0] as usize).min(pool.capacity);
        let found = read_ints(&pool.found)?;
        let geometry = read_floats(&pool.geometry)?;
        let slots = pool.capacity.max(1);
        let mut out = vec![Vec::new(); worlds.count];
        for c in 0..stored {
            let int = |field: usize| found[field * slots + c] as usize;
            let v = |field: usize| std::array::from_fn(|i| geometry[(field + i) * slots + c]);
            let pair = &self.packed.pairs[int(contact_int::PAIR)];
            let row = found[contact_int::ROW * slots + c];
            out[int(contact_int::WORLD)].push(Contact {
                geoms: pair.geoms,
                explicit: pair.explicit,
                row: (row != collision::NO_ROW).then_some(row as usize),
                feature: int(contact_int::FEATURE),
                point: v(contact_float::POINT),
                normal: v(contact_float::NORMAL),
                tangents: [v(contact_float::TANGENT1), v(contact_float::TANGENT2)],
                depth: geometry[contact_float::DEPTH * slots + c],
            });
        }
        Ok(out)
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

    /// The acceleration an integrator reads at the worlds' state: the smooth stages, then where
    /// the model is constrained collision, the rows and the solve (MuJoCo's model under
    /// `mujoco_compat`, each solve warm from the step's earlier ones where that costs less).
    fn rates(&self, worlds: &Worlds, iterations: Iterations, point: usize) -> Result<(), GpuError> {
        self.smooth(worlds)?;
        if self.packed.constrained() {
            self.collide(worlds)?;
            self.rows(worlds)?;
            self.newton(worlds, iterations, point)?;
        }
        Ok(())
    }

    /// The step's backward: the cotangents of its end, in [`Array::AdjointQpos`] (tangent
    /// coordinates: a quaternion's turn in its own frame, `nv` numbers) and
    /// [`Array::AdjointQvel`], pulled back to its start, which the worlds hold (their `qpos`,
    /// `qvel` and controls: keep them before [`Stages::step`]). On return those two arrays hold
    /// the cotangents of `qpos` and `qvel`, and [`Array::AdjointCtrl`] the controls'. It
    /// recomputes the forward's stages ([`backward`]; with constraints the solve too, whose
    /// Hessian factor the implicit rule reuses: [`constraint_adjoint`]) and reads nothing back.
    /// A world whose solve stopped short fails ([`Failure::UnconvergedSolve`]).
    ///
    /// It differentiates semi-implicit Euler's step and RK4's ([`rk4_backward`]), unconstrained
    /// or under `mujoco_compat` with joint limits and every contact the collision stage finds
    /// (the pyramid's edges of every condim: [`contact_adjoint`]); a world that presses a contact
    /// with no derivative there fails ([`Failure::UndifferentiatedContact`]). Under Euler's implicit
    /// damping of a damped dof with constraints (MuJoCo's split solve) it takes the split back
    /// too ([`backward::split_begin`]). What the step refuses is refused by name. Its solves'
    /// iterations are checked as they go (a read every few).
    pub fn step_backward(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.launch_backward(worlds, Iterations::Checked)
    }

    /// [`Stages::step_backward`] with its solves' iterations launched as `iterations` says: a
    /// world whose solve was cut is marked (`layout::status::CUT`) and its cotangents are not
    /// computed.
    pub(crate) fn launch_backward(&self, worlds: &Worlds, iterations: Iterations) -> Result<(), GpuError> {
        self.check(worlds)?;
        self.step_refusal()?;
        if self.packed.constrained() {
            dispatch_stage!(self, worlds, newton::begin_step);
        }
        self.rates(worlds, iterations, 0)?;
        if self.packed.nv() == 0 {
            return Ok(());
        }
        if self.packed.integrator == Integrator::Euler {
            dispatch_stage!(self, worlds, backward::euler_adjoint, floats);
            if self.packed.constrained() && self.packed.implicitly_damped() {
                return self.split_backward(worlds);
            }
            return self.acceleration_backward(worlds);
        }
        self.rk4_points(worlds, true, iterations)?;
        dispatch_stage!(self, worlds, rk4_backward::rk4_end_adjoint, floats);
        let kind = self.float_kind();
        for (k, &(c, w)) in integrate::RK4.iter().enumerate().rev() {
            // The forward left the worlds at the last point; the others are evaluated again.
            if k + 1 < integrate::RK4.len() {
                launch_typed!(self, worlds, worlds.count, integrate::rk4_restore, [], [k as u32]);
                self.rates(worlds, iterations, k)?;
            }
            let floats = || self.floats.clone().into_tensor_arg();
            // A launch takes its scalars by value: each makes its own.
            let (point, at) = (k as u32, |x: f64| scalar(x, kind));
            launch_typed!(
                self,
                worlds,
                worlds.count,
                rk4_backward::rk4_point_cotangents,
                [floats()],
                [point, at(c), at(w)]
            );
            self.acceleration_backward(worlds)?;
            launch_typed!(self, worlds, worlds.count, rk4_backward::rk4_point_pullback, [floats()], [point, at(c)]);
        }
        dispatch_stage!(self, worlds, rk4_backward::rk4_finish_adjoint);
        dispatch_stage!(self, worlds, backward::check_cotangents);
        Ok(())
    }

    /// The backward of the acceleration at the worlds' state, its stages evaluated there: from
    /// the cotangent `x̄` of the post-step velocity `x = v + h a` in [`Array::AdjointQvel`], the
    /// multiplier (`λ = K⁻¹ h x̄`, or the solve's implicit rule), then what `x` passes to `q`,
    /// `v` and the controls added to [`Array::AdjointQpos`], [`Array::AdjointQvel`] (which
    /// keeps `x̄` where `x` passes it through) and [`Array::AdjointCtrl`].
    fn acceleration_backward(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.inverse_dynamics(worlds)?;
        if self.packed.constrained() {
            let rows = &worlds.rows;
            let arg = |t: &CubeTensor| t.clone().into_tensor_arg();
            let [counts, jacobian, source, target, regularizer] =
                [&rows.counts, &rows.jacobian, &rows.source, &rows.target, &rows.regularizer].map(arg);
            let per_world = rows.per_world as u32;
            let floats = self.floats.clone().into_tensor_arg();
            let [found, geometry] = [&worlds.pool.found, &worlds.pool.geometry].map(arg);
            let capacity = worlds.pool.capacity as u32;
            launch_typed!(
                self,
                worlds,
                worlds.count,
                constraint_adjoint::constraint_adjoint,
                [floats],
                [counts, jacobian, source, target, regularizer, per_world, found, geometry, capacity]
            );
        } else {
            dispatch_stage!(self, worlds, backward::acceleration_adjoint, floats);
        }
        self.inverse_dynamics_adjoint(worlds)?;
        dispatch_stage!(self, worlds, backward::forces_adjoint, floats);
        Ok(())
    }

    /// The stages' float type, as a scalar argument's kind.
    fn float_kind(&self) -> FloatKind {
        match self.dtype {
            DType::F64 => FloatKind::F64,
            _ => FloatKind::F32,
        }
    }

    /// RK4's points after the stages at the step's start ([`Stages::rates`]): the first slope,
    /// then each further point's move, stages and slope (`integrate::RK4`), each point but the
    /// last kept for the backward where `keep` asks. The worlds are left at the last point.
    fn rk4_points(&self, worlds: &Worlds, keep: bool, iterations: Iterations) -> Result<(), GpuError> {
        let (_, first) = integrate::RK4[0];
        dispatch_stage!(self, worlds, integrate::rk4_begin, first);
        for (k, &(c, w)) in integrate::RK4.iter().enumerate() {
            if k > 0 {
                dispatch_stage!(self, worlds, integrate::rk4_point, floats, c);
                self.rates(worlds, iterations, k)?;
                dispatch_stage!(self, worlds, integrate::rk4_rates, floats, w);
            }
            // The backward evaluates the last point's stages once, where the forward leaves them.
            if keep && k + 1 < integrate::RK4.len() {
                launch_typed!(self, worlds, worlds.count, integrate::rk4_keep, [], [k as u32]);
            }
        }
        Ok(())
    }

    /// What the step does not run, refused by name before anything is launched: its own, the
    /// forces stage's, and where the model is constrained the contact stages', the rows' and
    /// the solve's.
    pub(crate) fn step_refusal(&self) -> Result<(), GpuError> {
        if let Some(what) = &self.packed.unsupported_step {
            return Err(GpuError::Model(format!("the device step does not run {what}")));
        }
        if let Some(what) = &self.packed.unsupported_forces {
            return Err(GpuError::Model(format!("the forces stage does not compute {what}")));
        }
        if self.packed.constrained() {
            self.collision_refusal()?;
            self.rows_refusal()?;
            self.solve_refusal()?;
        }
        Ok(())
    }

    /// The pairs of geoms the collision stage has no closed form for, refused by name.
    fn collision_refusal(&self) -> Result<(), GpuError> {
        match &self.packed.unsupported_collision {
            Some(what) => Err(GpuError::Model(format!("the device's contact stages do not take {what}"))),
            None => Ok(()),
        }
    }

    /// The constraints the rows stage does not build, refused by name.
    fn rows_refusal(&self) -> Result<(), GpuError> {
        match &self.packed.unsupported_constraints {
            Some(what) => Err(GpuError::Model(format!("the rows stage does not build {what}"))),
            None => Ok(()),
        }
    }

    /// What the constraint solve does not handle, refused by name.
    fn solve_refusal(&self) -> Result<(), GpuError> {
        match &self.packed.unsupported_solve {
            Some(what) => Err(GpuError::Model(format!("the constraint solve does not handle {what}"))),
            None => Ok(()),
        }
    }

    /// One step of every world under the model's integrator (Euler or RK4), its controls held,
    /// with its constraints where they are enabled ([`Stages::rates`]); the implicit
    /// integrators, and what the stages do not compute, are refused by name. A world that fails
    /// is marked ([`Stages::failures`]) and the others step on.
    ///
    /// A constrained step reads the device once, before its end, for what its solves came to:
    /// its solves launch as many Newton iterations as recent steps needed ([`speculation`]), and
    /// where one was cut short the step is taken again from its start, checking as it goes.
    pub fn step(&self, worlds: &Worlds) -> Result<(), GpuError> {
        self.step_refusal()?;
        self.advance(worlds, self.iterations())?;
        if self.packed.constrained() && self.packed.nv() > 0 {
            let solves = self.read(worlds, Array::StepSolves)?;
            if !self.learn(solves.iter().map(Vec::as_slice)) {
                if self.packed.integrator != Integrator::Euler {
                    dispatch_stage!(self, worlds, integrate::rk4_rewind);
                }
                self.advance(worlds, Iterations::Checked)?;
                // What the checked solves took is learned too (a further read, after a cut only).
                self.learn(self.read(worlds, Array::StepSolves)?.iter().map(Vec::as_slice));
            }
        }
        self.finish(worlds)
    }

    /// A step up to its end: its beginning, the rates at its start and, under RK4, at its
    /// further points; the worlds' `qpos` and `qvel` are kept where the end reads them.
    fn advance(&self, worlds: &Worlds, iterations: Iterations) -> Result<(), GpuError> {
        if self.packed.constrained() {
            dispatch_stage!(self, worlds, newton::begin_step);
        }
        self.rates(worlds, iterations, 0)?;
        if self.packed.nv() > 0 && self.packed.integrator != Integrator::Euler {
            self.rk4_points(worlds, false, iterations)?;
        }
        Ok(())
    }

    /// A step's end after [`Stages::advance`]: the integrator's update of `qpos` and `qvel`.
    fn finish(&self, worlds: &Worlds) -> Result<(), GpuError> {
        if self.packed.nv() == 0 {
            return Ok(());
        }
        if self.packed.integrator == Integrator::Euler {
            dispatch_stage!(self, worlds, integrate::euler, floats);
        } else {
            dispatch_stage!(self, worlds, integrate::rk4_finish, floats);
        }
        Ok(())
    }

    /// A step whose solves launch `iterations`, reading nothing: a world whose solve was cut is
    /// marked (`layout::status::CUT`) and keeps no step.
    pub(crate) fn launch_step(&self, worlds: &Worlds, iterations: Iterations) -> Result<(), GpuError> {
        self.step_refusal()?;
        self.advance(worlds, iterations)?;
        self.finish(worlds)
    }

    /// How the next step launches its solves' iterations.
    pub(crate) fn iterations(&self) -> Iterations {
        self.speculation.iterations()
    }

    /// What a step's solves came to, each world's [`step_solves`] as read back, learned for the
    /// next steps' launches: `false` where one was cut (the step is to be taken again).
    pub(crate) fn learn<'a>(&self, solves: impl Iterator<Item = &'a [f64]>) -> bool {
        let mut took = [0; layout::RK4_POINTS];
        for solve in solves {
            if solve[step_solves::CUT] != 0.0 {
                self.retake();
                return false;
            }
            for (most, &took) in took.iter_mut().zip(&solve[step_solves::ITERATIONS..]) {
                *most = (*most).max(took as usize);
            }
        }
        self.speculation.took(took);
        true
    }

    /// A step (or its backward) is taken again after a cut: the next steps launch more.
    pub(crate) fn retake(&self) {
        self.speculation.cut();
    }

    /// Sets the Newton iterations the next step's solves launch before its read (at least one,
    /// at most the budget and the iteration that tests it); the steps after learn theirs from
    /// what each step's solves took ([`speculation`]). A first step launches 16.
    pub fn launch_iterations(&self, count: usize) {
        self.speculation.launch(count);
    }

    /// How many steps were taken again because a solve was cut, so far, over this model's
    /// stages and their clones.
    pub fn steps_retaken(&self) -> usize {
        self.speculation.retaken()
    }
}
