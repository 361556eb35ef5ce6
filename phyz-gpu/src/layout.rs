//! How constraint blocks travel to the kernel and back: one row of [`BLOCK`] numbers per
//! constraint in, one row of [`OUT`] numbers out.
//!
//! In: the block's matrix `A + R` as its upper triangle (`m00 m01 m02 m11 m12 m22`), the
//! velocity its rows reach without their own impulse, less their target (`r0 r1 r2`), the
//! friction coefficient, the [`kind`] code, and the warm start (`f0 f1 f2`). Out: the impulse
//! (`f0 f1 f2`), a status, 0 or [`FAILED`] (non-finite data, or a friction block not positive
//! definite: the impulse is then meaningless), and the last sweep's change of the block's
//! velocity (the sweeps' residual).
//! Rows past a constraint's dimension are zero.

use nalgebra::{Matrix3, Vector3};
use phyz_core::contact::ConstraintKind;
use phyz_core::contact::pgs::Block;

use crate::GpuError;

/// Numbers per block in.
pub const BLOCK: usize = 14;
/// Numbers per block out.
pub const OUT: usize = 5;
/// The status of a block whose friction matrix was not positive definite.
pub const FAILED: f64 = 1.0;

/// What the kernel does with a block, by code.
pub mod kind {
    /// A slot with no constraint in this environment: zero impulse.
    pub const ABSENT: u32 = 0;
    /// One row, its impulse at least zero (a frictionless contact, a limit, a pyramid edge).
    pub const UNILATERAL: u32 = 1;
    /// A contact with Coulomb friction: `[n, t1, t2]`.
    pub const CONTACT: u32 = 2;
    /// A friction loss: one row, its impulse within `±mu`.
    pub const FRICTION_LOSS: u32 = 3;
    /// An equality row: unbounded.
    pub const EQUALITY: u32 = 4;
}

/// A constraint kind's code; torsional and rolling contacts need a Newton preset.
pub fn code(kind: ConstraintKind) -> Result<u32, GpuError> {
    Ok(match kind {
        ConstraintKind::Contact => kind::CONTACT,
        ConstraintKind::Frictionless | ConstraintKind::Limit | ConstraintKind::PyramidEdge => kind::UNILATERAL,
        ConstraintKind::FrictionLoss => kind::FRICTION_LOSS,
        ConstraintKind::Equality => kind::EQUALITY,
        ConstraintKind::Torsional | ConstraintKind::Rolling => return Err(GpuError::Unsupported { kind }),
    })
}

/// The kind a code stands for (`None`: an absent slot). Unilateral rows all sweep as a limit does.
fn kind_of(code: f64) -> Option<ConstraintKind> {
    if code.fract() != 0.0 || code < 0.0 {
        return None;
    }
    match code as u32 {
        kind::CONTACT => Some(ConstraintKind::Contact),
        kind::UNILATERAL => Some(ConstraintKind::Limit),
        kind::FRICTION_LOSS => Some(ConstraintKind::FrictionLoss),
        kind::EQUALITY => Some(ConstraintKind::Equality),
        _ => None,
    }
}

/// Whether a present block's row can be swept: every number finite, a known kind, a
/// friction coefficient of at least zero. The kernel checks the same, and fails the others.
pub fn well_formed(row: &[f64]) -> bool {
    row.iter().all(|x| x.is_finite()) && kind_of(row[10]).is_some() && row[9] >= 0.0
}

/// One block's row (`warm`: its starting impulse).
pub fn pack(block: &Block, warm: &Vector3<f64>) -> Result<[f64; BLOCK], GpuError> {
    let m = &block.matrix;
    let r = &block.velocity;
    let code = code(block.kind)? as f64;
    Ok([
        m[(0, 0)],
        m[(0, 1)],
        m[(0, 2)],
        m[(1, 1)],
        m[(1, 2)],
        m[(2, 2)],
        r[0],
        r[1],
        r[2],
        block.mu,
        code,
        warm[0],
        warm[1],
        warm[2],
    ])
}

/// A row's block (`None`: an absent slot, or a kind code it does not know) and warm start.
pub fn unpack(row: &[f64]) -> (Option<Block>, Vector3<f64>) {
    let matrix = Matrix3::new(row[0], row[1], row[2], row[1], row[3], row[4], row[2], row[4], row[5]);
    let velocity = Vector3::new(row[6], row[7], row[8]);
    let block = kind_of(row[10]).map(|kind| Block { kind, matrix, velocity, mu: row[9] });
    (block, Vector3::new(row[11], row[12], row[13]))
}
