//! What the parity and device_throughput examples share: their arguments, the device, the lanes'
//! perturbed starts and controls, and the CPU engine stepping each lane.

use std::path::PathBuf;
use std::sync::Arc;

use burn::tensor::{DType, Device, Tensor, TensorData};
use clap::Parser;
use nalgebra::DVector;
use phyz_burn::Simulation;
use phyz_core::contact::SolverConfig;
use phyz_core::dynamics::integrate_position;
use phyz_core::sim::{ContactState, Workspace, step_in};
use phyz_core::{Model, State};
use phyz_gpu::StagesStep;
use rayon::prelude::*;

#[derive(Parser)]
pub struct Args {
    /// The MJCF model.
    pub model: PathBuf,
    /// Environments stepped together.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// Steps.
    #[arg(long, default_value_t = 100)]
    pub steps: usize,
    /// Untimed steps first (device_throughput): the device compiles its kernels on first use, and a
    /// fused graph of a new shape (warm starts, new contacts) compiles again.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// `wgpu` (the graphics API the machine prefers: Vulkan where it has it) or `opengl`.
    #[arg(long, default_value = "wgpu")]
    pub device: String,
    /// The solver preset: `gpu_equivalent` (the traced route with the contact kernel, against
    /// the CPU's `gpu_equivalent` engine) or `mujoco_compat` (the step's stages as kernels,
    /// `phyz_gpu::stages_simulation`, against the CPU's `mujoco_compat` engine).
    #[arg(long, default_value = "gpu_equivalent")]
    pub preset: String,
    /// Both engines under semi-implicit Euler, whatever the model's integrator, its damping
    /// explicit (what the stages' backward differentiates).
    #[arg(long)]
    pub euler: bool,
}

/// A run: its arguments, the model, the device, the GPU simulation (the traced route under
/// `gpu_equivalent`, the stages under `mujoco_compat`) and its float type.
pub struct Run {
    pub args: Args,
    pub model: Model<f64>,
    pub device: Device,
    pub sim: phyz_burn::Simulation,
    pub dtype: DType,
    /// The preset's solver settings, for the CPU engine beside it.
    pub config: SolverConfig,
    /// The device's stages, under `mujoco_compat`.
    stages: Option<Arc<StagesStep>>,
}

impl Run {
    /// The run the command line asks for, its first line printed: model, batch, steps, and the
    /// float type the device gives the physics, with why.
    pub fn from_args() -> Result<Run, Box<dyn std::error::Error>> {
        let args = Args::parse();
        let mut model = phyz_core::mjcf::load(&args.model)?;
        if args.euler {
            model.integrator = phyz_core::model::Integrator::Euler;
            model.enabled.euler_damp = false;
        }
        let device = match args.device.as_str() {
            "wgpu" => phyz_gpu::device::wgpu(),
            "opengl" => phyz_gpu::device::opengl(),
            other => return Err(format!("unknown device {other}: wgpu or opengl").into()),
        };
        let mut stages = None;
        let (sim, config) = match args.preset.as_str() {
            "gpu_equivalent" => (phyz_gpu::simulation(model.clone())?, SolverConfig::gpu_equivalent()),
            "mujoco_compat" => {
                let step = Arc::new(StagesStep::new(&model, &device)?);
                let sim = Simulation::with_config(model.clone(), SolverConfig::mujoco_compat());
                stages = Some(step.clone());
                (sim.with_device_step(step)?, SolverConfig::mujoco_compat())
            }
            other => return Err(format!("unknown preset {other}: gpu_equivalent or mujoco_compat").into()),
        };
        let (dtype, why) = (sim.dtype(&device), phyz_gpu::device::float_dtype(&device).1);
        println!("{}: {} lanes, {} steps, {}; {why}", args.model.display(), args.batch, args.steps, args.preset);
        Ok(Run { args, model, device, sim, dtype, config, stages })
    }

    /// How many steps the device's stages took again so far, their solves cut short of the
    /// Newton iterations launched (`Stages::steps_retaken`); `None` off the stages.
    pub fn retaken(&self) -> Option<usize> {
        self.stages.as_ref().map(|step| step.stages().steps_retaken())
    }
}

/// A small deterministic generator (xorshift), uniform on `[-a, a]`.
pub struct Rng(pub u64);

impl Rng {
    pub fn symmetric(&mut self, a: f64) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        a * (2.0 * (self.0 >> 11) as f64 / (1u64 << 53) as f64 - 1.0)
    }
}

/// `batch` starts: the model's default state moved by a small random displacement (in tangent
/// coordinates: quaternions stay unit) and velocity, one per lane.
pub fn starts(model: &Model<f64>, batch: usize, rng: &mut Rng) -> Vec<State<f64>> {
    let default = model.default_state();
    (0..batch)
        .map(|_| {
            let delta = DVector::from_fn(model.nv(), |_, _| rng.symmetric(0.02));
            let mut s = default.clone();
            s.qpos = integrate_position(model, &default.qpos, &delta, 1.0);
            s.qvel = DVector::from_fn(model.nv(), |_, _| rng.symmetric(0.1));
            s
        })
        .collect()
}

/// Each lane's controls for one step, row by row: inside the actuators' ranges, off their clamps.
pub fn controls(model: &Model<f64>, batch: usize, rng: &mut Rng) -> Vec<f64> {
    let ranges: Vec<[f64; 2]> = model.actuators().iter().map(|a| a.ctrl_range.unwrap_or([-1.0, 1.0])).collect();
    (0..batch)
        .flat_map(|_| {
            ranges.iter().map(|[lo, hi]| 0.5 * (lo + hi) + 0.4 * (hi - lo) * rng.symmetric(1.0)).collect::<Vec<_>>()
        })
        .collect()
}

/// A `[rows, cols]` tensor of `values` on `device` in `dtype`.
pub fn tensor(values: Vec<f64>, rows: usize, cols: usize, device: &Device, dtype: DType) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values, [rows, cols]).convert_dtype(dtype), (device, dtype))
}

/// A tensor's numbers in `f64`.
pub fn values(t: &Tensor<2>) -> Vec<f64> {
    t.to_data().convert::<f64>().try_to_vec::<f64>().expect("a float tensor")
}

/// The lanes' positions and velocities, lane after lane.
pub fn flat(states: &[State<f64>]) -> (Vec<f64>, Vec<f64>) {
    (
        states.iter().flat_map(|s| s.qpos.iter().copied()).collect(),
        states.iter().flat_map(|s| s.qvel.iter().copied()).collect(),
    )
}

/// The CPU engine in `f64` under a solver preset, each lane its own warm starts, rayon over the
/// lanes: one step of every lane under `ctrl` (row by row).
pub struct Cpu {
    lanes: Vec<(State<f64>, ContactState, Workspace<f64>)>,
}

impl Cpu {
    pub fn new(starts: &[State<f64>], config: SolverConfig) -> Cpu {
        let lane = |s: &State<f64>| (s.clone(), ContactState::new(config), Workspace::default());
        Cpu { lanes: starts.iter().map(lane).collect() }
    }

    pub fn step(&mut self, model: &Model<f64>, ctrl: &[f64]) -> Result<(), phyz_core::StepError> {
        let nu = model.nu();
        self.lanes.par_iter_mut().enumerate().try_for_each(|(l, (state, contact, workspace))| {
            step_in(model, state, &ctrl[l * nu..(l + 1) * nu], contact, workspace)?;
            state.clone_from(&workspace.next);
            Ok(())
        })
    }

    pub fn states(&self) -> Vec<State<f64>> {
        self.lanes.iter().map(|(s, ..)| s.clone()).collect()
    }
}
