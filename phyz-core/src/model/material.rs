//! Contact materials: friction, restitution, MuJoCo's `solref`/`solimp`, the margin taper, and
//! how the two materials of a touching pair combine.

/// MuJoCo's smallest and largest impedance.
pub const MIN_IMPEDANCE: f64 = 1e-4;
pub const MAX_IMPEDANCE: f64 = 0.9999;
/// Below this a `solmix` counts as zero (MuJoCo's `mjMINVAL`).
const MIN_SOLMIX: f64 = 1e-15;

use crate::Scalar;

/// The reference response of a constraint (MuJoCo `solref`), as MJCF's two numbers: positive,
/// the time constant and damping ratio of the mass-spring-damper the constraint violation
/// follows; not positive, `(−stiffness, −damping)` given directly. Kept as the two numbers, in
/// any scalar, so that a derivative along either reaches the reference dynamics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolRef<T = f64>(pub [T; 2]);

impl<T: Scalar> Default for SolRef<T> {
    fn default() -> Self {
        SolRef([T::from_f64(0.02), T::one()])
    }
}

impl<T: Scalar> SolRef<T> {
    /// A time constant and damping ratio.
    pub fn time_constant(timeconst: T, dampratio: T) -> Self {
        SolRef([timeconst, dampratio])
    }

    /// A stiffness and damping.
    pub fn direct(stiffness: T, damping: T) -> Self {
        SolRef([-stiffness, -damping])
    }

    /// From MJCF's two numbers; numbers of mixed sign are MuJoCo's default, as MuJoCo replaces
    /// them.
    pub fn from_mjcf([a, b]: [T; 2]) -> Self {
        let (a_positive, b_positive) = (a.greater(T::zero()), b.greater(T::zero()));
        let mixed = (a_positive & !b_positive) | (!a_positive & b_positive);
        let default = Self::default();
        SolRef([T::select(mixed, default.0[0], a), T::select(mixed, default.0[1], b)])
    }

    /// Where the numbers are a time constant and damping ratio (else a direct stiffness and
    /// damping).
    fn is_time_constant(&self) -> T::Mask {
        self.0[0].greater(T::zero())
    }

    /// MuJoCo's `(K, B)` of the reference acceleration `a_ref = -B v - K d r`, for impedance
    /// ceiling `dmax` and step `dt` (the time constant is kept at least `2 dt`, MuJoCo's
    /// `refsafe`, so the reference dynamics stay resolvable by the integrator).
    pub fn stiffness_damping(&self, dmax: T, dt: T) -> (T, T) {
        let [a, b] = self.0;
        let tc = a.max(T::from_f64(2.0) * dt);
        let timed = ((dmax * dmax * tc * tc * b * b).recip(), T::from_f64(2.0) / (dmax * tc));
        let direct = (-a / (dmax * dmax), -b / dmax);
        let time_constant = self.is_time_constant();
        (T::select(time_constant, timed.0, direct.0), T::select(time_constant, timed.1, direct.1))
    }
}

/// Depth-dependent impedance (MuJoCo `solimp`): `d` rises from `dmin` at the surface to `dmax`
/// at `width` deep along a sigmoid with the given `midpoint` and `power`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolImp<T = f64> {
    pub dmin: T,
    pub dmax: T,
    pub width: T,
    pub midpoint: T,
    pub power: T,
}

impl<T: Scalar> Default for SolImp<T> {
    fn default() -> Self {
        SolImp::raw([0.9, 0.95, 0.001, 0.5, 2.0].map(T::from_f64))
    }
}

impl<T: Scalar> SolImp<T> {
    /// MJCF's five numbers, held to the ranges MuJoCo enforces before using them
    /// ([`SolImp::clamped`]).
    pub fn from_mjcf(numbers: [T; 5]) -> Self {
        Self::raw(numbers).clamped()
    }

    /// MJCF's five numbers as written: a geom's, which MuJoCo mixes with its partner's before
    /// holding the mix to its ranges.
    pub fn raw([dmin, dmax, width, midpoint, power]: [T; 5]) -> Self {
        SolImp { dmin, dmax, width, midpoint, power }
    }

    /// Held to MuJoCo's ranges: `dmin`, `dmax` and `midpoint` in
    /// `[MIN_IMPEDANCE, MAX_IMPEDANCE]`, `width ≥ 0`, `power ≥ 1`.
    pub fn clamped(self) -> Self {
        let impedance = |d: T| d.clamp(T::from_f64(MIN_IMPEDANCE), T::from_f64(MAX_IMPEDANCE));
        SolImp {
            dmin: impedance(self.dmin),
            dmax: impedance(self.dmax),
            width: self.width.max(T::zero()),
            midpoint: impedance(self.midpoint),
            power: self.power.max(T::one()),
        }
    }

    /// The impedance at the violation `r` (MuJoCo's `getimpedance`, clamped to
    /// `[MIN_IMPEDANCE, MAX_IMPEDANCE]`): each branch is evaluated and the one that applies is
    /// selected per lane, so the value carries its derivatives along `r` and all five numbers.
    pub fn impedance(&self, r: T) -> T {
        let SolImp { dmin, dmax, width, midpoint, power } = *self;
        let (zero, one) = (T::zero(), T::one());
        let flat = self.flat();
        let x = r.abs() / T::select(flat, one, width);
        // The sigmoid's two halves, each on `x` where it applies (elsewhere on a point where
        // both are defined, the value then unused).
        let inside = x.greater(zero) & x.less(one);
        let inner = T::select(inside, x, T::from_f64(0.5));
        let rising = midpoint.powf(power - one).recip() * inner.powf(power);
        let settling = one - (one - midpoint).powf(power - one).recip() * (one - inner).powf(power);
        let sigmoid = T::select(inner.less_eq(midpoint), rising, settling);
        let y = T::select(power.less_eq(one), x, sigmoid);
        let curve = dmin + y * (dmax - dmin);
        let ends = T::select(x.greater_eq(one), dmax, dmin);
        self.finished(T::select(inside, curve, ends))
    }

    /// [`SolImp::impedance`] at zero, where the curve is not reached: `dmin` (the midpoint of
    /// `dmin` and `dmax` for a flat curve), clamped, without the curve's powers.
    pub fn at_zero(&self) -> T {
        self.finished(self.dmin)
    }

    /// A curve of no width. MuJoCo also takes `dmin = dmax` as flat; the curve has the same
    /// value there, and the derivatives along `dmin` and `dmax` it should have.
    fn flat(&self) -> T::Mask {
        self.width.less_eq(T::from_f64(1e-15))
    }

    /// The impedance `d` off the curve's shape: the midpoint of `dmin` and `dmax` for a flat
    /// curve, then clamped to `[MIN_IMPEDANCE, MAX_IMPEDANCE]`.
    fn finished(&self, d: T) -> T {
        let d = T::select(self.flat(), T::from_f64(0.5) * (self.dmin + self.dmax), d);
        d.clamp(T::from_f64(MIN_IMPEDANCE), T::from_f64(MAX_IMPEDANCE))
    }
}

/// The surface properties of one side of a contact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material<T = f64> {
    /// Coulomb friction coefficient.
    pub friction: T,
    /// Torsional and rolling friction (MuJoCo's second and third `friction` numbers, lengths):
    /// the moment about the normal, and about the tangents, per unit normal force that a
    /// contact of condim 4, and 6, resists turning with.
    pub torsion: T,
    pub rolling: T,
    /// Coefficient of restitution: the separating normal speed is `restitution` times the
    /// approach speed (ramped to zero at low speed so resting contact does not bounce).
    pub restitution: T,
    pub solref: SolRef<T>,
    /// The reference of an elliptic cone's friction rows (MuJoCo's `solreffriction`, set by
    /// explicit contact pairs only); `[0, 0]` uses `solref`'s.
    pub solreffriction: [T; 2],
    pub solimp: SolImp<T>,
    /// The band above the surface in which a contact is already generated; its impedance
    /// tapers to zero across the band.
    pub margin: T,
    /// MuJoCo's pairing weights: a surface of higher `priority` alone sets the pair's friction,
    /// solref and solimp; at equal priority solref and solimp mix in proportion to `solmix`.
    pub priority: i32,
    pub solmix: T,
}

impl<T: Scalar> Default for Material<T> {
    /// MuJoCo's defaults: friction 1, no restitution, default solref/solimp, margin one
    /// solimp width (so the impedance is one C¹ curve across `[-margin, width]`).
    fn default() -> Self {
        let solimp = SolImp::default();
        Material {
            friction: T::one(),
            torsion: T::from_f64(0.005),
            rolling: T::from_f64(0.0001),
            restitution: T::zero(),
            solref: SolRef::default(),
            solreffriction: [T::zero(); 2],
            solimp,
            margin: solimp.width,
            priority: 0,
            solmix: T::one(),
        }
    }
}

/// MuJoCo's rule for a pair's friction coefficient (each of the three): the surface of higher
/// priority's, else the larger. Generic so that the step applies it to live coefficients.
pub fn pair_friction<T: Copy>(priorities: [i32; 2], values: [T; 2], larger: impl Fn(T, T) -> T) -> T {
    match priorities[0].cmp(&priorities[1]) {
        std::cmp::Ordering::Greater => values[0],
        std::cmp::Ordering::Less => values[1],
        std::cmp::Ordering::Equal => larger(values[0], values[1]),
    }
}

/// `3t² − 2t³`: the C¹ ramp from 0 at `t ≤ 0` to 1 at `t ≥ 1`.
pub(crate) fn smoothstep<T: Scalar>(t: T) -> T {
    let t = t.clamp(T::zero(), T::one());
    t * t * (T::from_f64(3.0) - T::from_f64(2.0) * t)
}

impl Material {
    /// Rubber on a hard surface: high friction, soft, a little bounce.
    pub fn rubber() -> Self {
        Material { friction: 1.2, restitution: 0.3, solref: SolRef::time_constant(0.03, 0.8), ..Material::default() }
    }

    /// Steel on steel: moderate friction, stiff.
    pub fn steel() -> Self {
        Material { friction: 0.5, restitution: 0.6, solref: SolRef::time_constant(0.005, 1.0), ..Material::default() }
    }

    /// Ice: almost frictionless.
    pub fn ice() -> Self {
        Material { friction: 0.05, ..Material::default() }
    }

    /// A ball that bounces.
    pub fn bouncy() -> Self {
        Material { friction: 0.8, restitution: 0.9, ..Material::default() }
    }
}

impl<T: Scalar> Material<T> {
    /// Every number of the material passed through `f` (the priority kept): how a material
    /// moves to another scalar.
    pub fn map<U: Scalar>(&self, f: impl Fn(T) -> U) -> Material<U> {
        Material::from_numbers(self.numbers().map(f), self.priority)
    }

    /// Lane by lane, `if_true`'s numbers where `mask` holds, else `if_false`'s (the priority is
    /// `if_true`'s).
    pub fn select(mask: T::Mask, if_true: &Self, if_false: &Self) -> Self {
        let (a, b) = (if_true.numbers(), if_false.numbers());
        Material::from_numbers(std::array::from_fn(|k| T::select(mask, a[k], b[k])), if_true.priority)
    }

    /// The material's numbers in a fixed order: friction, torsion, rolling, restitution, the
    /// two solref, two solreffriction and five solimp numbers, margin, solmix.
    fn numbers(&self) -> [T; 15] {
        let SolImp { dmin, dmax, width, midpoint, power } = self.solimp;
        let ([r0, r1], [f0, f1]) = (self.solref.0, self.solreffriction);
        let (friction, torsion, rolling, restitution) = (self.friction, self.torsion, self.rolling, self.restitution);
        [
            friction,
            torsion,
            rolling,
            restitution,
            r0,
            r1,
            f0,
            f1,
            dmin,
            dmax,
            width,
            midpoint,
            power,
            self.margin,
            self.solmix,
        ]
    }

    /// The material of [`Material::numbers`] `x`.
    fn from_numbers(x: [T; 15], priority: i32) -> Self {
        let [
            friction,
            torsion,
            rolling,
            restitution,
            r0,
            r1,
            f0,
            f1,
            dmin,
            dmax,
            width,
            midpoint,
            power,
            margin,
            solmix,
        ] = x;
        Material {
            friction,
            torsion,
            rolling,
            restitution,
            solref: SolRef([r0, r1]),
            solreffriction: [f0, f1],
            solimp: SolImp { dmin, dmax, width, midpoint, power },
            margin,
            priority,
            solmix,
        }
    }

    /// One material whose batch lane `l` holds the numbers of `lanes[l]` (the priority is the
    /// first's, which is all a combined material still reads).
    pub fn from_lanes(lanes: &[&Material]) -> Self {
        let numbers: Vec<[f64; 15]> = lanes.iter().map(|m| m.numbers()).collect();
        let lane = |k: usize| T::from_lanes(&numbers.iter().map(|n| n[k]).collect::<Vec<_>>());
        Material::from_numbers(std::array::from_fn(lane), lanes.first().map_or(0, |m| m.priority))
    }

    /// Impedance at signed penetration `depth` (negative: separated by `-depth`): solimp's
    /// curve when penetrating; inside the margin band `dmin` scaled by a smoothstep that
    /// reaches zero at `depth = -margin`. C¹ at the surface (both branches have zero slope
    /// there for `power > 1`).
    pub fn impedance_at(&self, depth: T) -> T {
        let zero = T::zero();
        let pressed = self.solimp.impedance(depth);
        let surface = self.solimp.at_zero();
        let band = self.margin.max(T::from_f64(f64::MIN_POSITIVE));
        let tapered = T::select(self.margin.greater(zero), surface * smoothstep((depth + self.margin) / band), zero);
        T::select(depth.greater_eq(zero), pressed, tapered)
    }

    /// The material a contact between `a` and `b` is solved with, by MuJoCo's rule
    /// (`mj_contactParam`): the surface of higher priority sets friction, solref and solimp;
    /// at equal priority each friction coefficient is the larger, solimp mixes with weight
    /// `solmix_a / (solmix_a + solmix_b)`, and solref mixes the same way in the time-constant
    /// form or takes each number's minimum in the direct form. Margins add, as MuJoCo adds the
    /// geoms'; restitution (phyz's own) is the larger.
    pub fn combine(a: &Material<T>, b: &Material<T>) -> Material<T> {
        let shared = Material {
            restitution: a.restitution.max(b.restitution),
            margin: a.margin + b.margin,
            priority: a.priority.max(b.priority),
            ..*a
        };
        let priorities = [a.priority, b.priority];
        let friction = |get: fn(&Material<T>) -> T| pair_friction(priorities, [get(a), get(b)], T::max);
        let (friction, torsion, rolling) = (friction(|m| m.friction), friction(|m| m.torsion), friction(|m| m.rolling));
        if a.priority != b.priority {
            let high = if a.priority > b.priority { a } else { b };
            return Material { friction, torsion, rolling, solref: high.solref, solimp: high.solimp, ..shared };
        }
        let Material { solref, solimp, .. } = Self::mix(a, b);
        Material { friction, torsion, rolling, solref, solimp, solmix: a.solmix.max(b.solmix), ..shared }
    }

    /// The solref and solimp of two surfaces of equal priority, mixed by their `solmix`
    /// weights (the rest of `a` kept).
    fn mix(a: &Material<T>, b: &Material<T>) -> Material<T> {
        let floor = T::from_f64(MIN_SOLMIX);
        let (a_weighs, b_weighs) = (a.solmix.greater_eq(floor), b.solmix.greater_eq(floor));
        let lone = T::select(a_weighs, T::one(), T::zero());
        let one_sided = T::select(a_weighs | b_weighs, lone, T::from_f64(0.5));
        let w = T::select(a_weighs & b_weighs, a.solmix / (a.solmix + b.solmix), one_sided);
        let mix = |x: T, y: T| w * x + (T::one() - w) * y;
        // Two time constants mix; otherwise each number is the smaller (MuJoCo's direct form).
        let both_timed = a.solref.is_time_constant() & b.solref.is_time_constant();
        let [(a0, a1), (b0, b1)] = [(a.solref.0[0], a.solref.0[1]), (b.solref.0[0], b.solref.0[1])];
        let smaller = SolRef::from_mjcf([a0.min(b0), a1.min(b1)]);
        let solref = SolRef([
            T::select(both_timed, mix(a0, b0), smaller.0[0]),
            T::select(both_timed, mix(a1, b1), smaller.0[1]),
        ]);
        let (i, j) = (a.solimp, b.solimp);
        let solimp = SolImp {
            dmin: mix(i.dmin, j.dmin),
            dmax: mix(i.dmax, j.dmax),
            width: mix(i.width, j.width),
            midpoint: mix(i.midpoint, j.midpoint),
            power: mix(i.power, j.power),
        };
        Material { solref, solimp, ..*a }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impedance_follows_mujoco() {
        let s = SolImp::default();
        assert_eq!(s.impedance(0.0), 0.9);
        assert_eq!(s.impedance(0.002), 0.95);
        assert!((s.impedance(0.0005) - 0.925).abs() < 1e-15);
        let flat = SolImp { width: 0.0, ..s };
        for solimp in [s, flat, SolImp { dmin: 0.0, ..s }, SolImp { dmin: 1.0, ..s }] {
            assert_eq!(solimp.at_zero(), solimp.impedance(0.0), "{solimp:?}");
        }
        // C¹ at the surface and zero at the edge of the margin.
        let m = Material::default();
        assert!((m.impedance_at(-1e-12) - m.impedance_at(1e-12)).abs() < 1e-9);
        assert_eq!(m.impedance_at(-m.margin), 0.0);
    }

    /// The impedance's slope in dual numbers, against central differences, on both sides of
    /// the surface (the margin's taper and solimp's curve).
    #[cfg(feature = "num-dual")]
    #[test]
    fn impedance_slope_is_exact() {
        use crate::scalar::Arithmetic;
        use num_dual::Dual64;
        let m = Material::default();
        let dual = m.map(Dual64::from_f64);
        for depth in [-0.0009, -0.0005, -0.0001, 0.0001, 0.0003, 0.0007, 0.0009] {
            let h = 1e-9;
            let fd = (m.impedance_at(depth + h) - m.impedance_at(depth - h)) / (2.0 * h);
            let exact = dual.impedance_at(Dual64::new(depth, 1.0)).eps;
            assert!((fd - exact).abs() < 1e-5 * (1.0 + fd.abs()), "{depth}: {fd} vs {exact}");
        }
    }

    #[test]
    fn combine_is_commutative() {
        let (a, b) = (Material::rubber(), Material::ice());
        assert_eq!(Material::combine(&a, &b), Material::combine(&b, &a));
        let c = Material::combine(&a, &b);
        assert_eq!((c.friction, c.restitution), (1.2, 0.3));
        let mixed = Material { solref: SolRef::direct(1e4, 100.0), ..Material::steel() };
        assert_eq!(Material::combine(&mixed, &a), Material::combine(&a, &mixed));
    }
}
