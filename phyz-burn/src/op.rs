//! The step as one burn operation: its forward hands back the next states the host computed,
//! and under burn's autodiff its backward node is phyz's exact vector-Jacobian product
//! ([`crate::batch::Taken::pull`]), never an unrolled solver.
//!
//! The operation is a backend extension (`#[backend_extension]`): implemented for the `f64`
//! CPU backend (Flex) and for `Autodiff` over it, which registers the backward node.

use std::sync::Arc;

use burn::backend::autodiff::Autodiff;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, Flex, TensorData, TensorMetadata, backend_extension, read_sync};
use burn::tensor::Tensor;

use crate::batch::Taken;

/// A batch step the host has taken: what the operation outputs, and what its backward needs.
#[derive(Clone, Debug)]
pub struct StepRecord(pub(crate) Arc<Taken>);

/// The step operation over the packed state `x` (`[batch, nq + nv + na]`), the controls `u` and
/// the parameters `p` (`[batch or 1, P]`).
#[backend_extension(Flex, Autodiff)]
pub trait PhysicsOps: Backend {
    /// The next packed states, as the host computed them.
    fn physics_step(
        x: FloatTensor<Self>,
        u: FloatTensor<Self>,
        p: FloatTensor<Self>,
        record: StepRecord,
    ) -> FloatTensor<Self> {
        let device = x.device();
        drop((u, p));
        let taken = &record.0;
        Self::float_from_data(TensorData::new(taken.next.clone(), [taken.batch, taken.width()]), &device)
    }
}

impl PhysicsOps for Flex {}

/// The backward node: the next state's cotangent in, the cotangents of the state, the controls
/// and the parameters out.
#[derive(Debug)]
struct StepBackward;

impl<B: Backend> Backward<B, 3> for StepBackward {
    type State = StepRecord;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [x, u, p] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let device = grad.device();
        let data = read_sync(B::float_into_data(grad)).unwrap_or_else(unreadable);
        let bar: Vec<f64> =
            data.try_cast_as::<f64>().unwrap_or_else(unreadable).try_to_vec::<f64>().unwrap_or_else(unreadable);
        let taken = &ops.state.0;
        // The forward refused, as typed errors, what has no derivative (an unconverged solve, a
        // preset of fixed sweeps). What is left (a contact Hessian singular at the solution) can
        // only be reported here, and burn's backward has no error channel: it panics.
        let pulled = taken.pull(&bar).unwrap_or_else(|e| panic!("phyz-burn: the step's backward failed: {e}"));
        let tensor = |values: Vec<f64>, shape: [usize; 2]| B::float_from_data(TensorData::new(values, shape), &device);
        if let Some(node) = x {
            grads.register::<B>(node.id, tensor(pulled.state, [taken.batch, taken.width()]));
        }
        if let Some(node) = u {
            grads.register::<B>(node.id, tensor(pulled.ctrl, [taken.batch, taken.nu()]));
        }
        if let Some(node) = p {
            grads.register::<B>(node.id, tensor(pulled.params, taken.params_shape()));
        }
    }
}

/// A cotangent the backend cannot hand over: the backend failed, not the input.
fn unreadable<T>(error: impl std::fmt::Debug) -> T {
    panic!("phyz-burn: the step's cotangent could not be read: {error:?}")
}

impl<B: PhysicsOps, C: CheckpointStrategy> PhysicsOps for Autodiff<B, C> {
    fn physics_step(
        x: FloatTensor<Self>,
        u: FloatTensor<Self>,
        p: FloatTensor<Self>,
        record: StepRecord,
    ) -> FloatTensor<Self> {
        let ((x, xn), (u, un), (p, pn)) = (x.into_parts(), u.into_parts(), p.into_parts());
        // The step is costly and its record holds everything the backward reads: it is
        // compute-bound, never recomputed by a checkpointing strategy.
        match StepBackward.prepare::<C>([xn, un, pn]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::physics_step(x, u, p, record.clone());
                prep.finish(record, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::physics_step(x, u, p, record)),
        }
    }
}

/// Runs the operation on tensors of any device the extension serves.
pub(crate) fn physics_step(x: Tensor<2>, u: Tensor<2>, p: Tensor<2>, record: StepRecord) -> Tensor<2> {
    Tensor::from_dispatch(Dispatch::physics_step(x.into_dispatch(), u.into_dispatch(), p.into_dispatch(), record))
}
