//! Command-line interface: argument parsing and one module per subcommand.

mod bench;
mod csv;
mod demo;
mod info;
mod simulate;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use phyz::Model;
use phyz::model::mjcf;

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
    /// Simulate the built-in double pendulum and summarize its trajectory (the default).
    Demo(demo::DemoArgs),
    /// Print a model's bodies, joints, sizes, timestep and integrator.
    Info {
        /// MJCF model file.
        model: PathBuf,
    },
    /// Simulate a model and write its trajectory as CSV.
    Simulate(simulate::SimulateArgs),
    /// Time the smooth-dynamics step of a model (prints `step_us <microseconds per step>`).
    Bench(bench::BenchArgs),
}

/// How the constraint solver is configured for a run.
#[derive(Args, Clone, Copy)]
pub struct ConstraintArgs {
    /// Switch off contacts and every constraint (joint and tendon limits), as MuJoCo's
    /// `constraint` disable flag does.
    #[arg(long)]
    no_constraints: bool,
}

impl ConstraintArgs {
    /// Applies the flag, and refuses a model whose constraints would be active: the constraint
    /// solver is not part of phyz yet, and silently dropping contacts or limits would simulate
    /// a different system.
    fn apply(self, model: &mut Model<f64>) -> Result<(), CliError> {
        if self.no_constraints {
            model.enabled.constraint = false;
            return Ok(());
        }
        match active_constraints(model) {
            None => Ok(()),
            Some(what) => Err(format!(
                "the model has {what}, and phyz does not solve constraints yet: pass --no-constraints to simulate without them"
            )
            .into()),
        }
    }
}

/// A description of the first constraint the model would activate, if any.
fn active_constraints(model: &Model<f64>) -> Option<String> {
    let e = model.enabled;
    if !e.constraint {
        return None;
    }
    if e.limit {
        if let Some(j) = model.joints().iter().find(|j| j.range.is_some()) {
            return Some(format!("a limited joint (`{}`)", j.name));
        }
        if let Some(t) = model.tendons().iter().find(|t| t.range.is_some()) {
            return Some(format!("a limited tendon (`{}`)", t.name));
        }
    }
    if e.contact {
        let geoms: Vec<(usize, &phyz::model::Geom<f64>)> =
            model.bodies().iter().enumerate().flat_map(|(b, body)| body.geoms.iter().map(move |g| (b, g))).collect();
        for (i, (b1, g1)) in geoms.iter().enumerate() {
            for (b2, g2) in &geoms[i + 1..] {
                let compatible = (g1.contype & g2.conaffinity) != 0 || (g2.contype & g1.conaffinity) != 0;
                if b1 != b2 && compatible {
                    return Some("geoms that can collide".to_string());
                }
            }
        }
    }
    None
}

fn load(path: &PathBuf) -> Result<Model<f64>, CliError> {
    Ok(mjcf::load(path)?)
}

pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command.unwrap_or(Command::Demo(demo::DemoArgs::default())) {
        Command::Demo(args) => demo::run(args),
        Command::Info { model } => info::run(&load(&model)?),
        Command::Simulate(args) => simulate::run(args),
        Command::Bench(args) => bench::run(args),
    }
}
