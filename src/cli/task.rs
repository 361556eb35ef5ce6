//! The rollout task `gradcheck` and `bench --rollout-gradient` differentiate: sinusoidal
//! controls within each actuator's range and an objective that every state and control moves.

use nalgebra::DVector;
use phyz::dual::{Cost, Objective};
use phyz::{Model, State};

/// `steps` rows of controls: each actuator a sine wave about the middle of its range (a quarter
/// of the range in amplitude; ±0.5 without one), each with its own phase.
pub fn controls(model: &Model<f64>, steps: usize) -> Vec<Vec<f64>> {
    (0..steps)
        .map(|t| {
            model
                .actuators()
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    let wave = (0.05 * t as f64 + i as f64).sin();
                    match a.ctrl_range {
                        Some([lo, hi]) => 0.5 * (lo + hi) + 0.25 * (hi - lo) * wave,
                        None => 0.5 * wave,
                    }
                })
                .collect()
        })
        .collect()
}

/// `J = Σ ½|v_t|² + ½|u_t|² + ½|v_T|²`: every state and control matters, in any model.
pub struct KineticObjective {
    nv: usize,
    nu: usize,
}

impl KineticObjective {
    pub fn new(model: &Model<f64>) -> Self {
        KineticObjective { nv: model.nv(), nu: model.nu() }
    }
}

impl Objective for KineticObjective {
    fn running(&self, _t: usize, state: &State<f64>, ctrl: &[f64]) -> Cost {
        Cost {
            value: 0.5 * state.qvel.norm_squared() + 0.5 * ctrl.iter().map(|x| x * x).sum::<f64>(),
            dq: DVector::zeros(self.nv),
            dv: state.qvel.clone(),
            du: DVector::from_column_slice(ctrl),
        }
    }
    fn terminal(&self, state: &State<f64>) -> Cost {
        Cost { value: 0.5 * state.qvel.norm_squared(), dv: state.qvel.clone(), ..Cost::zeros(self.nv, self.nu) }
    }
}
