//! The sweeps as a burn operation: on the CubeCL backends (wgpu, CUDA) the kernel of
//! [`crate::kernel`], lazily under operation fusion; on the Flex CPU backend the CPU code the
//! kernel is held to; under autodiff a registered node whose backward is the adjoint of each
//! block's fixed point (`phyz_core::contact::pgs::Block::pull_back`), never an unrolled sweep.

use burn::backend::autodiff::Autodiff;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, Flex, TensorMetadata, backend_extension, read_sync};
use burn::tensor::{Shape, Tensor, TensorData};
use burn_cubecl::CubeBackend;
use nalgebra::Vector3;

use crate::kernel;
use crate::layout::{BLOCK, FAILED, OUT, unpack, well_formed};

/// The sweeps' schedule: `sweeps` in all, the first `warmup` on the normal impulses only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub warmup: u32,
    pub sweeps: u32,
}

/// The output's shape: one row of [`OUT`] per block.
fn out_shape(blocks: &Shape) -> Shape {
    Shape::new([blocks[0], OUT])
}

/// The GPU pass's sweeps over constraint blocks `[N, BLOCK]` (see [`crate::layout`]), giving
/// `[N, OUT]`.
#[backend_extension(Flex, Cube, Fusion, Autodiff)]
pub trait SweepOps: Backend {
    /// The CPU code the kernel transcribes, block by block (the Flex backend's implementation).
    #[fusion(dtype = blocks, shape = out_shape(blocks))]
    fn sweep_blocks(blocks: FloatTensor<Self>, schedule: Schedule) -> FloatTensor<Self> {
        let (device, dtype) = (blocks.device(), blocks.dtype());
        let n = blocks.shape()[0];
        let rows = host_rows::<Self>(blocks);
        let mut out = Vec::with_capacity(n * OUT);
        for row in rows.chunks(BLOCK) {
            let (block, warm) = unpack(row);
            let swept = match block {
                _ if row[10] == 0.0 => Ok((Vector3::zeros(), 0.0)),
                Some(block) if well_formed(row) => {
                    block.sweep(&warm, schedule.warmup as usize, schedule.sweeps as usize).map_err(|_| ())
                }
                _ => Err(()),
            };
            match swept {
                Ok((f, change)) => out.extend([f[0], f[1], f[2], 0.0, change]),
                Err(()) => out.extend([0.0, 0.0, 0.0, FAILED, 0.0]),
            }
        }
        Self::float_from_data(TensorData::new(out, [n, OUT]).convert_dtype(dtype), &device)
    }
}

impl SweepOps for Flex {}

impl SweepOps for CubeBackend {
    fn sweep_blocks(blocks: FloatTensor<Self>, schedule: Schedule) -> FloatTensor<Self> {
        kernel::launch(blocks, schedule.warmup, schedule.sweeps)
    }
}

/// A tensor's numbers on the host, in `f64`.
fn host_rows<B: Backend>(tensor: FloatTensor<B>) -> Vec<f64> {
    let data = read_sync(B::float_into_data(tensor)).expect("a tensor the backend just made is readable");
    data.convert::<f64>().try_to_vec::<f64>().expect("converted to f64")
}

/// The backward's state: the blocks and what the sweeps made of them. (The status and the
/// residual columns carry no derivative.)
#[derive(Debug, Clone)]
struct Swept<B: Backend> {
    blocks: FloatTensor<B>,
    out: FloatTensor<B>,
}

#[derive(Debug)]
struct SweepBackward;

impl<B: Backend> Backward<B, 1> for SweepBackward {
    type State = Swept<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [parent] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let Some(node) = parent else { return };
        let (device, dtype) = (grad.device(), grad.dtype());
        let n = grad.shape()[0];
        let epsilon = crate::device::epsilon(dtype);
        let (bar, blocks, out) =
            (host_rows::<B>(grad), host_rows::<B>(ops.state.blocks), host_rows::<B>(ops.state.out));
        let mut pulled = vec![0.0; n * BLOCK];
        for i in 0..n {
            let (Some(block), _) = unpack(&blocks[i * BLOCK..(i + 1) * BLOCK]) else { continue };
            let o = &out[i * OUT..(i + 1) * OUT];
            // burn's backward has no error channel: a failed block, whose status the forward
            // reported, has no derivative to give.
            assert!(o[3] != FAILED, "block {i} failed in the forward sweeps: it has no derivative");
            let f = Vector3::new(o[0], o[1], o[2]);
            let b = Vector3::new(bar[i * OUT], bar[i * OUT + 1], bar[i * OUT + 2]);
            let c = block
                .pull_back(&f, &b, epsilon)
                .unwrap_or_else(|e| panic!("block {i}: the sweeps' fixed point has no derivative: {e}"));
            // The matrix travels as its upper triangle: an off-diagonal number stands for both.
            let m = &c.matrix;
            let row = [
                m[(0, 0)],
                m[(0, 1)] + m[(1, 0)],
                m[(0, 2)] + m[(2, 0)],
                m[(1, 1)],
                m[(1, 2)] + m[(2, 1)],
                m[(2, 2)],
                c.velocity[0],
                c.velocity[1],
                c.velocity[2],
                c.mu,
            ];
            pulled[i * BLOCK..i * BLOCK + row.len()].copy_from_slice(&row);
        }
        let data = TensorData::new(pulled, [n, BLOCK]).convert_dtype(dtype);
        grads.register::<B>(node.id, B::float_from_data(data, &device));
    }
}

impl<B: SweepOps, C: CheckpointStrategy> SweepOps for Autodiff<B, C> {
    fn sweep_blocks(blocks: FloatTensor<Self>, schedule: Schedule) -> FloatTensor<Self> {
        let (blocks, node) = blocks.into_parts();
        match SweepBackward.prepare::<C>([node]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::sweep_blocks(blocks.clone(), schedule);
                prep.finish(Swept { blocks, out: out.clone() }, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::sweep_blocks(blocks, schedule)),
        }
    }
}

/// [`SweepOps::sweep_blocks`] on a tensor of any device.
pub fn sweep_blocks(blocks: Tensor<2>, schedule: Schedule) -> Tensor<2> {
    Tensor::from_dispatch(Dispatch::sweep_blocks(blocks.into_dispatch(), schedule))
}
