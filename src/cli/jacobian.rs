//! `phyz jacobian`: the exact step Jacobians of a model at a state, as JSON.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use nalgebra::DMatrix;
use phyz::dual::{ReverseJacobians, step_jacobians_lanes};

use super::csv::read_vector;
use super::start::StartArgs;
use super::{CliError, ConstraintArgs, load};

#[derive(Args)]
pub struct JacobianArgs {
    /// MJCF model file.
    model: PathBuf,
    #[command(flatten)]
    start: StartArgs,
    /// The step's controls: one row of `nu` numbers (default: the keyframe's, else zeros).
    #[arg(long)]
    ctrl: Option<PathBuf>,
    #[command(flatten)]
    constraints: ConstraintArgs,
    /// Step with semi-implicit Euler whatever the model asks (MuJoCo's `mjd_transitionFD`
    /// refuses RK4; this makes the two comparable).
    #[arg(long)]
    euler: bool,
    /// Evaluate the Jacobians this many times and print the median time of one evaluation.
    #[arg(long, default_value_t = 1)]
    reps: usize,
    /// How the Jacobians are computed: by rows (reverse mode, one tape sweep per eight rows)
    /// or by columns (forward mode, dual numbers, eight columns per pass).
    #[arg(long, value_enum, default_value_t = Mode::Reverse)]
    mode: Mode,
    /// Output JSON: `{"A": [[…], …], "B": [[…], …]}`, rows of `A` (2nv × 2nv) then of `B`
    /// (2nv × nu), in MuJoCo's tangent-space convention.
    #[arg(long)]
    out: PathBuf,
}

/// Reverse or forward mode.
#[derive(Clone, Copy, ValueEnum)]
enum Mode {
    Reverse,
    Forward,
}

/// A matrix as a JSON array of rows, every number exactly (shortest round-trip form).
fn json_rows(m: &DMatrix<f64>) -> String {
    let rows: Vec<String> = m
        .row_iter()
        .map(|r| format!("[{}]", r.iter().map(|x| format!("{x:e}")).collect::<Vec<_>>().join(", ")))
        .collect();
    format!("[{}]", rows.join(",\n  "))
}

pub fn run(args: JacobianArgs) -> Result<(), CliError> {
    let mut model = load(&args.model)?;
    if args.euler {
        model.integrator = phyz::model::Integrator::Euler;
    }
    let contact = args.constraints.apply(&mut model);
    let (state, key_ctrl) = args.start.state(&model)?;
    let ctrl = match &args.ctrl {
        Some(path) => read_vector(path, model.nu(), "ctrl")?,
        None => key_ctrl.unwrap_or_else(|| vec![0.0; model.nu()]),
    };
    let mut times = Vec::with_capacity(args.reps.max(1));
    let mut jac = None;
    // As an iLQR sweep evaluates them: one model, many states.
    let mut reverse = match args.mode {
        Mode::Reverse => Some(ReverseJacobians::new(&model, &[])?),
        Mode::Forward => None,
    };
    for _ in 0..args.reps.max(1) {
        let started = std::time::Instant::now();
        jac = Some(match &mut reverse {
            Some(rows) => rows.at(&state, &ctrl, &mut contact.clone())?,
            None => step_jacobians_lanes::<8>(&model, &state, &ctrl, &[], &mut contact.clone())?,
        });
        times.push(started.elapsed().as_secs_f64());
    }
    let jac = jac.ok_or("no evaluation")?;
    if jac.a.iter().chain(jac.b.iter()).any(|x| !x.is_finite()) {
        return Err("the step Jacobians are not finite at this state".into());
    }
    times.sort_by(f64::total_cmp);
    let median_us = 1e6 * times[times.len() / 2];
    let file = std::fs::File::create(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let mut out = BufWriter::new(file);
    writeln!(out, "{{\"A\": {},\n\"B\": {}}}", json_rows(&jac.a), json_rows(&jac.b))?;
    out.flush()?;
    println!(
        "A {}x{}, B {}x{} written to {} ({} contacts, {} limits); median {median_us:.1} µs per evaluation of {}",
        jac.a.nrows(),
        jac.a.ncols(),
        jac.b.nrows(),
        jac.b.ncols(),
        args.out.display(),
        jac.info.contacts,
        jac.info.limits,
        times.len()
    );
    Ok(())
}
