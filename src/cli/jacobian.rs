//! `phyz jacobian`: the exact step Jacobians of a model at a state, as JSON.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use nalgebra::DMatrix;
use phyz::dual::{AnalyticalJacobians, ReverseJacobians, step_jacobians_lanes};

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
    /// How the Jacobians are computed: by rows (reverse mode, one tape sweep per eight rows),
    /// by columns (forward mode, dual numbers, eight columns per pass), or by stages (the step
    /// in `f64`, inverse dynamics differentiated analytically, the constraint stage by tangents
    /// through it alone; Euler steps only).
    #[arg(long, value_enum, default_value_t = Mode::Reverse)]
    mode: Mode,
    /// Output JSON: `{"A": [[…], …], "B": [[…], …]}`, rows of `A` (2nv × 2nv) then of `B`
    /// (2nv × nu), in MuJoCo's tangent-space convention.
    #[arg(long)]
    out: PathBuf,
}

/// Reverse mode, forward mode, or by stages.
#[derive(Clone, Copy, ValueEnum)]
enum Mode {
    Reverse,
    Forward,
    Stages,
}

/// A matrix as a JSON array of rows, every number exactly (shortest round-trip form).
fn json_rows(m: &DMatrix<f64>) -> String {
    let rows: Vec<String> = m
        .row_iter()
        .map(|r| format!("[{}]", r.iter().map(|x| format!("{x:e}")).collect::<Vec<_>>().join(", ")))
        .collect();
    format!("[{}]", rows.join(",\n  "))
}

/// The median of `times` (seconds), in microseconds.
fn median_micros(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    1e6 * times[times.len() / 2]
}

/// The evaluator a mode sets up once for all repetitions.
enum Route<'m> {
    Rows(Box<ReverseJacobians<'m>>),
    Columns,
    Stages(Box<AnalyticalJacobians>),
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
    let mut route = match args.mode {
        Mode::Reverse => Route::Rows(Box::new(ReverseJacobians::new(&model, &[])?)),
        Mode::Forward => Route::Columns,
        Mode::Stages => Route::Stages(Box::new(AnalyticalJacobians::new(&model)?)),
    };
    for _ in 0..args.reps.max(1) {
        let started = std::time::Instant::now();
        jac = Some(match &mut route {
            Route::Rows(rows) => rows.at(&state, &ctrl, &mut contact.clone())?,
            Route::Columns => step_jacobians_lanes::<8>(&model, &state, &ctrl, &[], &mut contact.clone())?,
            Route::Stages(stages) => stages.at(&state, &ctrl, &mut contact.clone())?,
        });
        times.push(started.elapsed().as_secs_f64());
    }
    let jac = jac.ok_or("no evaluation")?;
    if jac.a.iter().chain(jac.b.iter()).any(|x| !x.is_finite()) {
        return Err("the step Jacobians are not finite at this state".into());
    }
    let median_us = median_micros(&mut times);
    // One step from the same state, timed the same way (after one untimed step that sizes the
    // workspace): what the Jacobians cost in steps.
    let mut workspace = phyz::sim::Workspace::default();
    phyz::sim::step_in(&model, &state, &ctrl, &mut contact.clone(), &mut workspace)?;
    let mut step_times: Vec<f64> = (0..args.reps.max(1))
        .map(|_| {
            let started = std::time::Instant::now();
            phyz::sim::step_in(&model, &state, &ctrl, &mut contact.clone(), &mut workspace)
                .map(|()| started.elapsed().as_secs_f64())
        })
        .collect::<Result<_, _>>()?;
    let step_us = median_micros(&mut step_times);
    let file = std::fs::File::create(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let mut out = BufWriter::new(file);
    writeln!(out, "{{\"A\": {},\n\"B\": {}}}", json_rows(&jac.a), json_rows(&jac.b))?;
    out.flush()?;
    println!(
        "A {}x{}, B {}x{} written to {} ({} contacts, {} limits); median {median_us:.1} µs per evaluation of {} \
         (one step: {step_us:.2} µs, {:.1} steps)",
        jac.a.nrows(),
        jac.a.ncols(),
        jac.b.nrows(),
        jac.b.ncols(),
        args.out.display(),
        jac.info.contacts,
        jac.info.limits,
        times.len(),
        median_us / step_us
    );
    Ok(())
}
