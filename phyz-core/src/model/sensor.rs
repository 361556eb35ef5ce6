//! Sensors: what a controller reads of the state (MJCF `<sensor>`), MuJoCo's definitions.

use crate::Scalar;

/// A frame a frame sensor reads, as MuJoCo's `objtype` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A body's frame (`xbody`).
    Body(usize),
    /// A body's inertial frame: centre of mass and principal axes (`body`).
    Inertial(usize),
    /// A geom's frame, by global geom index.
    Geom(usize),
    /// A site: the `site`-th of body `body`.
    Site { body: usize, site: usize },
}

/// What a sensor measures. Joints, tendons and actuators are by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SensorKind {
    /// A hinge or slide joint's position, or its velocity.
    JointPos(usize),
    JointVel(usize),
    /// A ball joint's quaternion (normalized).
    BallQuat(usize),
    TendonPos(usize),
    TendonVel(usize),
    /// An actuator's length and velocity (gear included), and its force (after clamping).
    ActuatorPos(usize),
    ActuatorVel(usize),
    ActuatorFrc(usize),
    /// A frame's position, orientation, or one of its axes (0, 1, 2: x, y, z), in the world or
    /// in the frame `relative_to`.
    FramePos {
        of: Frame,
        relative_to: Option<Frame>,
    },
    FrameQuat {
        of: Frame,
        relative_to: Option<Frame>,
    },
    FrameAxis {
        of: Frame,
        relative_to: Option<Frame>,
        axis: usize,
    },
    /// A frame's linear velocity (at its origin) or angular velocity, in the world, or relative
    /// to the frame `relative_to` and in its axes (MuJoCo's `framelinvel`, `frameangvel`).
    FrameLinVel {
        of: Frame,
        relative_to: Option<Frame>,
    },
    FrameAngVel {
        of: Frame,
        relative_to: Option<Frame>,
    },
    /// The centre of mass of a body's subtree, its linear velocity, and the subtree's angular
    /// momentum about that centre (world frame).
    SubtreeCom(usize),
    SubtreeLinVel(usize),
    SubtreeAngMom(usize),
    /// A site's angular velocity (gyro) or linear velocity (velocimeter), in the site's axes.
    Gyro {
        body: usize,
        site: usize,
    },
    Velocimeter {
        body: usize,
        site: usize,
    },
    /// The normal forces of the contacts of a site's body that push into the site's zone
    /// (touch), and a site's linear acceleration (accelerometer, with gravity's `−g`: at rest
    /// it reads `+g` up), in the site's axes.
    Touch {
        body: usize,
        site: usize,
    },
    Accelerometer {
        body: usize,
        site: usize,
    },
    /// The force and torque the site's body and its subtree get from the body's parent, at the
    /// site and in its axes (MuJoCo's `cfrc_int` there).
    Force {
        body: usize,
        site: usize,
    },
    Torque {
        body: usize,
        site: usize,
    },
    /// A sensor phyz does not compute yet: the model loads (sensors do not change the
    /// dynamics), and asking for the sensors' outputs is an error naming it
    /// ([`Model::unsupported_sensor`](super::Model::unsupported_sensor) says where it is).
    Unsupported(usize),
}

impl SensorKind {
    /// How many numbers the sensor outputs.
    pub fn dim(&self) -> usize {
        match self {
            SensorKind::JointPos(_)
            | SensorKind::JointVel(_)
            | SensorKind::TendonPos(_)
            | SensorKind::TendonVel(_)
            | SensorKind::ActuatorPos(_)
            | SensorKind::ActuatorVel(_)
            | SensorKind::ActuatorFrc(_)
            | SensorKind::Touch { .. } => 1,
            SensorKind::BallQuat(_) | SensorKind::FrameQuat { .. } => 4,
            SensorKind::FramePos { .. }
            | SensorKind::FrameAxis { .. }
            | SensorKind::FrameLinVel { .. }
            | SensorKind::FrameAngVel { .. }
            | SensorKind::SubtreeCom(_)
            | SensorKind::SubtreeLinVel(_)
            | SensorKind::SubtreeAngMom(_)
            | SensorKind::Gyro { .. }
            | SensorKind::Velocimeter { .. }
            | SensorKind::Accelerometer { .. }
            | SensorKind::Force { .. }
            | SensorKind::Torque { .. } => 3,
            SensorKind::Unsupported(_) => 0,
        }
    }

    /// Whether the sensor reads the acceleration and the constraint forces (MuJoCo's
    /// acceleration stage), which take a constraint solve at the state.
    pub fn reads_acceleration(&self) -> bool {
        matches!(
            self,
            SensorKind::Touch { .. }
                | SensorKind::Accelerometer { .. }
                | SensorKind::Force { .. }
                | SensorKind::Torque { .. }
        )
    }

    /// Whether MuJoCo's `cutoff` clamps the output (not for unit axes and quaternions).
    pub fn clamped(&self) -> bool {
        !matches!(self, SensorKind::BallQuat(_) | SensorKind::FrameQuat { .. } | SensorKind::FrameAxis { .. })
    }
}

/// A sensor: its output is clamped to `[-cutoff, cutoff]` when `cutoff` is positive (for the
/// kinds [`SensorKind::clamped`] says).
#[derive(Clone, Debug, PartialEq)]
pub struct Sensor<S> {
    pub name: String,
    pub kind: SensorKind,
    pub cutoff: S,
}

impl<S: Scalar> Sensor<S> {
    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Sensor<T> {
        Sensor { name: self.name.clone(), kind: self.kind, cutoff: f(self.cutoff) }
    }
}
