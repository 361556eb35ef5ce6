//! Sensor outputs (MuJoCo's `sensordata`): what the model's sensors read at a state, as
//! `mj_step` computes them at the state a step starts from.

use nalgebra::{DVector, Vector3};

use super::check_input;
use super::data::Data;
use super::forward;
use super::loads::{Loads, subtree_centre};
use crate::Scalar;
use crate::contact::SolverConfig;
use crate::dynamics::actuation::{activation_rates, actuator_force};
use crate::dynamics::kinematics::{Kinematics, link_velocities};
use crate::error::StepError;
use crate::math::{Force, Motion, Pose, Quat};
use crate::model::{Frame, Model, SensorKind, State};

/// The outputs of every sensor at `state` under `ctrl`, in the model's sensor order
/// ([`Model::nsensordata`] numbers), the acceleration-stage ones (touch, accelerometer, force,
/// torque) from a cold-started constraint solve under the default preset with the bare mass
/// matrix (MuJoCo's `mj_forward`; a step's Euler solve folds in the implicit damping).
/// A quaternion output is a unit quaternion; its sign may differ from MuJoCo's, which follows
/// the product of the chain's quaternions.
pub fn sensor_data<S: Scalar>(model: &Model<S>, state: &State<S>, ctrl: &[S]) -> Result<DVector<S>, StepError> {
    sensor_data_with(model, state, ctrl, &SolverConfig::default())
}

/// [`sensor_data`] with the constraint solve of the acceleration-stage sensors under `config`
/// (cold-started; `SolverConfig::mujoco_compat()` for MuJoCo's forces). Their derivatives come
/// through the solve by the implicit function theorem, as a step's.
pub fn sensor_data_with<S: Scalar>(
    model: &Model<S>,
    state: &State<S>,
    ctrl: &[S],
    config: &SolverConfig,
) -> Result<DVector<S>, StepError> {
    check_input(model, state, ctrl)?;
    if let Some(SensorKind::Unsupported(index)) =
        model.sensors().iter().map(|x| x.kind).find(|k| matches!(k, SensorKind::Unsupported(_)))
    {
        let what = model.unsupported_sensor(index).unwrap_or("a sensor").to_string();
        return Err(StepError::Unsupported { what });
    }
    let mut kin = Kinematics::default();
    kin.set_mocap(model, &state.mocap_pos, &state.mocap_quat);
    kin.update(model, &state.qpos);
    let mut rates = DVector::zeros(model.na());
    activation_rates(model, &state.act, ctrl, &mut rates);
    let velocities = link_velocities(model, &kin, &state.qvel);
    let loads = match model.sensors().iter().any(|s| s.kind.reads_acceleration()) {
        true => Some(forward_loads(model, state, ctrl, config)?),
        false => None,
    };
    let reading = Reading { model, kin: &kin, velocities, rates, state, ctrl, loads: loads.as_ref() };
    let mut out = DVector::zeros(model.nsensordata());
    let mut at = 0;
    for sensor in model.sensors() {
        let dim = sensor.kind.dim();
        let values = &mut out.as_mut_slice()[at..at + dim];
        reading.read(&sensor.kind, values);
        if sensor.kind.clamped() {
            let c = sensor.cutoff;
            let on = c.greater(S::zero());
            values.iter_mut().for_each(|x| *x = S::select(on, x.clamp(-c, c), *x));
        }
        at += dim;
    }
    Ok(out)
}

/// What the sensors read from: the state, its kinematics and link velocities.
struct Reading<'a, S: Scalar> {
    model: &'a Model<S>,
    kin: &'a Kinematics<S>,
    velocities: Vec<Motion<S>>,
    /// The activations' rates, which an `actearly` actuator's force reads.
    rates: DVector<S>,
    state: &'a State<S>,
    ctrl: &'a [S],
    /// The bodies' loads at the state, where an acceleration-stage sensor reads them.
    loads: Option<&'a Loads<S>>,
}

/// The loads of every body at `state` under `ctrl`: MuJoCo's `mj_forward` acceleration, its
/// constraint solve under `config` included.
fn forward_loads<S: Scalar>(
    model: &Model<S>,
    state: &State<S>,
    ctrl: &[S],
    config: &SolverConfig,
) -> Result<Loads<S>, StepError> {
    let mut data = Data::default();
    data.set_record_wrenches(true);
    forward(model, state, ctrl, config, &mut data)?;
    let motion = (&state.qvel, data.qacc());
    Ok(Loads::new(model, data.kinematics(), motion, data.gather(), &data.impulses(), model.timestep))
}

impl<S: Scalar> Reading<'_, S> {
    fn read(&self, kind: &SensorKind, out: &mut [S]) {
        let (model, state) = (self.model, self.state);
        let put = |out: &mut [S], v: &Vector3<S>| out.copy_from_slice(v.as_slice());
        match *kind {
            SensorKind::JointPos(j) => out[0] = state.qpos[model.joints()[j].qpos_adr()],
            SensorKind::JointVel(j) => out[0] = state.qvel[model.joints()[j].dof_adr()],
            SensorKind::BallQuat(j) => {
                let a = model.joints()[j].qpos_adr();
                let q = Quat::new(state.qpos[a], state.qpos[a + 1], state.qpos[a + 2], state.qpos[a + 3]).normalize();
                out.copy_from_slice(&[q.w, q.x, q.y, q.z]);
            }
            SensorKind::TendonPos(t) => out[0] = self.kin.tendons.length[t],
            SensorKind::TendonVel(t) => out[0] = self.kin.tendons.velocity(model, t, &state.qvel),
            SensorKind::ActuatorPos(a) | SensorKind::ActuatorVel(a) | SensorKind::ActuatorFrc(a) => {
                out[0] = self.actuator(kind, a);
            }
            SensorKind::FramePos { of, relative_to } => {
                let (pose, reference) = (self.frame(of).0, relative_to.map(|r| self.frame(r).0));
                put(out, &reference.map_or(pose.pos, |r| r.rot.transpose() * (pose.pos - r.pos)));
            }
            SensorKind::FrameAxis { of, relative_to, axis } => {
                let column = self.frame(of).0.rot.column(axis).into_owned();
                put(out, &relative_to.map_or(column, |r| self.frame(r).0.rot.transpose() * column));
            }
            SensorKind::FrameQuat { of, relative_to } => {
                let quat = self.frame(of).1;
                let q = relative_to.map_or(quat, |r| self.frame(r).1.conjugate() * quat);
                out.copy_from_slice(&[q.w, q.x, q.y, q.z]);
            }
            SensorKind::FrameLinVel { of, relative_to } => put(out, &self.frame_velocity(of, relative_to).1),
            SensorKind::FrameAngVel { of, relative_to } => put(out, &self.frame_velocity(of, relative_to).0),
            SensorKind::SubtreeCom(b) => put(out, &self.subtree(b).0),
            SensorKind::SubtreeLinVel(b) => put(out, &self.subtree(b).1),
            SensorKind::SubtreeAngMom(b) => put(out, &self.angular_momentum(b)),
            // Refused before any sensor is read.
            SensorKind::Unsupported(_) => {}
            SensorKind::Touch { body, site }
            | SensorKind::Accelerometer { body, site }
            | SensorKind::Force { body, site }
            | SensorKind::Torque { body, site } => self.acceleration_stage(kind, body, site, out),
            SensorKind::Gyro { body, site } | SensorKind::Velocimeter { body, site } => {
                let v = self.model.tree().body_link[body].map_or_else(Motion::zero, |l| self.velocities[l]);
                let local = &model.bodies()[body].sites[site];
                let to_site = local.quat.to_rotation_matrix().transpose();
                let value = match kind {
                    SensorKind::Gyro { .. } => to_site * v.ang,
                    _ => to_site * (v.lin + v.ang.cross(&local.pos)),
                };
                put(out, &value);
            }
        }
    }

    /// A touch, accelerometer, force or torque sensor on site `site` of `body`, from the loads.
    fn acceleration_stage(&self, kind: &SensorKind, body: usize, site: usize, out: &mut [S]) {
        let (model, Some(loads)) = (self.model, self.loads) else { return };
        let local = &model.bodies()[body].sites[site];
        let frame = Pose::from_quat(&local.quat, local.pos);
        match kind {
            SensorKind::Touch { .. } => {
                out[0] = loads.touch(body, &self.kin.body_pose(model, body).compose(&frame), &local.zone);
            }
            SensorKind::Accelerometer { .. } => {
                let a = frame.rot.transpose() * loads.point_acceleration(model, body, &local.pos);
                out.copy_from_slice(a.as_slice());
            }
            _ => {
                let wrench = frame.force_to_child(&self.interaction(loads, body));
                let part = if matches!(kind, SensorKind::Force { .. }) { wrench.lin } else { wrench.ang };
                out.copy_from_slice(part.as_slice());
            }
        }
    }

    /// The wrench `body` gets from its parent ([`Loads::interaction`]), in its frame; for the
    /// world, what it gives its trees: MuJoCo's sum of the trees' wrenches, each taken about its
    /// subtree's centre of mass, read as if about the whole model's.
    fn interaction(&self, loads: &Loads<S>, body: usize) -> Force<S> {
        let model = self.model;
        if body != 0 {
            return loads.interaction(model, self.kin, body);
        }
        let (mut force, mut torque) = (Vector3::zeros(), Vector3::zeros());
        for (root, wrench) in loads.tree_wrenches(model, self.kin) {
            force += wrench.lin;
            torque += wrench.ang - self.subtree(root).0.cross(&wrench.lin);
        }
        Force::new(torque + self.subtree(0).0.cross(&force), force)
    }

    /// An actuator's length, velocity or force (as MuJoCo's actuator sensors read them).
    fn actuator(&self, kind: &SensorKind, a: usize) -> S {
        let (model, state) = (self.model, self.state);
        let mut row = DVector::zeros(0);
        let terms = actuator_force(model, (self.kin, &mut row), a, state.point(), (self.ctrl, &self.rates));
        match kind {
            SensorKind::ActuatorPos(_) => terms.length,
            SensorKind::ActuatorVel(_) => terms.velocity,
            _ if model.enabled.actuation => terms.force,
            _ => S::zero(),
        }
    }

    /// A frame's world pose and its orientation as a quaternion (the body's times the frame's
    /// own in the body).
    fn frame(&self, frame: Frame) -> (Pose<S>, Quat<S>) {
        let model = self.model;
        let (body, local) = match frame {
            Frame::Body(b) => (b, Pose::identity()),
            Frame::Inertial(b) => (b, Pose::from_quat(&model.bodies()[b].inertia_axes, model.bodies()[b].com)),
            Frame::Site { body, site } => {
                let site = &model.bodies()[body].sites[site];
                (body, Pose::from_quat(&site.quat, site.pos))
            }
            Frame::Geom(g) => {
                let (body, index) = model.geom_owner(g).unwrap_or((0, 0));
                let geom = &model.bodies()[body].geoms[index];
                (body, Pose::from_quat(&geom.quat, geom.pos))
            }
        };
        let world = self.kin.body_pose(model, body).compose(&local);
        (world, Quat::from_rotation_matrix(&world.rot))
    }

    /// A frame's world pose, and its angular and linear velocity (at its origin) in the world.
    fn moving_frame(&self, frame: Frame) -> (Pose<S>, Vector3<S>, Vector3<S>) {
        let model = self.model;
        let (world, _) = self.frame(frame);
        let body = match frame {
            Frame::Body(b) | Frame::Inertial(b) | Frame::Site { body: b, .. } => b,
            Frame::Geom(g) => model.geom_owner(g).map_or(0, |(b, _)| b),
        };
        let v = model.tree().body_link[body].map_or_else(Motion::zero, |l| self.velocities[l]);
        let pose = self.kin.body_pose(model, body);
        let offset = pose.rot.transpose() * (world.pos - pose.pos);
        (world, pose.rot * v.ang, pose.rot * (v.lin + v.ang.cross(&offset)))
    }

    /// A frame's angular and linear velocity in the world, or relative to `reference` (the
    /// linear one corrected for the reference's rotation) and in its axes, as MuJoCo's frame
    /// velocity sensors read them.
    fn frame_velocity(&self, of: Frame, reference: Option<Frame>) -> (Vector3<S>, Vector3<S>) {
        let (pose, omega, v) = self.moving_frame(of);
        let Some(reference) = reference else { return (omega, v) };
        let (ref_pose, ref_omega, ref_v) = self.moving_frame(reference);
        let linear = v - ref_v + (pose.pos - ref_pose.pos).cross(&ref_omega);
        let to_reference = ref_pose.rot.transpose();
        (to_reference * (omega - ref_omega), to_reference * linear)
    }

    /// The angular momentum of `body`'s subtree about its centre of mass, world frame.
    fn angular_momentum(&self, body: usize) -> Vector3<S> {
        let model = self.model;
        let centre = self.subtree(body).0;
        let mut momentum = Vector3::zeros();
        for (b, part) in model.bodies().iter().enumerate().filter(|(b, _)| model.in_subtree(*b, body)) {
            let pose = self.kin.body_pose(model, b);
            let v = model.tree().body_link[b].map_or_else(Motion::zero, |l| self.velocities[l]);
            let axes = pose.rot * part.inertia_axes.to_rotation_matrix();
            let spin = axes * nalgebra::Matrix3::from_diagonal(&part.inertia) * axes.transpose() * (pose.rot * v.ang);
            let (x, velocity) = (pose.transform_point(&part.com), pose.rot * (v.lin + v.ang.cross(&part.com)));
            momentum += spin + (x - centre).cross(&velocity) * part.mass;
        }
        momentum
    }

    /// The centre of mass of `body`'s subtree and its velocity, world frame (the body's own
    /// centre, not moving, when the subtree has no mass: as MuJoCo's momentum over its floored
    /// mass).
    fn subtree(&self, body: usize) -> (Vector3<S>, Vector3<S>) {
        let model = self.model;
        let (mut mass, mut momentum) = (S::zero(), Vector3::zeros());
        for (b, part) in model.bodies().iter().enumerate().filter(|(b, _)| model.in_subtree(*b, body)) {
            let (pose, v) = (self.kin.body_pose(model, b), model.tree().body_link[b].map(|l| self.velocities[l]));
            let v = v.unwrap_or_else(Motion::zero);
            mass += part.mass;
            momentum += pose.rot * (v.lin + v.ang.cross(&part.com)) * part.mass;
        }
        let heavy = mass.greater(S::from_f64(1e-15));
        let velocity = (momentum / S::select(heavy, mass, S::one())).map(|v| S::select(heavy, v, S::zero()));
        (subtree_centre(model, self.kin, body), velocity)
    }
}
