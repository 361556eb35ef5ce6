//! The engine itself on burn tensors (feature `traced`): [`Batched`], a
//! [`Scalar`](phyz_core::Scalar) whose value is one burn tensor `[batch]` (one number per environment), so that every operation of a step
//! is a burn operation, recorded by burn's autodiff. The contact solve stays phyz's: each
//! lane's problem is solved in `f64` on the host, and the solution gets its derivative by the
//! implicit function theorem, as burn operations on the residual (see [`Batched::implicit`]) —
//! unless the simulation is given a solve of all lanes at once
//! ([`TracedSimulation::with_batch_solver`]: phyz-gpu's kernel).
//!
//! This is the route a GPU backend builds on (the tensors may live on any device); on the CPU
//! its cost is one burn operation per scalar operation of the step, measured against the
//! step operation in `docs/burn.md`. Numbers the model fixes stay host constants
//! ([`Batched::Constant`]): arithmetic between them is folded on the host and costs no tensor
//! operation.

use std::cell::RefCell;
use std::ops::{Add, AddAssign, BitAnd, BitOr, Div, DivAssign, Mul, MulAssign, Neg, Not, Sub, SubAssign};
use std::sync::Arc;

use burn::backend::autodiff::Autodiff;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, Flex, TensorMetadata, backend_extension, read_sync};
use burn::tensor::{Bool, DType, Device, FloatDType, Tensor, TensorData};
use nalgebra::DVector;
use num_traits::{One, Zero};
use phyz_core::contact::SolverConfig;
use phyz_core::scalar::{Arithmetic, AutodiffHooks, BatchLanes, ImplicitRule, Mask, Tangents};
use phyz_core::sim::{BatchSolver, ContactState, StepInfo, Workspace, step_in};
use phyz_core::{Model, State};

use crate::BurnError;
use crate::host::{read_as, write_as};
use crate::state::BatchState;

/// One quantity of every environment in a batch: a tensor `[batch]` in the trace running on
/// this thread, or a constant shared by every lane (no tensor at all).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Batched {
    Constant(f64),
    Tensor(Slot),
}

/// A per-lane comparison: one answer for every lane, or a boolean tensor `[batch]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchedMask {
    Splat(bool),
    Tensor(Slot),
}

/// A tensor's place in the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot(u32);

/// The tensors a trace has made, with their values on the host once read.
struct Arena {
    device: Device,
    batch: usize,
    /// The float type of every tensor the trace makes.
    dtype: DType,
    floats: Vec<(Tensor<1>, Option<Vec<f64>>)>,
    masks: Vec<(Tensor<1, Bool>, Option<Vec<bool>>)>,
    /// Transfers from the device to the host so far: each waits for the device.
    reads: usize,
}

thread_local! {
    static ARENA: RefCell<Option<Arena>> = const { RefCell::new(None) };
}

/// This thread's trace: while it lives, [`Batched`] values are tensors on its device with its
/// batch size; when it ends they are gone (the tensors it handed out live on).
pub struct Trace {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Trace {
    /// Starts a trace of `batch` lanes on `device` in float type `dtype`; `None` if this thread
    /// is already tracing.
    pub fn start(device: &Device, batch: usize, dtype: DType) -> Option<Trace> {
        ARENA.with(|arena| {
            let mut arena = arena.borrow_mut();
            if arena.is_some() {
                return None;
            }
            *arena =
                Some(Arena { device: device.clone(), batch, dtype, floats: Vec::new(), masks: Vec::new(), reads: 0 });
            Some(Trace { _not_send: std::marker::PhantomData })
        })
    }

    /// A tensor `[batch]` as a number of the trace: derivatives flow back into it.
    pub fn input(&self, tensor: Tensor<1>) -> Batched {
        push(tensor, None)
    }

    /// The tensor `[batch]` of a number (a constant is broadcast).
    pub fn tensor(&self, x: Batched) -> Tensor<1> {
        tensor(x)
    }

    /// Tensor operations recorded so far.
    pub fn operations(&self) -> usize {
        with(|a| a.floats.len() + a.masks.len())
    }

    /// Reads from the device to the host so far (each a wait for the device).
    pub fn reads(&self) -> usize {
        with(|a| a.reads)
    }
}

impl Batched {
    /// A tensor `[batch]` of this thread's trace as a number of it (derivatives flow back into
    /// it): how a solve supplied for all lanes at once hands its results to the engine.
    pub fn from_tensor(tensor: Tensor<1>) -> Batched {
        push(tensor, None)
    }

    /// The tensor `[batch]` of this number (a constant is broadcast).
    pub fn to_tensor(self) -> Tensor<1> {
        tensor(self)
    }
}

/// The numbers of `tensor` (any shape) on the host in `f64`, counted among the reads of the
/// trace running on this thread (`None` if they are not floats).
///
/// # Panics
/// Outside a trace.
pub fn read_to_host<const D: usize>(tensor: Tensor<D>) -> Option<Vec<f64>> {
    with(|a| a.reads += 1);
    tensor.to_data().convert::<f64>().try_to_vec::<f64>().ok()
}

/// The device, batch size and float type of the trace running on this thread.
pub fn trace_context() -> (Device, usize, DType) {
    with(|a| (a.device.clone(), a.batch, a.dtype))
}

impl Drop for Trace {
    fn drop(&mut self) {
        ARENA.with(|arena| arena.borrow_mut().take());
    }
}

fn with<R>(f: impl FnOnce(&mut Arena) -> R) -> R {
    ARENA.with(|arena| f(arena.borrow_mut().as_mut().expect("a Batched tensor used outside its trace")))
}

fn push(tensor: Tensor<1>, reals: Option<Vec<f64>>) -> Batched {
    with(|a| {
        a.floats.push((tensor, reals));
        Batched::Tensor(Slot(a.floats.len() as u32 - 1))
    })
}

fn push_mask(tensor: Tensor<1, Bool>) -> BatchedMask {
    with(|a| {
        a.masks.push((tensor, None));
        BatchedMask::Tensor(Slot(a.masks.len() as u32 - 1))
    })
}

/// The tensor of `x`: a constant is broadcast to the batch.
fn tensor(x: Batched) -> Tensor<1> {
    with(|a| match x {
        Batched::Tensor(Slot(s)) => a.floats[s as usize].0.clone(),
        Batched::Constant(c) => Tensor::full([a.batch], c, (&a.device, a.dtype)),
    })
}

fn mask_tensor(m: BatchedMask) -> Tensor<1, Bool> {
    with(|a| match m {
        BatchedMask::Tensor(Slot(s)) => a.masks[s as usize].0.clone(),
        BatchedMask::Splat(b) => {
            Tensor::<1>::full([a.batch], if b { 1.0 } else { 0.0 }, (&a.device, a.dtype)).greater_elem(0.5)
        }
    })
}

/// Brings the lanes of every tensor among `values` that the host has not seen yet to the host,
/// in one transfer (stacked `[k, batch]`): each read waits for the device, so the engine
/// announces what it will read ([`BatchLanes::prefetch`]) rather than reading it number by
/// number.
fn fetch(values: impl IntoIterator<Item = Batched>) {
    let slots =
        values.into_iter().filter_map(|x| if let Batched::Tensor(Slot(s)) = x { Some(s as usize) } else { None });
    read_unseen(
        slots,
        |a| &mut a.floats,
        |tensors| {
            // Detached: a read is no operation of the graph.
            let stacked = Tensor::stack::<2>(tensors.into_iter().map(Tensor::detach).collect(), 0);
            stacked.to_data().convert::<f64>().try_to_vec::<f64>().expect("float tensors")
        },
    )
}

/// As [`fetch`], for masks.
fn fetch_masks(masks: impl IntoIterator<Item = BatchedMask>) {
    let slots =
        masks.into_iter().filter_map(|m| if let BatchedMask::Tensor(Slot(s)) = m { Some(s as usize) } else { None });
    read_unseen(
        slots,
        |a| &mut a.masks,
        |tensors| {
            let stacked = Tensor::stack::<2>(tensors, 0);
            // As integers: not every backend's boolean storage reads back as `bool`.
            let values = stacked.int().to_data().convert::<i64>().try_to_vec::<i64>().expect("integers");
            values.into_iter().map(|x| x != 0).collect()
        },
    )
}

/// Reads, by `read` (the tensors' values row after row), the distinct entries among `slots` of
/// one of the trace's lists whose lanes the host has not seen, and keeps their lanes: one read
/// of the device, none if every entry was seen.
fn read_unseen<T: Clone, V: Clone>(
    slots: impl Iterator<Item = usize>,
    list: impl Fn(&mut Arena) -> &mut Vec<(T, Option<Vec<V>>)>,
    read: impl FnOnce(Vec<T>) -> Vec<V>,
) {
    let mut slots: Vec<usize> = slots.collect();
    if slots.is_empty() {
        return;
    }
    with(|a| {
        let batch = a.batch;
        let entries = list(a);
        slots.retain(|&s| entries[s].1.is_none());
        slots.sort_unstable();
        slots.dedup();
        if slots.is_empty() {
            return;
        }
        let values = read(slots.iter().map(|&s| entries[s].0.clone()).collect());
        for (i, &s) in slots.iter().enumerate() {
            entries[s].1 = Some(values[i * batch..(i + 1) * batch].to_vec());
        }
        a.reads += 1;
    })
}

/// What `f` makes of the lanes of `x`, read from the device once.
fn on_host<R>(x: Slot, f: impl FnOnce(&[f64]) -> R) -> R {
    fetch([Batched::Tensor(x)]);
    with(|a| f(a.floats[x.0 as usize].1.as_deref().expect("fetched")))
}

/// What `f` makes of the lanes of mask `m`, read from the device once.
fn mask_on_host<R>(m: Slot, f: impl FnOnce(&[bool]) -> R) -> R {
    fetch_masks([BatchedMask::Tensor(m)]);
    with(|a| f(a.masks[m.0 as usize].1.as_deref().expect("fetched")))
}

fn batch() -> usize {
    with(|a| a.batch)
}

fn unary(x: Batched, on_host: fn(f64) -> f64, op: fn(Tensor<1>) -> Tensor<1>) -> Batched {
    match x {
        Batched::Constant(c) => Batched::Constant(on_host(c)),
        _ => push(op(tensor(x)), None),
    }
}

/// A binary operation: folded on the host between constants, else one tensor operation (with a
/// constant operand as a scalar where burn has such an operation).
fn binary(
    a: Batched,
    b: Batched,
    on_host: fn(f64, f64) -> f64,
    op: fn(Tensor<1>, Tensor<1>) -> Tensor<1>,
    with_scalar: Option<fn(Tensor<1>, f64) -> Tensor<1>>,
) -> Batched {
    match (a, b, with_scalar) {
        (Batched::Constant(x), Batched::Constant(y), _) => Batched::Constant(on_host(x, y)),
        (Batched::Tensor(_), Batched::Constant(y), Some(scalar)) => push(scalar(tensor(a), y), None),
        _ => push(op(tensor(a), tensor(b)), None),
    }
}

/// `op(x)` where `singular` marks the lanes at which `op` has no finite derivative: there `op`
/// is evaluated at `at` instead and its true value put back, cut from the graph. A batch
/// computes both sides of every per-lane choice, so the side a lane does not take may sit at
/// such a point (a masked contact slot's zero normal); its zero cotangent times an infinite
/// partial would make the gradient NaN. The guard leaves every value exact and gives 0 where
/// there is no derivative. Where autodiff tracks none of the operands (`operands`, `x` among
/// them) there is no gradient to guard, and `op(x)` is one operation instead of six.
fn guarded(
    x: Tensor<1>,
    operands: &[&Tensor<1>],
    singular: impl FnOnce(&Tensor<1>) -> Tensor<1, Bool>,
    at: f64,
    op: impl Fn(Tensor<1>) -> Tensor<1>,
) -> Tensor<1> {
    if !operands.iter().any(|t| t.is_tracked()) {
        return op(x);
    }
    let singular = singular(&x);
    let exact = op(x.clone()).detach();
    op(x.mask_fill(singular.clone(), at)).mask_where(singular, exact)
}

/// A unary operation with a guard (see [`guarded`]) at the lanes `singular` marks.
fn unary_guarded(
    x: Batched,
    on_host: fn(f64) -> f64,
    singular: fn(Tensor<1>) -> Tensor<1, Bool>,
    at: f64,
    op: fn(Tensor<1>) -> Tensor<1>,
) -> Batched {
    match x {
        Batched::Constant(c) => Batched::Constant(on_host(c)),
        _ => {
            let t = tensor(x);
            push(guarded(t.clone(), &[&t], |t| singular(t.clone()), at, op), None)
        }
    }
}

impl Add for Batched {
    type Output = Self;
    fn add(self, rhs: Self) -> Self {
        match (self, rhs) {
            (x, Batched::Constant(c)) | (Batched::Constant(c), x) if c == 0.0 => x,
            (Batched::Constant(c), x) => {
                binary(x, Batched::Constant(c), |a, b| a + b, |a, b| a + b, Some(|a, b| a.add_scalar(b)))
            }
            _ => binary(self, rhs, |a, b| a + b, |a, b| a + b, Some(|a, b| a.add_scalar(b))),
        }
    }
}

impl Sub for Batched {
    type Output = Self;
    fn sub(self, rhs: Self) -> Self {
        match rhs {
            Batched::Constant(0.0) => self,
            _ => binary(self, rhs, |a, b| a - b, |a, b| a - b, Some(|a, b| a.sub_scalar(b))),
        }
    }
}

impl Mul for Batched {
    type Output = Self;
    fn mul(self, rhs: Self) -> Self {
        match (self, rhs) {
            (x, Batched::Constant(c)) | (Batched::Constant(c), x) if c == 1.0 => x,
            (_, Batched::Constant(c)) | (Batched::Constant(c), _) if c == 0.0 => Batched::Constant(0.0),
            (Batched::Constant(c), x) => {
                binary(x, Batched::Constant(c), |a, b| a * b, |a, b| a * b, Some(|a, b| a.mul_scalar(b)))
            }
            _ => binary(self, rhs, |a, b| a * b, |a, b| a * b, Some(|a, b| a.mul_scalar(b))),
        }
    }
}

impl Div for Batched {
    type Output = Self;
    fn div(self, rhs: Self) -> Self {
        match (self, rhs) {
            (_, Batched::Constant(1.0)) => self,
            (Batched::Constant(a), Batched::Constant(b)) => Batched::Constant(a / b),
            // Not `div_scalar`: burn 0.22.1's backward of it takes the divisor's reciprocal in
            // f32, which costs f64 gradients seven digits.
            (_, Batched::Constant(_)) => push(tensor(self) / tensor(rhs), None),
            // A zero denominator has no derivative: guarded.
            _ => {
                let (a, b) = (tensor(self), tensor(rhs));
                push(guarded(b.clone(), &[&a, &b], |b| b.clone().equal_elem(0.0), 1.0, |b| a.clone() / b), None)
            }
        }
    }
}

impl Neg for Batched {
    type Output = Self;
    fn neg(self) -> Self {
        unary(self, |x| -x, |t| t.neg())
    }
}

impl AddAssign for Batched {
    fn add_assign(&mut self, rhs: Self) {
        *self = *self + rhs;
    }
}
impl SubAssign for Batched {
    fn sub_assign(&mut self, rhs: Self) {
        *self = *self - rhs;
    }
}
impl MulAssign for Batched {
    fn mul_assign(&mut self, rhs: Self) {
        *self = *self * rhs;
    }
}
impl DivAssign for Batched {
    fn div_assign(&mut self, rhs: Self) {
        *self = *self / rhs;
    }
}

impl Zero for Batched {
    fn zero() -> Self {
        Batched::Constant(0.0)
    }
    fn is_zero(&self) -> bool {
        *self == Batched::Constant(0.0)
    }
}

impl One for Batched {
    fn one() -> Self {
        Batched::Constant(1.0)
    }
}

fn mask_binary(a: BatchedMask, b: BatchedMask, on_host: fn(bool, bool) -> bool, and: bool) -> BatchedMask {
    match (a, b) {
        (BatchedMask::Splat(x), BatchedMask::Splat(y)) => BatchedMask::Splat(on_host(x, y)),
        // `false & m`, `true | m`: the answer is the splat; `true & m`, `false | m`: `m`.
        (BatchedMask::Splat(s), m) | (m, BatchedMask::Splat(s)) => {
            if s == and {
                m
            } else {
                BatchedMask::Splat(s)
            }
        }
        _ => {
            let (x, y) = (mask_tensor(a), mask_tensor(b));
            push_mask(if and { x.bool_and(y) } else { x.bool_or(y) })
        }
    }
}

impl BitAnd for BatchedMask {
    type Output = Self;
    fn bitand(self, rhs: Self) -> Self {
        mask_binary(self, rhs, |a, b| a & b, true)
    }
}

impl BitOr for BatchedMask {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        mask_binary(self, rhs, |a, b| a | b, false)
    }
}

impl Not for BatchedMask {
    type Output = Self;
    fn not(self) -> Self {
        match self {
            BatchedMask::Splat(b) => BatchedMask::Splat(!b),
            m => push_mask(mask_tensor(m).bool_not()),
        }
    }
}

impl Mask for BatchedMask {
    fn splat(value: bool) -> Self {
        BatchedMask::Splat(value)
    }
    fn from_lanes(values: &[bool]) -> Self {
        match values.len() {
            1 => BatchedMask::Splat(values[0]),
            n => {
                assert_eq!(n, batch(), "a mask of {n} lanes in a trace of {}", batch());
                let t = with(|a| Tensor::<1, Bool>::from_data(TensorData::new(values.to_vec(), [n]), &a.device));
                push_mask(t)
            }
        }
    }
    fn lane(self, lane: usize) -> bool {
        match self {
            BatchedMask::Splat(b) => b,
            BatchedMask::Tensor(s) => mask_on_host(s, |m| m[lane]),
        }
    }
    fn all(self) -> bool {
        match self {
            BatchedMask::Splat(b) => b,
            BatchedMask::Tensor(s) => mask_on_host(s, |m| m.iter().all(|&b| b)),
        }
    }
    fn any(self) -> bool {
        match self {
            BatchedMask::Splat(b) => b,
            BatchedMask::Tensor(s) => mask_on_host(s, |m| m.iter().any(|&b| b)),
        }
    }
    fn prefetch(masks: impl IntoIterator<Item = Self>) {
        fetch_masks(masks)
    }
}

/// A comparison: on the host between constants, else one tensor operation.
fn compare(
    a: Batched,
    b: Batched,
    on_host: fn(f64, f64) -> bool,
    op: fn(Tensor<1>, Tensor<1>) -> Tensor<1, Bool>,
) -> BatchedMask {
    match (a, b) {
        (Batched::Constant(x), Batched::Constant(y)) => BatchedMask::Splat(on_host(x, y)),
        _ => push_mask(op(tensor(a), tensor(b))),
    }
}

impl Arithmetic for Batched {
    fn from_f64(value: f64) -> Self {
        Batched::Constant(value)
    }
    fn sqrt(self) -> Self {
        unary_guarded(self, f64::sqrt, |t| t.lower_equal_elem(0.0), 1.0, |t| t.sqrt())
    }
    fn sin(self) -> Self {
        unary(self, f64::sin, |t| t.sin())
    }
    fn cos(self) -> Self {
        unary(self, f64::cos, |t| t.cos())
    }
    fn tan(self) -> Self {
        unary(self, f64::tan, |t| t.tan())
    }
    fn asin(self) -> Self {
        unary_guarded(self, f64::asin, |t| t.abs().greater_equal_elem(1.0), 0.0, |t| t.asin())
    }
    fn acos(self) -> Self {
        unary_guarded(self, f64::acos, |t| t.abs().greater_equal_elem(1.0), 0.0, |t| t.acos())
    }
    fn atan(self) -> Self {
        unary(self, f64::atan, |t| t.atan())
    }
    fn atan2(self, x: Self) -> Self {
        match (self, x) {
            (Batched::Constant(y), Batched::Constant(x)) => Batched::Constant(y.atan2(x)),
            // At the origin there is no derivative: guarded.
            _ => {
                let (y, x) = (tensor(self), tensor(x));
                let origin = |x: &Tensor<1>| y.clone().equal_elem(0.0).bool_and(x.clone().equal_elem(0.0));
                push(guarded(x.clone(), &[&x, &y], origin, 1.0, |x| y.clone().atan2(x)), None)
            }
        }
    }
    fn exp(self) -> Self {
        unary(self, f64::exp, |t| t.exp())
    }
    fn ln(self) -> Self {
        unary_guarded(self, f64::ln, |t| t.lower_equal_elem(0.0), 1.0, |t| t.log())
    }
    fn tanh(self) -> Self {
        unary(self, f64::tanh, |t| t.tanh())
    }
    /// As the other scalars': zero takes the positive branch, derivative 1 (burn's own `abs`
    /// gives 0 there, which a state exactly on a limit meets). Where autodiff tracks nothing,
    /// burn's `abs` (one operation; `-0` becomes `+0`, as `f64::abs` makes it).
    fn abs(self) -> Self {
        unary(self, f64::abs, |t| {
            if t.is_tracked() { t.clone().mask_where(t.clone().lower_elem(0.0), t.neg()) } else { t.abs() }
        })
    }
    fn floor(self) -> Self {
        unary(self, f64::floor, |t| t.floor())
    }
    fn powi(self, n: i32) -> Self {
        match (self, n) {
            (Batched::Constant(c), _) => Batched::Constant(c.powi(n)),
            (x, 1) => x,
            (x, 2) => x * x,
            (x, _) => push(tensor(x).powi_scalar(n), None),
        }
    }
    fn powf(self, n: Self) -> Self {
        match (self, n) {
            (Batched::Constant(x), Batched::Constant(n)) => Batched::Constant(x.powf(n)),
            // A non-positive base has no derivative in the exponent: guarded.
            _ => {
                let (x, n) = (tensor(self), tensor(n));
                push(
                    guarded(x.clone(), &[&x, &n], |x| x.clone().lower_equal_elem(0.0), 1.0, |x| x.powf(n.clone())),
                    None,
                )
            }
        }
    }
}

impl BatchLanes for Batched {
    type Mask = BatchedMask;
    fn less(self, other: Self) -> BatchedMask {
        compare(self, other, |a, b| a < b, |a, b| a.lower(b))
    }
    fn less_eq(self, other: Self) -> BatchedMask {
        compare(self, other, |a, b| a <= b, |a, b| a.lower_equal(b))
    }
    fn select(mask: BatchedMask, if_true: Self, if_false: Self) -> Self {
        match mask {
            BatchedMask::Splat(b) => {
                if b {
                    if_true
                } else {
                    if_false
                }
            }
            _ if if_true == if_false => if_true,
            m => push(tensor(if_false).mask_where(mask_tensor(m), tensor(if_true)), None),
        }
    }
    fn lanes(&self) -> usize {
        match self {
            Batched::Constant(_) => 1,
            Batched::Tensor(_) => batch(),
        }
    }
    fn lane(&self, lane: usize) -> f64 {
        match *self {
            Batched::Constant(c) => c,
            Batched::Tensor(s) => on_host(s, |x| x[lane]),
        }
    }
    fn from_lanes(values: &[f64]) -> Self {
        match values.len() {
            1 => Batched::Constant(values[0]),
            n => {
                assert_eq!(n, batch(), "{n} lanes in a trace of {}", batch());
                // The values as the tensor holds them are known only in f64.
                let (t, exact) = with(|a| {
                    let data = TensorData::new(values.to_vec(), [n]).convert_dtype(a.dtype);
                    (Tensor::<1>::from_data(data, (&a.device, a.dtype)), a.dtype == DType::F64)
                });
                push(t, exact.then(|| values.to_vec()))
            }
        }
    }
    fn reals(&self) -> Vec<f64> {
        match *self {
            Batched::Constant(c) => vec![c],
            Batched::Tensor(s) => on_host(s, <[f64]>::to_vec),
        }
    }
    fn prefetch(values: impl IntoIterator<Item = Self>) {
        fetch(values)
    }
}

impl Tangents for Batched {
    fn tangent_dim() -> usize {
        0
    }
    fn tangent(&self, _lane: usize, direction: usize) -> f64 {
        panic!("a Batched number has no tangent direction {direction}: burn's autodiff carries its derivatives")
    }
    fn set_tangent(&mut self, _lane: usize, direction: usize, _value: f64) {
        panic!("a Batched number has no tangent direction {direction}: burn's autodiff carries its derivatives")
    }
    fn is_finite(&self) -> bool {
        match *self {
            Batched::Constant(c) => c.is_finite(),
            Batched::Tensor(s) => on_host(s, |x| x.iter().all(|x| x.is_finite())),
        }
    }
    fn carries_derivatives() -> bool {
        true
    }
}

impl AutodiffHooks for Batched {
    fn detach(self) -> Self {
        unary(self, |x| x, |t| t.detach())
    }
    /// Lane `lane`'s solution `x` gets the implicit function theorem's derivative through one
    /// registered burn node ([`ImplicitOps`]): zero in value, its backward the transposed rule
    /// `r̄ = −H⁻ᵀ x̄` applied to the lane's cotangent — the solver's iterations are not on the
    /// graph, only the residual `r` of the optimality conditions at the solution.
    fn implicit(x: &mut [Self], residual: &[Self], lane: usize, rule: Box<dyn ImplicitRule>) {
        let m = x.len();
        if m == 0 {
            return;
        }
        let (device, batch, dtype) = with(|a| (a.device.clone(), a.batch, a.dtype));
        // The lane's own entries only: other lanes' residuals may not even be finite.
        let own: Tensor<2> = Tensor::stack(residual.iter().map(|&r| tensor(r).narrow(0, lane, 1)).collect(), 1);
        let dx = implicit_rule(own, Rule(std::sync::Arc::from(rule)));
        for (i, xi) in x.iter_mut().enumerate() {
            let own = dx.clone().narrow(1, i, 1).reshape([1]);
            let spread = Tensor::<1>::zeros([batch], (&device, dtype)).slice_assign(lane..lane + 1, own);
            *xi = push(tensor(*xi) + spread, None);
        }
    }
}

/// A lane's implicit-function rule, held by the node that applies it backward.
#[derive(Clone)]
pub struct Rule(std::sync::Arc<dyn ImplicitRule>);

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Rule")
    }
}

/// The contact solve's derivative as a burn operation: from a lane's residual `[1, m]` to a
/// term `[1, m]` that is zero in value and whose backward is the rule's adjoint.
#[backend_extension(Flex, Autodiff)]
pub trait ImplicitOps: Backend {
    fn implicit_rule(residual: FloatTensor<Self>, rule: Rule) -> FloatTensor<Self> {
        drop(rule);
        let shape = residual.shape();
        Self::float_zeros(shape, &residual.device(), FloatDType::F64)
    }
}

impl ImplicitOps for Flex {}

#[derive(Debug)]
struct ImplicitBackward;

impl<B: Backend> Backward<B, 1> for ImplicitBackward {
    type State = Rule;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [residual] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let (device, shape) = (grad.device(), grad.shape());
        let data = read_sync(B::float_into_data(grad)).expect("the rule's cotangent is readable");
        let mut bar: Vec<f64> = data.try_cast_as::<f64>().and_then(|d| d.try_to_vec::<f64>()).expect("f64 cotangents");
        ops.state.0.adjoint(&mut bar);
        if let Some(node) = residual {
            grads.register::<B>(node.id, B::float_from_data(TensorData::new(bar, shape), &device));
        }
    }
}

impl<B: ImplicitOps, C: CheckpointStrategy> ImplicitOps for Autodiff<B, C> {
    fn implicit_rule(residual: FloatTensor<Self>, rule: Rule) -> FloatTensor<Self> {
        let (residual, node) = residual.into_parts();
        match ImplicitBackward.prepare::<C>([node]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::implicit_rule(residual, rule.clone());
                prep.finish(rule, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::implicit_rule(residual, rule)),
        }
    }
}

fn implicit_rule(residual: Tensor<2>, rule: Rule) -> Tensor<2> {
    Tensor::from_dispatch(Dispatch::implicit_rule(residual.into_dispatch(), rule))
}

/// A simulation stepped with the engine on [`Batched`] numbers: every operation of the step a
/// burn operation, the contact solves' derivatives burn operations on their residuals. It keeps
/// the batch's warm starts from one step to the next. (A [`crate::Simulation`] given a device route
/// steps this way on the devices the route serves, its warm starts in its states.)
pub struct TracedSimulation {
    model: Model<f64>,
    contact: ContactState,
    /// The contact solve of all lanes at once, where one is given (a GPU kernel).
    solver: Option<Arc<dyn BatchSolver<Batched>>>,
}

/// What a traced step did: the tensor operations it recorded, the reads from the device it
/// waited for, and each lane's solves.
#[derive(Clone, Debug)]
pub struct TracedStep {
    pub state: BatchState,
    pub operations: usize,
    pub reads: usize,
    pub info: StepInfo,
}

impl TracedSimulation {
    /// `model` stepped with contact solves under `config`, from cold warm starts
    /// ([`crate::Simulation::traced`] makes one from a simulation).
    pub fn new(model: Model<f64>, config: SolverConfig) -> Self {
        TracedSimulation { model, contact: ContactState::new(config), solver: None }
    }

    /// The same simulation, its contact problems solved by `solver` for all lanes at once
    /// instead of lane by lane on the host.
    pub fn with_batch_solver(self, solver: Arc<dyn BatchSolver<Batched>>) -> Self {
        TracedSimulation { solver: Some(solver), ..self }
    }

    /// One step of every lane of `state` under `ctrl` (`[batch, nu]`), in the float type of
    /// `state.qpos`, which every input must share: `f64`, or `f32` with a batch solver (where a
    /// device has no `f64`).
    pub fn step(&mut self, state: &BatchState, ctrl: &Tensor<2>) -> Result<TracedStep, BurnError> {
        traced_step(&self.model, &mut self.contact, self.solver.as_ref(), state, ctrl, None)
    }
}

/// The chosen parameters of a traced step: their positions in [`Model::parameters`], and their
/// values `[1, P]` (shared by the lanes) or `[batch, P]`.
pub(crate) type Chosen<'a> = (&'a [usize], &'a Tensor<2>);

/// One traced step of every lane of `state` (see [`TracedSimulation::step`]), warm-started from
/// and keeping its warm starts in `contact`.
pub(crate) fn traced_step(
    model: &Model<f64>,
    contact: &mut ContactState,
    solver: Option<&Arc<dyn BatchSolver<Batched>>>,
    state: &BatchState,
    ctrl: &Tensor<2>,
    params: Option<Chosen>,
) -> Result<TracedStep, BurnError> {
    let (nq, nv, na, nu) = (model.nq(), model.nv(), model.na(), model.nu());
    let batch = state.batch();
    // The lane-by-lane solve's derivative nodes are f64; a batch solver may take f32.
    let dtype = match (state.qpos.dtype(), solver) {
        (DType::F64, _) => DType::F64,
        (DType::F32, Some(_)) => DType::F32,
        (got, _) => return Err(BurnError::DType { what: "qpos", got }),
    };
    // Checked on the host first; the trace starts from the numbers read (it need not read
    // its inputs again).
    let qpos = read_as(&state.qpos, "qpos", batch, nq, dtype)?;
    let qvel = read_as(&state.qvel, "qvel", batch, nv, dtype)?;
    let act = read_as(&state.act, "act", batch, na, dtype)?;
    let host_ctrl = read_as(ctrl, "ctrl", batch, nu, dtype)?;
    let host_params = match params {
        Some((chosen, values)) => {
            let rows = if values.dims()[0] == 1 { 1 } else { batch };
            read_as(values, "params", rows, chosen.len(), dtype)?
        }
        None => Vec::new(),
    };
    let device = state.qpos.device();
    let trace = Trace::start(&device, batch, dtype).ok_or(BurnError::AlreadyTracing)?;
    let columns = |t: &Tensor<2>, host: &[f64], n: usize| -> DVector<Batched> {
        DVector::from_fn(n, |j, _| {
            let lanes = (0..batch).map(|l| host[l * n + j]).collect();
            push(t.clone().narrow(1, j, 1).reshape([batch]), Some(lanes))
        })
    };
    let traced = traced_model(model, batch, params.map(|p| (p, host_params.as_slice())))?;
    let mut start: State<Batched> = traced.state(columns(&state.qpos, &qpos, nq), columns(&state.qvel, &qvel, nv));
    start.act = columns(&state.act, &act, na);
    start.time = Batched::Constant(state.time);
    let u: Vec<Batched> = columns(ctrl, &host_ctrl, nu).iter().copied().collect();
    let mut workspace = Workspace::default();
    workspace.set_batch_solver(solver.cloned());
    step_in(&traced, &start, &u, contact, &mut workspace).map_err(BurnError::TracedStep)?;
    let next = &workspace.next;
    let stack = |v: &DVector<Batched>, n: usize| -> Tensor<2> {
        if n == 0 {
            write_as(Vec::new(), batch, 0, &device, dtype)
        } else {
            Tensor::stack(v.iter().map(|&x| trace.tensor(x)).collect(), 1)
        }
    };
    let state = state.stepped(stack(&next.qpos, nq), stack(&next.qvel, nv), stack(&next.act, na), model.timestep);
    Ok(TracedStep { state, operations: trace.operations(), reads: trace.reads(), info: workspace.info.clone() })
}

/// `model` on [`Batched`] numbers: its parameters host constants, but for the chosen ones,
/// inputs of the trace (a shared row broadcast to every lane), so that gradients reach them;
/// each given with the numbers the host read of it.
fn traced_model(
    model: &Model<f64>,
    batch: usize,
    params: Option<(Chosen, &[f64])>,
) -> Result<Model<Batched>, BurnError> {
    let Some(((chosen, values), host)) = params else {
        return Ok(model.cast());
    };
    let mut all: Vec<Batched> = model.parameters().into_iter().map(Batched::Constant).collect();
    let (shared, p) = (values.dims()[0] == 1, chosen.len());
    for (j, &index) in chosen.iter().enumerate() {
        let column = values.clone().narrow(1, j, 1);
        let (lanes, known) = if shared {
            (column.reshape([1]).expand([batch]), vec![host[j]; batch])
        } else {
            (column.reshape([batch]), (0..batch).map(|l| host[l * p + j]).collect())
        };
        all[index] = push(lanes, Some(known));
    }
    Ok(model.with_parameters(&all)?)
}
