//! Command-line interface: argument parsing and one module per subcommand.

mod bench;
mod csv;
mod demo;
#[cfg(feature = "dual")]
mod gradcheck;
mod info;
#[cfg(feature = "dual")]
mod jacobian;
#[cfg(feature = "dual")]
mod plot;
mod simulate;
mod start;
#[cfg(feature = "dual")]
mod task;
#[cfg(feature = "dual")]
mod throw;
mod view;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use phyz::Model;
use phyz::contact::SolverConfig;
use phyz::mjcf;
use phyz::sim::ContactState;

/// An error for the user: a message, already phrased.
pub type CliError = Box<dyn std::error::Error>;

#[derive(Parser)]
#[command(name = "phyz", version, about = "Differentiable rigid-body physics")]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Optimize a ball's launch velocity and spin so that it lands on a target after bouncing,
    /// through the exact rollout gradient; plots the loss and the paths (the default).
    #[cfg(feature = "dual")]
    Throw(throw::ThrowArgs),
    /// Simulate the built-in double pendulum and summarize its trajectory.
    Demo(demo::DemoArgs),
    /// Print a model's bodies, joints, sizes, timestep and integrator.
    Info {
        /// MJCF model file.
        model: PathBuf,
    },
    /// Simulate a model and write its trajectory as CSV, or as a page that plays it back.
    Simulate(simulate::SimulateArgs),
    /// Write a self-contained HTML page that plays back a model's trajectory in 3D.
    View(view::ViewArgs),
    /// Time the smooth-dynamics step of a model (prints `step_us <microseconds per step>`).
    Bench(bench::BenchArgs),
    /// Write a model's exact step Jacobians `A`, `B` at a state as JSON (tangent-space
    /// convention of MuJoCo's `mjd_transitionFD`).
    #[cfg(feature = "dual")]
    Jacobian(jacobian::JacobianArgs),
    /// Check a model's step Jacobians and a rollout gradient against central differences.
    #[cfg(feature = "dual")]
    Gradcheck(gradcheck::GradcheckArgs),
}

/// How constraints are handled in a run.
#[derive(Args, Clone, Copy)]
pub struct ConstraintArgs {
    /// Switch off contacts and every constraint (joint and tendon limits), as MuJoCo's
    /// `constraint` disable flag does.
    #[arg(long)]
    no_constraints: bool,
    /// Contact-solver preset.
    #[arg(long, value_enum, default_value_t = Preset::Simulation)]
    preset: Preset,
}

/// The solver presets, named as `SolverConfig`'s constructors are (`mujoco_compat`), with the
/// hyphenated spelling accepted too.
#[derive(Clone, Copy, ValueEnum)]
#[value(rename_all = "snake_case")]
enum Preset {
    Simulation,
    Gradients,
    #[value(alias = "mujoco-compat")]
    MujocoCompat,
    #[value(alias = "gpu-equivalent")]
    GpuEquivalent,
}

impl ConstraintArgs {
    /// Applies `--no-constraints` to the model and returns the solver state for the preset.
    fn apply(self, model: &mut Model<f64>) -> ContactState {
        if self.no_constraints {
            model.enabled.constraint = false;
        }
        ContactState::new(match self.preset {
            Preset::Simulation => SolverConfig::simulation(),
            Preset::Gradients => SolverConfig::gradients(),
            Preset::MujocoCompat => SolverConfig::mujoco_compat(),
            Preset::GpuEquivalent => SolverConfig::gpu_equivalent(),
        })
    }
}

fn load(path: &PathBuf) -> Result<Model<f64>, CliError> {
    Ok(mjcf::load(path)?)
}

/// The main job: the throw optimization, or the pendulum demo in a build without derivatives.
fn default_command() -> Command {
    #[cfg(feature = "dual")]
    return Command::Throw(throw::ThrowArgs::default());
    #[cfg(not(feature = "dual"))]
    return Command::Demo(demo::DemoArgs::default());
}

pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command.unwrap_or_else(default_command) {
        #[cfg(feature = "dual")]
        Command::Throw(args) => throw::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Info { model } => info::run(&model),
        Command::Simulate(args) => simulate::run(args),
        Command::View(args) => view::run(args),
        Command::Bench(args) => bench::run(args),
        #[cfg(feature = "dual")]
        Command::Jacobian(args) => jacobian::run(args),
        #[cfg(feature = "dual")]
        Command::Gradcheck(args) => gradcheck::run(args),
    }
}
