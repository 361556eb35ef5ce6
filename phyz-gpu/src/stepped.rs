//! phyz-burn's [`Simulation`] on the stages: states on a CubeCL device step there whole, every
//! stage a kernel over all lanes, the step one burn operation whose backward is the stages'
//! adjoint ([`Stages::step_backward`]), registered as its backward node under burn's autodiff.
//! The lanes' tensors move in and out of the worlds' layout on the device. A step reads the
//! device once: its lanes' statuses and what their solves came to, to report a failed lane as
//! an error and to learn how many Newton iterations the next steps launch. A step with a solve
//! cut short of them is taken again, its solves checked as they go (`stages::speculation`).
//! Its backward reads its lanes' statuses once too, and is taken again, checked, after a cut.

use std::sync::{Arc, Mutex, PoisonError};

use burn::backend::autodiff::Autodiff;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, TensorMetadata, backend_extension};
use burn::tensor::{DType, Device, Shape, Tensor};
use burn_cubecl::CubeBackend;
use phyz_burn::{DeviceStep, Simulation};
use phyz_core::Model;
use phyz_core::contact::SolverConfig;

use crate::GpuError;
use crate::stages::{Iterations, STEPPED_EXTRA, Stages, Worlds};

/// A model's stages on one device, as a [`DeviceStep`] of phyz-burn's simulations. Cheap to
/// clone (shared).
#[derive(Clone, Debug)]
pub struct StagesStep {
    shared: Arc<Shared>,
    /// How the operation this goes into launches its solves' iterations.
    iterations: Iterations,
}

#[derive(Debug)]
struct Shared {
    /// The model the stages were packed from: the one simulation it steps.
    model: Model<f64>,
    stages: Stages,
    device: Device,
    /// The worlds of the last batch, kept for the next of the same size (one launch at a time
    /// uses them).
    worlds: Mutex<Option<Worlds>>,
}

/// A simulation of `model` under `SolverConfig::mujoco_compat`, whose batches on `device` (a
/// CubeCL device) step on its stages ([`StagesStep`]), and on the host for other devices.
/// Refused where the stages cannot step the model.
pub fn stages_simulation(model: Model<f64>, device: &Device) -> Result<Simulation, GpuError> {
    let step = StagesStep::new(&model, device)?;
    Simulation::with_config(model, SolverConfig::mujoco_compat())
        .with_device_step(Arc::new(step))
        .map_err(|e| GpuError::Model(e.to_string()))
}

impl StagesStep {
    /// `model`'s stages on `device`; refused where the device step cannot run the model.
    pub fn new(model: &Model<f64>, device: &Device) -> Result<StagesStep, GpuError> {
        let stages = Stages::new(model, device)?;
        stages.step_refusal()?;
        let device = device.clone().inner();
        let iterations = stages.iterations();
        let shared = Arc::new(Shared { model: model.clone(), stages, device, worlds: Mutex::new(None) });
        Ok(StagesStep { shared, iterations })
    }

    /// The stages' steps ([`Stages::launch_iterations`], [`Stages::steps_retaken`]).
    pub fn stages(&self) -> &Stages {
        &self.shared.stages
    }

    /// The same stages, their solves' iterations launched as `iterations` says.
    fn launching(&self, iterations: Iterations) -> StagesStep {
        StagesStep { shared: self.shared.clone(), iterations }
    }

    /// The lanes' count, where `qpos`, `qvel` and `ctrl` are a batch of the stages' model in
    /// their float type on their device (the kernels index them unchecked), or why not.
    fn batch_of(&self, qpos: &Tensor<2>, qvel: &Tensor<2>, ctrl: &Tensor<2>) -> Result<usize, String> {
        let batch = qpos.dims()[0];
        let widths = self.shared.stages.lane_widths();
        for ((what, tensor), width) in [("qpos", qpos), ("qvel", qvel), ("ctrl", ctrl)].into_iter().zip(widths) {
            if tensor.dims() != [batch, width] {
                return Err(format!("{what} has shape {:?}, the stages need [{batch}, {width}]", tensor.dims()));
            }
            if tensor.dtype() != self.shared.stages.dtype() || !self.serves(&tensor.device()) {
                return Err(format!("{what} is not in the stages' float type on their device"));
            }
        }
        Ok(batch)
    }

    /// `work` on the worlds for a batch of `count` (the last ones where they have that size),
    /// which no other launch uses meanwhile.
    fn with_worlds<T>(&self, count: usize, work: impl FnOnce(&Stages, &Worlds) -> T) -> Result<T, GpuError> {
        let mut kept = self.shared.worlds.lock().unwrap_or_else(PoisonError::into_inner);
        let worlds = match kept.take() {
            Some(worlds) if worlds.count() == count => worlds,
            _ => self.shared.stages.upload(count, &[])?,
        };
        let done = work(&self.shared.stages, &worlds);
        *kept = Some(worlds);
        Ok(done)
    }
}

impl DeviceStep for StagesStep {
    fn serves(&self, device: &Device) -> bool {
        device.clone().inner() == self.shared.device
    }

    fn dtype(&self, _device: &Device) -> DType {
        self.shared.stages.dtype()
    }

    fn accepts(&self, model: &Model<f64>, config: &SolverConfig) -> Result<(), String> {
        if *model != self.shared.model {
            return Err("the device stages were made for another model".into());
        }
        if *config != SolverConfig::mujoco_compat() {
            return Err("the device stages solve under SolverConfig::mujoco_compat only".into());
        }
        Ok(())
    }

    fn step(&self, qpos: Tensor<2>, qvel: Tensor<2>, ctrl: Tensor<2>) -> Result<(Tensor<2>, Tensor<2>), String> {
        let batch = self.batch_of(&qpos, &qvel, &ctrl)?;
        // The backward takes whatever the step runs (refused when the stages were made): a
        // tracked lane may still have no derivative, which its row of the step says.
        let tracked = qpos.is_tracked() || qvel.is_tracked() || ctrl.is_tracked();
        // The worlds made here, so that a batch too large for them is an error, not a panic
        // inside the operation.
        self.with_worlds(batch, |_, _| ()).map_err(|e| e.to_string())?;
        let (nq, nv) = (qpos.dims()[1], qvel.dims()[1]);
        let stepped = |iterations| {
            let step = self.launching(iterations);
            let [qpos, qvel, ctrl] = [&qpos, &qvel, &ctrl].map(|t| t.clone().into_dispatch());
            let out = Tensor::from_dispatch(Dispatch::stages_step(qpos, qvel, ctrl, step));
            // The step's read: each lane's status and what its solves came to.
            let statuses = out.clone().narrow(1, nq + nv, STEPPED_EXTRA).into_data().convert::<f64>();
            statuses.try_to_vec::<f64>().map(|rows| (out, rows)).map_err(|e| format!("{e:?}"))
        };
        let stages = &self.shared.stages;
        let (mut out, mut rows) = stepped(stages.iterations())?;
        if !stages.learn(rows.chunks(STEPPED_EXTRA).map(|row| &row[1..])) {
            // Taken again, checked: what its solves took is learned too.
            (out, rows) = stepped(Iterations::Checked)?;
            stages.learn(rows.chunks(STEPPED_EXTRA).map(|row| &row[1..]));
        }
        let refused = rows.chunks(STEPPED_EXTRA).enumerate().find_map(|(lane, row)| {
            self.shared.stages.lane_refusal(row, tracked).map(|why| format!("batch lane {lane}: {why}"))
        });
        if let Some(why) = refused {
            return Err(why);
        }
        Ok((out.clone().narrow(1, 0, nq), out.narrow(1, nq, nv)))
    }
}

/// The shape of a stepped batch: each lane's `qpos`, `qvel`, status and its solves' summary.
fn stepped_shape(qpos: &Shape, qvel: &Shape) -> Shape {
    Shape::new([qpos[0], qpos[1] + qvel[1] + STEPPED_EXTRA])
}

/// The shape of a pulled-back batch: each lane's cotangents of `qpos`, `qvel` and `ctrl`.
fn pulled_shape(qpos: &Shape, qvel: &Shape, ctrl: &Shape) -> Shape {
    Shape::new([qpos[0], qpos[1] + qvel[1] + ctrl[1]])
}

/// The stages' step of a batch as burn operations: on the CubeCL backends the kernels, lazily
/// under operation fusion; under autodiff a registered node whose backward is
/// [`StageOps::stages_step_backward`].
#[backend_extension(Cube, Fusion, Autodiff)]
pub trait StageOps: Backend {
    /// Each lane's next `qpos`, `qvel`, status and solve state (`[batch, nq + nv + STEPPED_EXTRA]`) from
    /// its `qpos`, `qvel` and `ctrl`.
    #[fusion(dtype = qpos, shape = stepped_shape(qpos, qvel))]
    fn stages_step(
        qpos: FloatTensor<Self>,
        qvel: FloatTensor<Self>,
        ctrl: FloatTensor<Self>,
        step: StagesStep,
    ) -> FloatTensor<Self>;

    /// The cotangents of each lane's `qpos`, `qvel` and `ctrl` (`[batch, nq + nv + nu]`) from
    /// those of its step's end (`bar_qpos`, `bar_qvel`), the step from `qpos`, `qvel`, `ctrl`
    /// having reached `next` ([`StageOps::stages_step`]'s rows).
    #[fusion(dtype = qpos, shape = pulled_shape(qpos, qvel, ctrl))]
    fn stages_step_backward(
        qpos: FloatTensor<Self>,
        qvel: FloatTensor<Self>,
        ctrl: FloatTensor<Self>,
        next: FloatTensor<Self>,
        bar_qpos: FloatTensor<Self>,
        bar_qvel: FloatTensor<Self>,
        step: StagesStep,
    ) -> FloatTensor<Self>;
}

impl StageOps for CubeBackend {
    fn stages_step(
        qpos: FloatTensor<Self>,
        qvel: FloatTensor<Self>,
        ctrl: FloatTensor<Self>,
        step: StagesStep,
    ) -> FloatTensor<Self> {
        let stepped = step.with_worlds(qpos.shape()[0], |stages, worlds| {
            stages.load_states(worlds, qpos, qvel, ctrl);
            stages.launch_step(worlds, step.iterations)?;
            Ok(stages.store_states(worlds))
        });
        stepped.and_then(|r| r).unwrap_or_else(|e| failed("step", e))
    }

    fn stages_step_backward(
        qpos: FloatTensor<Self>,
        qvel: FloatTensor<Self>,
        ctrl: FloatTensor<Self>,
        next: FloatTensor<Self>,
        bar_qpos: FloatTensor<Self>,
        bar_qvel: FloatTensor<Self>,
        step: StagesStep,
    ) -> FloatTensor<Self> {
        let pulled = step.with_worlds(qpos.shape()[0], |stages, worlds| {
            let backward = |iterations| {
                stages.load_states(worlds, qpos.clone(), qvel.clone(), ctrl.clone());
                stages.load_cotangents(worlds, bar_qpos.clone(), bar_qvel.clone(), next.clone());
                stages.launch_backward(worlds, iterations)
            };
            // Launched as the forward launched its solves, which the backward takes again (as
            // the steps now launch theirs where the forward was taken again, checked); a cut
            // here (the pool's contacts in another order, the sums rounded otherwise) takes the
            // backward again, checked.
            let launched = match step.iterations {
                Iterations::Checked => stages.iterations(),
                launched => launched,
            };
            backward(launched)?;
            let (mut failures, cut) = stages.outcomes(worlds)?;
            if cut {
                stages.retake();
                backward(Iterations::Checked)?;
                (failures, _) = stages.outcomes(worlds)?;
            }
            // burn's backward has no error channel: a lane that failed here (a cotangent that
            // is not finite, a contact with no derivative) is reported as the host route
            // reports its backward's failures.
            if let Some((lane, failure)) = failures.first() {
                panic!("phyz-gpu: the device step's backward failed at batch lane {lane}: {failure:?}");
            }
            Ok(stages.store_cotangents(worlds, qpos))
        });
        pulled.and_then(|r| r).unwrap_or_else(|e| failed("backward", e))
    }
}

/// What the step checked before building the operation (the model, the batch, its worlds)
/// cannot fail here but through the device; burn's operations have no error channel.
fn failed(what: &str, error: GpuError) -> ! {
    panic!("phyz-gpu: the device {what} failed: {error}")
}

/// What the backward node keeps: the step's start and end.
#[derive(Debug, Clone)]
struct Kept<B: Backend> {
    qpos: FloatTensor<B>,
    qvel: FloatTensor<B>,
    ctrl: FloatTensor<B>,
    next: FloatTensor<B>,
    step: StagesStep,
}

#[derive(Debug)]
struct StepBackward;

impl<B: StageOps> Backward<B, 3> for StepBackward {
    type State = Kept<B>;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [qpos_node, qvel_node, ctrl_node] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let Kept { qpos, qvel, ctrl, next, step } = ops.state;
        let (batch, nq, nv, nu) = (qpos.shape()[0], qpos.shape()[1], qvel.shape()[1], ctrl.shape()[1]);
        // The status columns of the forward's rows carry no derivative.
        let bar_qpos = B::float_slice(grad.clone(), &[(0..batch).into(), (0..nq).into()]);
        let bar_qvel = B::float_slice(grad, &[(0..batch).into(), (nq..nq + nv).into()]);
        let pulled = B::stages_step_backward(qpos, qvel, ctrl, next, bar_qpos, bar_qvel, step);
        let part =
            |from: usize, len: usize| B::float_slice(pulled.clone(), &[(0..batch).into(), (from..from + len).into()]);
        for (node, from, len) in [(qpos_node, 0, nq), (qvel_node, nq, nv), (ctrl_node, nq + nv, nu)] {
            if let Some(node) = node {
                grads.register::<B>(node.id, part(from, len));
            }
        }
    }
}

impl<B: StageOps, C: CheckpointStrategy> StageOps for Autodiff<B, C> {
    fn stages_step(
        qpos: FloatTensor<Self>,
        qvel: FloatTensor<Self>,
        ctrl: FloatTensor<Self>,
        step: StagesStep,
    ) -> FloatTensor<Self> {
        let ((qpos, qpos_node), (qvel, qvel_node), (ctrl, ctrl_node)) =
            (qpos.into_parts(), qvel.into_parts(), ctrl.into_parts());
        // The step is costly and its state is its inputs and output: compute-bound, never
        // recomputed by a checkpointing strategy.
        match StepBackward.prepare::<C>([qpos_node, qvel_node, ctrl_node]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let next = B::stages_step(qpos.clone(), qvel.clone(), ctrl.clone(), step.clone());
                prep.finish(Kept { qpos, qvel, ctrl, next: next.clone(), step }, next)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::stages_step(qpos, qvel, ctrl, step)),
        }
    }

    /// Not differentiated again: a gradient through the step's backward (its second
    /// derivatives) fails by name.
    fn stages_step_backward(
        qpos: FloatTensor<Self>,
        qvel: FloatTensor<Self>,
        ctrl: FloatTensor<Self>,
        next: FloatTensor<Self>,
        bar_qpos: FloatTensor<Self>,
        bar_qvel: FloatTensor<Self>,
        step: StagesStep,
    ) -> FloatTensor<Self> {
        let [(qpos, a), (qvel, b), (ctrl, c), (next, d), (bar_qpos, e), (bar_qvel, f)] =
            [qpos, qvel, ctrl, next, bar_qpos, bar_qvel].map(|t| t.into_parts());
        let pulled = B::stages_step_backward(qpos, qvel, ctrl, next, bar_qpos, bar_qvel, step);
        SecondOrder.prepare::<C>([a, b, c, d, e, f]).compute_bound().stateless(pulled)
    }
}

/// The node of the step's backward under autodiff: its own derivative is not computed.
#[derive(Debug)]
struct SecondOrder;

impl<B: Backend> Backward<B, 6> for SecondOrder {
    type State = ();

    fn backward(self, _: Ops<Self::State, 6>, _: &mut Gradients, _: &mut Checkpointer) {
        panic!("phyz-gpu: the device step's second derivatives are not computed")
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::TensorData;

    use super::*;

    /// A ball pressed into the floor: its solve takes more than one Newton iteration.
    const PRESSED: &str = r#"<mujoco><option integrator="RK4"/><worldbody><geom type="plane" size="1 1 0.1"/>
        <body pos="0 0 0.09"><freejoint/><geom type="sphere" size="0.1"/></body>
        </worldbody></mujoco>"#;

    /// The backward (RK4's, seven solves) with its solves' iterations launched pulls back what
    /// the checked backward does, to the bit; cut short (one Newton iteration launched where its
    /// solves take more) it is taken again, checked.
    #[test]
    fn a_backward_cut_short_is_taken_again() {
        let model = phyz_core::mjcf::parse(PRESSED, "pressed.xml").expect("loads");
        let device = crate::device::opengl();
        let step = StagesStep::new(&model, &device).expect("the stages take the ball");
        let rows = |values: Vec<f32>, cols: usize| {
            let tensor = Tensor::<2>::from_data(TensorData::new(values, [2, cols]), (&device, DType::F32));
            tensor.into_dispatch()
        };
        let (nq, nv) = (model.nq(), model.nv());
        let qpos: Vec<f32> = [[0.0, 0.0, 0.09, 1.0, 0.0, 0.0, 0.0], [0.01, 0.0, 0.085, 1.0, 0.0, 0.0, 0.0]].concat();
        let qvel = vec![0.1f32; 2 * nv];
        let next = Dispatch::stages_step(
            rows(qpos.clone(), nq),
            rows(qvel.clone(), nv),
            rows(vec![], 0),
            step.launching(Iterations::Checked),
        );
        let backward = |iterations| {
            let pulled = Dispatch::stages_step_backward(
                rows(qpos.clone(), nq),
                rows(qvel.clone(), nv),
                rows(vec![], 0),
                next.clone(),
                rows(vec![1.0; 2 * nq], nq),
                rows(vec![-0.5; 2 * nv], nv),
                step.launching(iterations),
            );
            Tensor::<2>::from_dispatch(pulled).into_data().convert::<f64>().try_to_vec::<f64>().expect("f64")
        };
        let checked = backward(Iterations::Checked);
        assert_eq!(backward(Iterations::Launched([20; 4])), checked);
        assert_eq!(step.stages().steps_retaken(), 0);
        let cut = backward(Iterations::Launched([1; 4]));
        assert_eq!(step.stages().steps_retaken(), 1, "the backward was cut and taken again");
        assert!(checked.iter().all(|x| x.is_finite()) && checked.iter().any(|&x| x != 0.0));
        assert_eq!(cut, checked);
    }
}
