//! The host route: each lane stepped in `f64` on the host (rayon over the lanes), the batch one
//! burn operation whose backward is phyz's vector-Jacobian product ([`crate::op`]).

use std::sync::Arc;

use burn::tensor::{DType, Device, Tensor};

use super::Route;
use crate::BurnError;
use crate::batch::{LaneParams, Shared, Taken, step_batch};
use crate::host::{read, write};
use crate::op::{StepRecord, physics_step};
use crate::state::{BatchState, Warm, lane_states};

/// Steps on the host, in `f64`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Host;

impl Route for Host {
    fn dtype(&self, _device: &Device) -> DType {
        DType::F64
    }

    /// One cache per lane: each lane steps on its own.
    fn cold(&self, shared: &Shared, batch: usize) -> Warm {
        Warm::Lanes(Arc::new(vec![shared.contact.clone(); batch]))
    }

    fn step(
        &self,
        shared: &Arc<Shared>,
        state: &BatchState,
        ctrl: &Tensor<2>,
        params: Option<&Tensor<2>>,
    ) -> Result<BatchState, BurnError> {
        let batch = state.batch();
        let Warm::Lanes(lanes) = &state.warm else {
            return Err(BurnError::WarmStarts);
        };
        // The tensors are public: a batch swapped in must match its warm starts.
        if lanes.len() != batch {
            return Err(BurnError::Batch { expected: lanes.len(), got: batch });
        }
        let states = lane_states(shared, state, DType::F64)?;
        let controls = read(ctrl, "ctrl", batch, shared.nu())?;
        let p = shared.params.len();
        let (lane_params, params) = match params {
            None => (LaneParams::Model, write(Vec::new(), 1, 0, &state.qpos.device())),
            Some(values) if values.dims()[0] == 1 => {
                (LaneParams::Shared(read(values, "params", 1, p)?), values.clone())
            }
            Some(values) => (LaneParams::PerLane(read(values, "params", batch, p)?), values.clone()),
        };
        let packed = if shared.na() > 0 {
            Tensor::cat(vec![state.qpos.clone(), state.qvel.clone(), state.act.clone()], 1)
        } else {
            Tensor::cat(vec![state.qpos.clone(), state.qvel.clone()], 1)
        };
        let tracked = packed.is_tracked() || ctrl.is_tracked() || params.is_tracked();
        let steps = step_batch(shared, &states, &controls, &lane_params, lanes, tracked)?;
        let mut next = Vec::with_capacity(batch * shared.width());
        for s in &steps {
            next.extend(s.next.qpos.iter().chain(&s.next.qvel).chain(&s.next.act));
        }
        let (mut contact, mut info, mut starts) = (Vec::with_capacity(batch), Vec::with_capacity(batch), Vec::new());
        let mut bodies = Vec::new();
        for s in steps {
            contact.push(s.contact);
            info.push(s.info);
            starts.extend(s.start);
            bodies.extend(s.bodies);
        }
        let taken = Taken { shared: shared.clone(), batch, next, starts, params: lane_params };
        let out = physics_step(packed, ctrl.clone(), params, StepRecord(Arc::new(taken)));
        let (nq, nv, na) = (shared.nq(), shared.nv(), shared.na());
        Ok(BatchState {
            qpos: out.clone().narrow(1, 0, nq),
            qvel: out.clone().narrow(1, nq, nv),
            act: if na > 0 { out.narrow(1, nq + nv, na) } else { state.act.clone() },
            time: state.time + shared.model.timestep,
            warm: Warm::Lanes(Arc::new(contact)),
            info: Arc::new(info),
            bodies: Arc::new(bodies),
        })
    }
}
