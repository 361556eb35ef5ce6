//! The acceleration-stage sensors' derivatives through the constraint solve: forward-mode `C`
//! and `D` (the solve's tangents by the implicit function theorem) against central differences
//! of the sensor outputs, at the states with contacts of MuJoCo's run
//! (`tests/reference/constrained_sensors`). Their values against MuJoCo are in
//! constraint_agreement.rs.

mod common;

use std::path::PathBuf;

use common::{model_file, perturbed_input, read_rows, state_from_row};
use nalgebra::DMatrix;
use phyz::contact::SolverConfig;
use phyz::dual::sensor_jacobians_with;
use phyz::mjcf;
use phyz::sim::sensor_data_with;
use phyz::{Model, State};

/// Stated before measuring: central differences with step 1e-6 of outputs whose second
/// derivatives are O(10²) (forces of stiff contacts) err by about 1e-7 relative.
const FD_TOL: f64 = 1e-5;

fn central_differences(model: &Model<f64>, state: &State<f64>, ctrl: &[f64], eps: f64) -> DMatrix<f64> {
    let config = SolverConfig::mujoco_compat();
    let (nv, nu) = (model.nv(), model.nu());
    let mut jac = DMatrix::zeros(model.nsensordata(), 2 * nv + nu);
    for column in 0..2 * nv + nu {
        let read = |sign: f64| {
            let (s, u) = perturbed_input(model, state, ctrl, column, sign * eps);
            sensor_data_with(model, &s, &u, &config).expect("sensors")
        };
        jac.set_column(column, &((read(1.0) - read(-1.0)) / (2.0 * eps)));
    }
    jac
}

#[test]
fn sensor_jacobians_through_contact_equal_central_differences() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let data = root.join("tests/reference/constrained_sensors/acceleration_sensors");
    let model = mjcf::load(model_file("acceleration_sensors")).expect("loads");
    let states = read_rows(&data.join("states.csv"), true);
    let ctrls = read_rows(&data.join("ctrl.csv"), false);
    let config = SolverConfig::mujoco_compat();
    let nv = model.nv();
    for (row, u) in states.iter().zip(&ctrls).take(3) {
        let state = state_from_row(&model, row);
        let (c, d) = sensor_jacobians_with::<8>(&model, &state, u, &config).expect("jacobians");
        let exact =
            DMatrix::from_fn(
                c.nrows(),
                2 * nv + model.nu(),
                |i, j| if j < 2 * nv { c[(i, j)] } else { d[(i, j - 2 * nv)] },
            );
        let fd = central_differences(&model, &state, u, 1e-6);
        let scale = exact.amax().max(1.0);
        let error = (&exact - &fd).amax() / scale;
        println!("worst |exact - central| / {scale:.1} = {error:.2e}");
        assert!(error < FD_TOL, "C, D against central differences: {error:.2e}");
        // The touch sensors read contact forces, so their rows are not zero.
        let touch_rows = model.nsensordata() - 5..model.nsensordata();
        assert!(touch_rows.clone().any(|r| exact.row(r).amax() > 0.0), "touch derivatives all zero");
    }
}
