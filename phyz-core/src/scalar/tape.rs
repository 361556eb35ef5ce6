//! `Var`: reverse-mode derivatives, recorded on a tape.
//!
//! Each operation on a [`Var`] that depends on a recorded input appends one node to this
//! thread's tape: its (at most two) parents and the partial derivative with respect to each.
//! Operations on constants record nothing, so model data that no derivative is asked of costs
//! what it costs in `f64`. One backward sweep over the tape then gives the derivative of one
//! output with respect to every input, however many inputs there are: the cost of a gradient
//! does not grow with the number of parameters.
//!
//! A solve differentiated by the implicit function theorem (the contact solve) is one block on
//! the tape, not its iterations: its outputs are new nodes, and when the sweep reaches them it
//! applies the transposed rule of the block's [`ImplicitRule`] to their adjoints and passes the
//! result to the residual the rule linearizes.
//!
//! A thread records one [`Recording`] at a time; a `Var` belongs to the recording that made it.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};
use std::sync::atomic::{AtomicU32, Ordering};

use num_traits::{One, Zero};

use super::{Arithmetic, AutodiffHooks, BatchLanes, ImplicitRule, Tangents};

/// A real number, its place on this thread's tape (0: a constant, recorded nowhere) and the
/// recording it belongs to (so that a variable kept past its recording is refused, not read as
/// another recording's node).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Var {
    value: f64,
    index: u32,
    recording: u32,
}

/// The tape index constants point at: its adjoint collects what flows into constants and is
/// never read.
const CONSTANT: u32 = 0;

/// One recorded operation: the nodes it read and its partial derivative with respect to each.
#[derive(Clone, Copy, Debug)]
struct Node {
    parents: [u32; 2],
    weights: [f64; 2],
}

/// An implicitly defined block: outputs `first..first + count`, which the sweep treats through
/// `rule` from their adjoints to those of the residual nodes `inputs`.
struct Block {
    first: u32,
    count: u32,
    inputs: Vec<u32>,
    rule: Box<dyn ImplicitRule>,
}

/// How many outputs one [`Recording::backward_rows`] sweep carries.
pub const ROWS: usize = 8;

/// A thread's tape and the storage of its backward sweeps.
struct Tape {
    active: bool,
    /// Counts the recordings started on this thread.
    recording: u32,
    /// The earlier recording whose first nodes this one carries, and how many (see
    /// [`Recording::try_start_with`]).
    carried: Option<(u32, usize)>,
    nodes: Vec<Node>,
    blocks: Vec<Block>,
    adjoints: Adjoints<1>,
    rows: RowAdjoints,
    /// The positions of the recording's inputs.
    inputs: Vec<u32>,
}

/// The storage of backward sweeps carrying `W` adjoints per node (one gradient each). Between
/// sweeps they are zero but at the positions in `dirty` (see [`sweep_outputs`]).
pub struct Adjoints<const W: usize> {
    rows: Vec<[f64; W]>,
    dirty: Vec<u32>,
    scratch: Vec<f64>,
}

impl<const W: usize> Adjoints<W> {
    const fn new() -> Self {
        Adjoints { rows: Vec::new(), dirty: Vec::new(), scratch: Vec::new() }
    }

    /// The adjoints of the node at `at` after the last sweep (zero for the constants' node,
    /// where what flows into constants is dropped).
    fn at(&self, at: usize) -> [f64; W] {
        if at == CONSTANT as usize { [0.0; W] } else { self.rows.get(at).copied().unwrap_or([0.0; W]) }
    }
}

impl<const W: usize> Default for Adjoints<W> {
    fn default() -> Self {
        Self::new()
    }
}

/// The storage of sweeps of several outputs at once: [`ROWS`] adjoints per node.
pub type RowAdjoints = Adjoints<ROWS>;

/// Recordings started so far, on every thread.
static RECORDINGS: AtomicU32 = AtomicU32::new(0);

thread_local! {
    static TAPE: RefCell<Tape> = const {
        RefCell::new(Tape {
            active: false,
            recording: 0,
            carried: None,
            nodes: Vec::new(),
            blocks: Vec::new(),
            adjoints: Adjoints::new(),
            rows: Adjoints::new(),
            inputs: Vec::new(),
        })
    };
}

/// Appends a node and returns its index; an operation of constants only records nothing.
#[inline(always)]
fn record(value: f64, parents: [u32; 2], weights: [f64; 2]) -> Var {
    if parents == [CONSTANT; 2] {
        return Var::constant(value);
    }
    let (index, recording) = TAPE.with(|tape| {
        let tape = &mut *tape.borrow_mut();
        let index = tape.nodes.len();
        tape.nodes.push(Node { parents, weights });
        (index, tape.recording)
    });
    Var { value, index: node_index(index), recording }
}

/// A tape position as a node index.
#[inline(always)]
fn node_index(index: usize) -> u32 {
    u32::try_from(index).unwrap_or_else(|_| panic!("a tape holds at most {} nodes", u32::MAX))
}

impl Var {
    /// A constant: no derivative flows into it.
    #[inline]
    pub const fn constant(value: f64) -> Self {
        Var { value, index: CONSTANT, recording: 0 }
    }

    /// The real value.
    #[inline]
    pub fn value(self) -> f64 {
        self.value
    }

    /// True when the value is recorded on the tape, i.e. depends on an input.
    #[inline]
    pub fn is_recorded(self) -> bool {
        self.index != CONSTANT
    }

    #[inline]
    fn unary(self, value: f64, derivative: impl FnOnce() -> f64) -> Self {
        if self.index == CONSTANT {
            Var::constant(value)
        } else {
            record(value, [self.index, CONSTANT], [derivative(), 0.0])
        }
    }

    #[inline]
    fn binary(self, other: Self, value: f64, weights: impl FnOnce() -> [f64; 2]) -> Self {
        record(
            value,
            [self.index, other.index],
            if self.index == CONSTANT && other.index == CONSTANT { [0.0; 2] } else { weights() },
        )
    }
}

/// This thread's recording: inputs are made through it, and its backward sweeps read it. Dropping
/// it frees the tape for the next recording.
pub struct Recording {
    /// A recording is bound to its thread's tape.
    _thread: PhantomData<*const ()>,
}

impl Recording {
    /// Starts recording on this thread's tape, or `None` if this thread is recording already
    /// (one tape per thread: nested recordings would mix their variables).
    pub fn try_start() -> Option<Self> {
        TAPE.with(|tape| {
            let mut tape = tape.borrow_mut();
            if tape.active {
                return None;
            }
            tape.active = true;
            // Numbered across threads, so that a Var taken to another thread's tape (a frozen
            // prefix shared between threads) cannot pass for one of its variables.
            tape.recording = RECORDINGS.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            tape.carried = None;
            tape.nodes.clear();
            tape.blocks.clear();
            tape.inputs.clear();
            tape.nodes.push(Node { parents: [CONSTANT; 2], weights: [0.0; 2] });
            Some(Recording { _thread: PhantomData })
        })
    }

    /// [`Recording::try_start`] beginning with `prefix`, an earlier recording's tape (what a
    /// model's parameters fix for every step, say): its variables stay valid in this recording.
    /// Only the prefix's own variables are carried: a prefix that itself began with another
    /// does not carry that one's.
    ///
    /// # Panics
    /// If `prefix` holds an implicit block (blocks are not copied).
    pub fn try_start_with(prefix: &Frozen) -> Option<Self> {
        assert!(prefix.blocks.is_empty(), "a prefix with implicit blocks cannot be carried");
        let recording = Self::try_start()?;
        TAPE.with(|tape| {
            let mut tape = tape.borrow_mut();
            tape.nodes.extend_from_slice(&prefix.nodes[1..]);
            tape.inputs.extend_from_slice(&prefix.inputs);
            tape.carried = Some((prefix.recording, prefix.nodes.len() - 1));
        });
        Some(recording)
    }

    /// [`Recording::try_start`], for a caller that knows the thread is not recording.
    ///
    /// # Panics
    /// If this thread is already recording.
    pub fn start() -> Self {
        Self::try_start().expect("this thread is already recording a tape")
    }

    /// A new independent variable.
    pub fn input(&self, value: f64) -> Var {
        TAPE.with(|tape| {
            let mut tape = tape.borrow_mut();
            let index = node_index(tape.nodes.len());
            tape.nodes.push(Node { parents: [CONSTANT; 2], weights: [0.0; 2] });
            tape.inputs.push(index);
            Var { value, index, recording: tape.recording }
        })
    }

    /// Number of nodes recorded so far.
    pub fn len(&self) -> usize {
        TAPE.with(|tape| tape.borrow().nodes.len())
    }

    /// True while the tape holds nothing but the constants' node (no input, no prefix).
    pub fn is_empty(&self) -> bool {
        self.len() <= 1
    }

    /// One backward sweep: the adjoint of every node for the output cotangents `seeds`
    /// (`∂L/∂output` for each output, repeated outputs adding up). Read them with
    /// [`Recording::adjoint`] until the next sweep.
    pub fn backward(&self, seeds: impl IntoIterator<Item = (Var, f64)>) {
        TAPE.with(|tape| {
            let tape = &mut *tape.borrow_mut();
            let seeds: Vec<Seed> = seeds.into_iter().map(|(var, value)| (tape.position(var), 0, value)).collect();
            sweep_outputs(&tape.nodes, &tape.blocks, &tape.inputs, &seeds, &mut tape.adjoints);
        })
    }

    /// Up to [`ROWS`] backward sweeps in one: row `k` is the gradient of `outputs[k]` (rows of a
    /// Jacobian), each node carrying all of them, so that the tape is read once per `ROWS` rows.
    /// Read them with [`Recording::adjoint_rows`] until the next such sweep.
    ///
    /// # Panics
    /// If more than [`ROWS`] outputs are given.
    pub fn backward_rows(&self, outputs: &[Var]) {
        TAPE.with(|tape| {
            let tape = &mut *tape.borrow_mut();
            let seeds: Vec<Seed> = outputs.iter().enumerate().map(|(k, &v)| (tape.position(v), k, 1.0)).collect();
            sweep_outputs(&tape.nodes, &tape.blocks, &tape.inputs, &seeds, &mut tape.rows);
        })
    }

    /// Ends the recording, its tape taken off the thread for sweeps on any thread.
    pub fn freeze(self) -> Frozen {
        TAPE.with(|tape| {
            let mut tape = tape.borrow_mut();
            Frozen {
                nodes: std::mem::take(&mut tape.nodes),
                blocks: std::mem::take(&mut tape.blocks),
                inputs: std::mem::take(&mut tape.inputs),
                recording: tape.recording,
                carried: tape.carried,
            }
        })
    }

    /// The [`ROWS`] adjoints of `var` after the last [`Recording::backward_rows`].
    pub fn adjoint_rows(&self, var: Var) -> [f64; ROWS] {
        TAPE.with(|tape| {
            let tape = tape.borrow();
            let at = tape.position(var);
            tape.rows.at(at)
        })
    }

    /// `∂L/∂var` after the last [`Recording::backward`] (zero for a constant).
    pub fn adjoint(&self, var: Var) -> f64 {
        TAPE.with(|tape| {
            let tape = tape.borrow();
            let at = tape.position(var);
            tape.adjoints.at(at)[0]
        })
    }
}

impl Tape {
    /// Where `var` sits on this tape.
    fn position(&self, var: Var) -> usize {
        position(self.recording, self.carried, var)
    }
}

/// Where `var` sits on the tape of recording `recording`, which carries `carried` (a constant:
/// the constants' node).
///
/// # Panics
/// If `var` belongs to another recording: reading it here would read another node.
fn position(recording: u32, carried: Option<(u32, usize)>, var: Var) -> usize {
    let is_carried = matches!(carried, Some((from, count)) if var.recording == from && var.index as usize <= count);
    assert!(
        var.index == CONSTANT || var.recording == recording || is_carried,
        "a Var used outside the recording that made it"
    );
    var.index as usize
}

impl Drop for Recording {
    fn drop(&mut self) {
        TAPE.with(|tape| tape.borrow_mut().active = false);
    }
}

/// A sweep's seed: the node at a position gets a value in one of the sweep's rows.
type Seed = (usize, usize, f64);

/// One backward sweep of `nodes` and `blocks` carrying `W` adjoints per node: row `k` of
/// `storage` becomes the gradient of the sum of the seeds `(position, k, value)` in it.
fn sweep_outputs<const W: usize>(
    nodes: &[Node],
    blocks: &[Block],
    inputs: &[u32],
    seeds: &[Seed],
    storage: &mut Adjoints<W>,
) {
    let used = seeds.iter().map(|&(_, k, _)| k + 1).max().unwrap_or(0);
    assert!(used <= W, "{used} outputs do not fit in a sweep of {W} rows");
    let Adjoints { rows, dirty, scratch } = storage;
    // A sweep leaves every row it reads at zero, so only the inputs' rows (which it writes and
    // the caller reads) and the constants' need clearing before the next — not the whole
    // array, whose clearing would cost as much as the sweep.
    for &at in dirty.iter() {
        if let Some(row) = rows.get_mut(at as usize) {
            *row = [0.0; W];
        }
    }
    rows.resize(nodes.len(), [0.0; W]);
    rows[CONSTANT as usize] = [0.0; W];
    dirty.clear();
    dirty.extend_from_slice(inputs);
    for &(at, k, value) in seeds {
        rows[at][k] += value;
    }
    let mut end = nodes.len();
    for block in blocks.iter().rev() {
        let stop = block.first as usize + block.count as usize;
        sweep_rows(&nodes[stop..end], stop, rows);
        let solved = block.first as usize..stop;
        for k in 0..used {
            scratch.clear();
            scratch.extend(rows[solved.clone()].iter().map(|row| row[k]));
            block.rule.adjoint(scratch);
            for (&input, &bar) in block.inputs.iter().zip(scratch.iter()) {
                rows[input as usize][k] += bar;
            }
        }
        rows[solved].fill([0.0; W]);
        end = block.first as usize;
    }
    sweep_rows(&nodes[1..end], 1, rows);
}

/// A finished recording, taken off its thread's tape so that its row sweeps can run on several
/// threads at once, each with its own [`RowAdjoints`].
pub struct Frozen {
    nodes: Vec<Node>,
    blocks: Vec<Block>,
    inputs: Vec<u32>,
    recording: u32,
    carried: Option<(u32, usize)>,
}

impl Frozen {
    /// Number of nodes recorded.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }

    /// [`Recording::backward_rows`], into `storage`.
    ///
    /// # Panics
    /// If more than [`ROWS`] outputs are given.
    pub fn backward_rows(&self, outputs: &[Var], storage: &mut RowAdjoints) {
        let seeds: Vec<Seed> =
            outputs.iter().enumerate().map(|(k, &v)| (position(self.recording, self.carried, v), k, 1.0)).collect();
        sweep_outputs(&self.nodes, &self.blocks, &self.inputs, &seeds, storage);
    }

    /// The [`ROWS`] adjoints of `var` after the last [`Frozen::backward_rows`] into `storage`.
    pub fn adjoint_rows(&self, storage: &RowAdjoints, var: Var) -> [f64; ROWS] {
        storage.at(position(self.recording, self.carried, var))
    }

    /// Gives the storage back to this thread's tape, if it is not recording, for the next
    /// recording to fill instead of allocating its own.
    pub fn release(self) {
        TAPE.with(|tape| {
            let mut tape = tape.borrow_mut();
            if !tape.active && self.nodes.capacity() > tape.nodes.capacity() {
                tape.nodes = self.nodes;
                tape.inputs = self.inputs;
                tape.blocks = self.blocks;
            }
        })
    }
}

/// Propagates adjoints through `nodes` (positions `offset..`), last to first, `W` per node; each
/// operation's row is left at zero once read (the inputs', which have no parents, keep theirs).
fn sweep_rows<const W: usize>(nodes: &[Node], offset: usize, rows: &mut [[f64; W]]) {
    for (i, node) in nodes.iter().enumerate().rev() {
        if node.parents == [CONSTANT; 2] {
            continue;
        }
        let bar = std::mem::replace(&mut rows[offset + i], [0.0; W]);
        if bar != [0.0; W] {
            for (parent, weight) in node.parents.iter().zip(node.weights) {
                let row = &mut rows[*parent as usize];
                for k in 0..W {
                    row[k] += weight * bar[k];
                }
            }
        }
    }
}

/// Records an implicitly defined block (see [`AutodiffHooks::implicit`]).
fn record_block(x: &mut [Var], residual: &[Var], rule: Box<dyn ImplicitRule>) {
    assert_eq!(x.len(), residual.len(), "an implicit block has one residual per unknown");
    if residual.iter().all(|r| r.index == CONSTANT) {
        return;
    }
    TAPE.with(|tape| {
        let mut tape = tape.borrow_mut();
        let first = tape.nodes.len();
        for value in x.iter_mut() {
            let index = tape.nodes.len();
            tape.nodes.push(Node { parents: [CONSTANT; 2], weights: [0.0; 2] });
            *value = Var { value: value.value, index: node_index(index), recording: tape.recording };
        }
        let inputs = residual.iter().map(|&r| node_index(tape.position(r))).collect();
        tape.blocks.push(Block { first: node_index(first), count: node_index(x.len()), inputs, rule });
    });
}

// With a constant operand the result's derivative is a multiple of the other's: a multiple of
// one reuses the other's node, a multiple of zero is a constant. That keeps products with the
// structural zeros of a Jacobian, and sums with constants, off the tape; the values are computed
// as `f64` computes them, bit for bit.

impl Add for Var {
    type Output = Self;
    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        let value = self.value + rhs.value;
        match (self.index, rhs.index) {
            (CONSTANT, _) => Var { value, ..rhs },
            (_, CONSTANT) => Var { value, ..self },
            parents => record(value, [parents.0, parents.1], [1.0, 1.0]),
        }
    }
}

impl Sub for Var {
    type Output = Self;
    #[inline(always)]
    fn sub(self, rhs: Self) -> Self {
        let value = self.value - rhs.value;
        match (self.index, rhs.index) {
            (_, CONSTANT) => Var { value, ..self },
            (CONSTANT, index) => record(value, [index, CONSTANT], [-1.0, 0.0]),
            parents => record(value, [parents.0, parents.1], [1.0, -1.0]),
        }
    }
}

/// `value`, whose derivative is `factor` times that of `of`.
#[inline(always)]
fn scaled(value: f64, of: Var, factor: f64) -> Var {
    if factor == 1.0 {
        Var { value, ..of }
    } else if factor == 0.0 {
        Var::constant(value)
    } else {
        record(value, [of.index, CONSTANT], [factor, 0.0])
    }
}

impl Mul for Var {
    type Output = Self;
    #[inline(always)]
    fn mul(self, rhs: Self) -> Self {
        let value = self.value * rhs.value;
        match (self.index, rhs.index) {
            (CONSTANT, _) => scaled(value, rhs, self.value),
            (_, CONSTANT) => scaled(value, self, rhs.value),
            parents => record(value, [parents.0, parents.1], [rhs.value, self.value]),
        }
    }
}

impl Div for Var {
    type Output = Self;
    #[inline(always)]
    fn div(self, rhs: Self) -> Self {
        let value = self.value / rhs.value;
        match (self.index, rhs.index) {
            (_, CONSTANT) => scaled(value, self, 1.0 / rhs.value),
            (CONSTANT, _) => scaled(value, rhs, -value / rhs.value),
            parents => record(value, [parents.0, parents.1], [1.0 / rhs.value, -value / rhs.value]),
        }
    }
}

impl Neg for Var {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        self.unary(-self.value, || -1.0)
    }
}

macro_rules! assign_ops {
    ($($trait:ident, $method:ident, $op:tt);*) => {
        $(
            impl $trait for Var {
                #[inline]
                fn $method(&mut self, rhs: Self) {
                    *self = *self $op rhs;
                }
            }
        )*
    };
}

assign_ops!(AddAssign, add_assign, +; SubAssign, sub_assign, -; MulAssign, mul_assign, *; DivAssign, div_assign, /);

impl Zero for Var {
    #[inline]
    fn zero() -> Self {
        Var::constant(0.0)
    }
    #[inline]
    fn is_zero(&self) -> bool {
        self.value == 0.0 && self.index == CONSTANT
    }
}

impl One for Var {
    #[inline]
    fn one() -> Self {
        Var::constant(1.0)
    }
}

impl Arithmetic for Var {
    #[inline]
    fn from_f64(value: f64) -> Self {
        Var::constant(value)
    }
    #[inline]
    fn sqrt(self) -> Self {
        let value = self.value.sqrt();
        self.unary(value, || 0.5 / value)
    }
    #[inline]
    fn sin(self) -> Self {
        self.unary(self.value.sin(), || self.value.cos())
    }
    #[inline]
    fn cos(self) -> Self {
        self.unary(self.value.cos(), || -self.value.sin())
    }
    #[inline]
    fn sin_cos(self) -> (Self, Self) {
        let (s, c) = self.value.sin_cos();
        (self.unary(s, || c), self.unary(c, || -s))
    }
    #[inline]
    fn tan(self) -> Self {
        let value = self.value.tan();
        self.unary(value, || 1.0 + value * value)
    }
    #[inline]
    fn asin(self) -> Self {
        self.unary(self.value.asin(), || 1.0 / (1.0 - self.value * self.value).sqrt())
    }
    #[inline]
    fn acos(self) -> Self {
        self.unary(self.value.acos(), || -1.0 / (1.0 - self.value * self.value).sqrt())
    }
    #[inline]
    fn atan(self) -> Self {
        self.unary(self.value.atan(), || 1.0 / (1.0 + self.value * self.value))
    }
    #[inline]
    fn atan2(self, x: Self) -> Self {
        let (y, xv) = (self.value, x.value);
        self.binary(x, y.atan2(xv), || {
            let r2 = xv * xv + y * y;
            [xv / r2, -y / r2]
        })
    }
    #[inline]
    fn exp(self) -> Self {
        let value = self.value.exp();
        self.unary(value, || value)
    }
    #[inline]
    fn ln(self) -> Self {
        self.unary(self.value.ln(), || 1.0 / self.value)
    }
    #[inline]
    fn tanh(self) -> Self {
        let value = self.value.tanh();
        self.unary(value, || 1.0 - value * value)
    }
    #[inline]
    fn abs(self) -> Self {
        // As num-dual's: +0.0 takes the positive branch, −0.0 the negative one.
        if self.value.is_sign_positive() { self } else { -self }
    }
    #[inline]
    fn floor(self) -> Self {
        Var::constant(self.value.floor())
    }
    #[inline]
    fn powi(self, n: i32) -> Self {
        self.unary(self.value.powi(n), || f64::from(n) * self.value.powi(n - 1))
    }
    #[inline]
    fn powf(self, n: Self) -> Self {
        let (x, e) = (self.value, n.value);
        let value = x.powf(e);
        // As the dual numbers': a part with no derivative to carry is not evaluated, so that
        // `0^n` keeps a finite derivative.
        let base = if self.index == CONSTANT { 0.0 } else { e * x.powf(e - 1.0) };
        let exponent = if n.index == CONSTANT { 0.0 } else { value * x.ln() };
        self.binary(n, value, || [base, exponent])
    }
}

impl BatchLanes for Var {
    type Mask = bool;
    #[inline]
    fn less(self, other: Self) -> bool {
        self.value < other.value
    }
    #[inline]
    fn less_eq(self, other: Self) -> bool {
        self.value <= other.value
    }
    #[inline]
    fn select(mask: bool, if_true: Self, if_false: Self) -> Self {
        if mask { if_true } else { if_false }
    }
    #[inline]
    fn lanes(&self) -> usize {
        1
    }
    #[inline]
    fn lane(&self, _lane: usize) -> f64 {
        self.value
    }
    fn from_lanes(reals: &[f64]) -> Self {
        assert_eq!(reals.len(), 1, "a Var holds exactly one lane");
        Var::constant(reals[0])
    }
}

impl Tangents for Var {
    #[inline]
    fn tangent_dim() -> usize {
        0
    }
    fn tangent(&self, _lane: usize, direction: usize) -> f64 {
        panic!("a Var has no tangent direction {direction}: its derivatives are on the tape")
    }
    fn set_tangent(&mut self, _lane: usize, direction: usize, _value: f64) {
        panic!("a Var has no tangent direction {direction}: its derivatives are on the tape")
    }
    #[inline]
    fn is_finite(&self) -> bool {
        self.value.is_finite()
    }
    #[inline]
    fn carries_derivatives() -> bool {
        true
    }
}

impl AutodiffHooks for Var {
    #[inline]
    fn detach(self) -> Self {
        Var::constant(self.value)
    }
    fn implicit(x: &mut [Self], residual: &[Self], _lane: usize, rule: Box<dyn ImplicitRule>) {
        record_block(x, residual, rule);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Central differences of `f` at `x`.
    fn central(f: impl Fn(f64) -> f64, x: f64) -> f64 {
        let h = 1e-6;
        (f(x + h) - f(x - h)) / (2.0 * h)
    }

    #[test]
    fn elementary_derivatives_match_central_differences() {
        type Case = (&'static str, fn(Var) -> Var, fn(f64) -> f64);
        let functions: [Case; 10] = [
            ("sqrt", |x| x.sqrt(), f64::sqrt),
            ("sin", |x| Arithmetic::sin(x), f64::sin),
            ("tan", |x| Arithmetic::tan(x), f64::tan),
            ("asin", |x| Arithmetic::asin(x), f64::asin),
            ("acos", |x| Arithmetic::acos(x), f64::acos),
            ("atan", |x| Arithmetic::atan(x), f64::atan),
            ("exp", |x| Arithmetic::exp(x), f64::exp),
            ("ln", |x| Arithmetic::ln(x), f64::ln),
            ("tanh", |x| Arithmetic::tanh(x), f64::tanh),
            (
                "mix",
                |x| (x * x + Var::constant(1.0)).powi(3) / x.cos().atan2(x),
                |x| (x * x + 1.0).powi(3) / x.cos().atan2(x),
            ),
        ];
        for (name, f, g) in functions {
            let tape = Recording::start();
            let x = tape.input(0.3);
            let y = f(x);
            tape.backward([(y, 1.0)]);
            let (exact, reference) = (tape.adjoint(x), central(g, 0.3));
            assert!((exact - reference).abs() < 1e-8 * reference.abs().max(1.0), "{name}: {exact} vs {reference}");
            assert_eq!(y.value(), g(0.3), "{name}'s value");
        }
    }

    #[test]
    fn constants_record_nothing_and_repeated_inputs_add_up() {
        let tape = Recording::start();
        let c = Var::constant(2.0) * Var::constant(3.0) + Var::constant(1.0).sin();
        assert!(!c.is_recorded());
        assert!(tape.is_empty());
        let x = tape.input(1.5);
        let y = x * x + c * x;
        tape.backward([(y, 1.0), (y, 1.0)]);
        assert_eq!(tape.adjoint(x), 2.0 * (2.0 * 1.5 + c.value()));
    }

    /// `K⁻¹` of a diagonal `K`, as a rule.
    struct Diagonal(Vec<f64>);
    impl ImplicitRule for Diagonal {
        fn tangent(&self, dr: &mut [f64]) {
            dr.iter_mut().zip(&self.0).for_each(|(d, k)| *d = -*d / k);
        }
        fn adjoint(&self, bar: &mut [f64]) {
            self.tangent(bar);
        }
    }

    #[test]
    fn implicit_blocks_pull_back_through_the_transposed_rule() {
        // x solves r(x, a) = K x − a² = 0 for a diagonal K: x = a² / k, dx/da = 2a / k.
        let tape = Recording::start();
        let a = [tape.input(0.5), tape.input(-2.0)];
        let k = [4.0, 0.5];
        let mut x = [Var::constant(0.5 * 0.5 / 4.0), Var::constant(4.0 / 0.5)];
        let residual = [Var::constant(k[0]) * x[0] - a[0] * a[0], Var::constant(k[1]) * x[1] - a[1] * a[1]];
        Var::implicit(&mut x, &residual, 0, Box::new(Diagonal(k.to_vec())));
        let y = x[0] * Var::constant(3.0) + x[1].sin();
        tape.backward([(y, 1.0)]);
        assert!((tape.adjoint(a[0]) - 3.0 * 2.0 * 0.5 / 4.0).abs() < 1e-15);
        assert!((tape.adjoint(a[1]) - x[1].value().cos() * 2.0 * -2.0 / 0.5).abs() < 1e-14);
    }

    #[test]
    fn row_sweeps_equal_single_sweeps_across_recordings_of_any_length() {
        // Outputs that are operations, an input itself and a constant; a longer recording, then
        // a shorter one with an implicit block, then the longer again: each row as one sweep.
        let cases = [(0.7, 12), (1.3, 3), (-0.4, 12)];
        for (x0, depth) in cases {
            let tape = Recording::start();
            let (x, y) = (tape.input(x0), tape.input(0.5));
            let mut z = x * y;
            for k in 0..depth {
                z = (z + Var::constant(k as f64)).sin() * y;
            }
            let mut solved = [Var::constant(z.value() / 3.0)];
            let residual = [Var::constant(3.0) * solved[0] - z];
            Var::implicit(&mut solved, &residual, 0, Box::new(Diagonal(vec![3.0])));
            let outputs = [z, x, Var::constant(2.0), solved[0] * x, z / y];
            tape.backward_rows(&outputs);
            let rows: Vec<[f64; ROWS]> = [x, y].iter().map(|&v| tape.adjoint_rows(v)).collect();
            for (k, &output) in outputs.iter().enumerate() {
                tape.backward([(output, 1.0)]);
                for (row, &input) in rows.iter().zip(&[x, y]) {
                    let single = tape.adjoint(input);
                    assert!(
                        (row[k] - single).abs() <= 1e-15 * single.abs().max(1.0),
                        "row {k}: {} vs {single}",
                        row[k]
                    );
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "outside the recording")]
    fn a_var_from_an_earlier_recording_is_refused() {
        let stale = {
            let tape = Recording::start();
            tape.input(1.0) * tape.input(2.0)
        };
        let tape = Recording::start();
        let _ = tape.input(3.0) * tape.input(4.0);
        tape.backward([(stale, 1.0)]);
    }

    #[test]
    #[should_panic(expected = "already recording")]
    fn nested_recordings_are_refused() {
        let _outer = Recording::start();
        let _inner = Recording::start();
    }
}
