//! phyz's exact step Jacobians against MuJoCo's centred finite differences
//! (`mjd_transitionFD`, eps 1e-6; reference data from tools/mujoco_transition_reference.py) on
//! every gymnasium model's smooth dynamics (constraints off) and on the models with activations
//! (the state is then `(q, v, act)`), mocap bodies or an implicit integrator, and with contacts
//! and limits under `mujoco_compat`; RK4 models are stepped with Euler, as `mjd_transitionFD`
//! requires.

mod common;

use std::path::PathBuf;

use common::{entry_names, model_file, read_rows, state_from_row};
use nalgebra::DMatrix;
use phyz::contact::SolverConfig;
use phyz::dual::{step_jacobians, step_jacobians_lanes, step_jacobians_reverse};
use phyz::mjcf;
use phyz::model::Integrator;
use phyz::sim::ContactState;

/// MuJoCo's centred differences carry an error of about `ε² · f'''` plus roundoff over `ε`: the
/// comparison is to that noise, stated before measuring as 1e-6 of the largest entry.
const TOL: f64 = 1e-6;

fn matrix(rows: Vec<Vec<f64>>, columns: usize) -> DMatrix<f64> {
    DMatrix::from_fn(rows.len(), columns, |i, j| rows[i][j])
}

#[test]
fn exact_jacobians_match_mujocos_finite_differences() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(root.join("tests/reference"))
        .expect("reference data")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("transition_A.csv").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 10, "reference data for {} models", names.len());
    let mut failures = Vec::new();
    for name in &names {
        let reference = root.join("tests/reference").join(name);
        let mut model = mjcf::load(model_file(name)).expect("model");
        model.enabled.constraint = false;
        // mjd_transitionFD refuses RK4: the reference steps those models with Euler.
        if model.integrator == Integrator::Rk4 {
            model.integrator = Integrator::Euler;
        }
        let state = state_from_row(&model, &read_rows(&reference.join("onestep_in.csv"), true)[0]);
        let ctrl: Vec<f64> = read_rows(&reference.join("onestep_ctrl.csv"), false).first().cloned().unwrap_or_default();
        let ctrl = ctrl[..model.nu()].to_vec();
        let jac = step_jacobians(&model, &state, &ctrl).expect("jacobians");
        let n = 2 * model.nv() + model.na();
        let a = matrix(read_rows(&reference.join("transition_A.csv"), false), n);
        let b_rows = read_rows(&reference.join("transition_B.csv"), false);
        let b = if model.nu() == 0 { DMatrix::zeros(n, 0) } else { matrix(b_rows, model.nu()) };
        let error = |ours: &DMatrix<f64>, theirs: &DMatrix<f64>| {
            (ours - theirs).amax() / theirs.amax().max(ours.amax()).max(1e-12)
        };
        let (ea, eb) = (error(&jac.a, &a), if model.nu() == 0 { 0.0 } else { error(&jac.b, &b) });
        eprintln!("{name:>26}: A {ea:.2e}, B {eb:.2e}");
        if ea > TOL || eb > TOL {
            failures.push(format!("{name}: A {ea:.2e}, B {eb:.2e}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The same comparison with contacts, limits and the models' own cones under `mujoco_compat`:
/// two states of each gymnasium and robot model's one-step contact data where MuJoCo's differences are
/// smooth (`tools/mujoco_contact_steps.py`, MuJoCo's solver run to 1e-15), stepped with Euler.
#[test]
fn exact_jacobians_with_contact_match_mujocos_finite_differences() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let data = root.join("tests/reference/contact_steps");
    let names = entry_names(&data);
    assert!(names.len() >= 9, "contact step data for {} models", names.len());
    let (mut failures, mut checked) = (Vec::new(), 0);
    for name in &names {
        let reference = data.join(name);
        let mut model = mjcf::load(model_file(name)).expect("model");
        model.integrator = Integrator::Euler;
        let states = read_rows(&reference.join("onestep_in.csv"), true);
        let controls = read_rows(&reference.join("onestep_ctrl.csv"), false);
        let two_nv = 2 * model.nv();
        // Two states per gymnasium model; a robot's may have fewer, where MuJoCo's differences
        // are not smooth at any sampled state (the Fetch's base on its floor).
        let smooth = (0..2).take_while(|k| reference.join(format!("transition_state_{k}.csv")).exists()).count();
        let gymnasium = root.join("../shared/models/gymnasium").join(format!("{name}.xml")).exists();
        assert!(!gymnasium || smooth == 2, "{name}: {smooth} smooth states in the reference");
        for k in 0..smooth {
            checked += 1;
            // The row of the one-step data this reference was taken at.
            let row = read_rows(&reference.join(format!("transition_state_{k}.csv")), false)[0][0] as usize;
            let state = state_from_row(&model, &states[row]);
            let ctrl = controls[row][..model.nu()].to_vec();
            let a = matrix(read_rows(&reference.join(format!("transition_A_{k}.csv")), false), two_nv);
            let b = matrix(read_rows(&reference.join(format!("transition_B_{k}.csv")), false), model.nu());
            let error = |ours: &DMatrix<f64>, theirs: &DMatrix<f64>| {
                (ours - theirs).amax() / theirs.amax().max(ours.amax()).max(1e-12)
            };
            // Both ways of forming them: columns (forward mode) and rows (reverse mode).
            let config = SolverConfig::mujoco_compat();
            let forward = step_jacobians_lanes::<8>(&model, &state, &ctrl, &[], &mut ContactState::new(config));
            let reverse = step_jacobians_reverse(&model, &state, &ctrl, &[], &mut ContactState::new(config));
            for (mode, jac) in [("forward", forward), ("reverse", reverse)] {
                let jac = jac.expect("jacobians");
                let (ea, eb) = (error(&jac.a, &a), if model.nu() == 0 { 0.0 } else { error(&jac.b, &b) });
                eprintln!("{name:>26} state {k} ({mode}): A {ea:.2e}, B {eb:.2e}");
                if ea > TOL || eb > TOL {
                    failures.push(format!("{name} state {k} ({mode}): A {ea:.2e}, B {eb:.2e}"));
                }
            }
        }
    }
    assert!(checked >= 18, "only {checked} states with smooth references");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The sensors' Jacobians `C = ∂s/∂x` and `D = ∂s/∂u` against `mjd_transitionFD`'s (same data,
/// same tolerance), on every model whose sensors phyz computes; models with sensors phyz does
/// not compute yet refuse them.
#[test]
fn exact_sensor_jacobians_match_mujocos_finite_differences() {
    use phyz::dual::sensor_jacobians_lanes;
    use phyz::model::SensorKind;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let (mut checked, mut failures) = (0, Vec::new());
    for name in entry_names(&root.join("tests/reference")) {
        let reference = root.join("tests/reference").join(&name);
        if !reference.join("transition_C.csv").exists() {
            continue;
        }
        let mut model = mjcf::load(model_file(&name)).expect("model");
        model.enabled.constraint = false;
        let state = state_from_row(&model, &read_rows(&reference.join("onestep_in.csv"), true)[0]);
        let ctrl = read_rows(&reference.join("onestep_ctrl.csv"), false).first().cloned().unwrap_or_default();
        let result = sensor_jacobians_lanes::<8>(&model, &state, &ctrl[..model.nu()]);
        if model.sensors().iter().any(|s| matches!(s.kind, SensorKind::Unsupported(_))) {
            assert!(result.is_err(), "{name}: sensors phyz does not compute must be refused");
            continue;
        }
        let (c, d) = result.expect("sensor jacobians");
        let n = 2 * model.nv() + model.na();
        let c_ref = matrix(read_rows(&reference.join("transition_C.csv"), false), n);
        let d_ref = matrix(read_rows(&reference.join("transition_D.csv"), false), model.nu());
        let error = |ours: &DMatrix<f64>, theirs: &DMatrix<f64>| {
            (ours - theirs).amax() / theirs.amax().max(ours.amax()).max(1e-12)
        };
        let (ec, ed) = (error(&c, &c_ref), error(&d, &d_ref));
        eprintln!("{name:>26}: C {ec:.2e}, D {ed:.2e}");
        checked += 1;
        if ec > TOL || ed > TOL {
            failures.push(format!("{name}: C {ec:.2e}, D {ed:.2e}"));
        }
    }
    assert!(checked >= 1, "no sensor Jacobians checked");
    assert!(failures.is_empty(), "{failures:#?}");
}
